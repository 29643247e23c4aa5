#include "loom/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace loom::train {

double LearningRate(int64_t step, int64_t total_steps, int64_t warmup_steps, double lr,
                    double min_lr) {
  if (step < warmup_steps) return lr * static_cast<double>(step + 1) / warmup_steps;
  int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps - 1);
  double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / decay_steps);
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace loom::train
