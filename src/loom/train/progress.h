// Progress: formats the one-line progress report of a training step (step, loss, eval loss,
// tokens/s, MFU, learning rate, seconds per step and ETA).
// Thread-safety: one owner.
#pragma once

#include <cstdint>
#include <string>

#include "loom/base/clock.h"
#include "loom/train/run_report.h"

namespace loom::train {

class Progress {
 public:
  Progress(int64_t total_steps, int64_t start_step) : total_(total_steps), start_(start_step) {}
  // "step  40/200 | loss 2.4172 | eval 2.3990 | 3,950 tok/s | MFU 47.2% | lr 9.8e-04 | ETA 2m41s"
  std::string Line(const MetricRow& row) const;

 private:
  int64_t total_;
  int64_t start_;
  Stopwatch clock_;
};

// "2m41s", "1h02m", "45s".
std::string FormatDuration(double seconds);
// "12,345".
std::string FormatThousands(double v);

}  // namespace loom::train
