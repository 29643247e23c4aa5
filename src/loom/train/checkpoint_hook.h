// CheckpointHook: where the trainer hands its state to a checkpointing system. The trainer calls
// it on every rank at the same points; the default does nothing (loom's `ckpt` module plugs in
// here when it lands).
// Thread-safety: called from the training thread.
#pragma once

#include <cstdint>

#include "loom/base/status.h"

namespace loom::train {

struct TrainState {
  int64_t step = 0;             // optimizer steps completed
  float* params = nullptr;      // fp32 master parameters (flat, all ranks)
  int64_t num_params = 0;
};

class CheckpointHook {
 public:
  virtual ~CheckpointHook() = default;
  // Before the first step; may restore parameters and return the step to resume from.
  virtual Result<int64_t> Restore(const TrainState& state) { return int64_t{0}; }
  // After each optimizer step.
  virtual Status AfterStep(const TrainState& state) { return OkStatus(); }
};

}  // namespace loom::train
