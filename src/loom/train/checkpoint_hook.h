// CheckpointHook: where the trainer hands its state to a checkpointing system. The trainer calls
// it on every rank at the same points (train_checkpointer.h is loom's implementation).
// Thread-safety: called from the training thread.
#pragma once

#include <cstdint>

#include "loom/base/status.h"
#include "loom/nn/param_layout.h"

namespace loom::train {

class DataParallelOptimizer;
struct TrainConfig;

struct TrainState {
  int64_t step = 0;             // optimizer steps completed
  float* params = nullptr;      // fp32 master parameters (flat, all ranks)
  int64_t num_params = 0;
  const nn::FlatLayout* layout = nullptr;
  DataParallelOptimizer* optimizer = nullptr;
  const TrainConfig* config = nullptr;
};

class CheckpointHook {
 public:
  virtual ~CheckpointHook() = default;
  // Before the first step, after the optimizer exists; may restore parameters and optimizer
  // state and return the step to resume from.
  virtual Result<int64_t> Restore(const TrainState& state) { return int64_t{0}; }
  // After each optimizer step.
  virtual Status AfterStep(const TrainState& state) { return OkStatus(); }
  // After the last step: wait for background saves.
  virtual Status Finish() { return OkStatus(); }
};

}  // namespace loom::train
