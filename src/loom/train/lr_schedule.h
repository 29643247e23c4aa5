// Learning-rate schedule: linear warmup from 0 to lr over warmup_steps, then cosine decay to
// min_lr at the last step. Step numbers start at 0.
#pragma once

#include <cstdint>

namespace loom::train {

double LearningRate(int64_t step, int64_t total_steps, int64_t warmup_steps, double lr,
                    double min_lr);

}  // namespace loom::train
