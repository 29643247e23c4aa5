// TrainCheckpointer: the trainer's CheckpointHook on loom's `ckpt` module.
//
// What a checkpoint holds, by parameter name (parallelism-agnostic, so any world size and
// dist.mode can resume it):
//   model.<param>              fp32 master weights
//   optim.exp_avg.<param>      AdamW first moment
//   optim.exp_avg_sq.<param>   AdamW second moment
//   object "trainer"           {"step", "world_size", "config"} (JSON, replicated)
// Each rank saves the flat ranges it updates (DataParallelOptimizer::owned_segments): under
// ZeRO-1 disjoint shards cut anywhere inside a parameter, saved with no communication; under
// all-reduce DP every rank holds everything and the planner spreads the writes over ranks.
// Resume loads full weights on every rank and the optimizer ranges of the new layout. The data
// sampler is keyed by step (text_dataset.h), so the step is the data position.
// Thread-safety: training thread only.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/ckpt/checkpointer.h"
#include "loom/ckpt/state_dict.h"
#include "loom/comm/communicator.h"
#include "loom/train/checkpoint_hook.h"
#include "loom/train/train_config.h"

namespace loom::train {

class TrainCheckpointer : public CheckpointHook {
 public:
  // `log` receives one line per save and on resume (rank 0 passes std::cout, others null).
  TrainCheckpointer(const TrainConfig& cfg, const std::string& run_dir, comm::Communicator* comm,
                    std::ostream* log);
  ~TrainCheckpointer() override;

  Result<int64_t> Restore(const TrainState& state) override;
  Status AfterStep(const TrainState& state) override;
  Status Finish() override;

  const std::string& dir() const { return dir_; }

 private:
  ckpt::StateDict SaveState(const TrainState& state) const;
  ckpt::StateDict LoadTargets(const TrainState& state) const;
  void ReportErrors();

  TrainConfig cfg_;
  comm::Communicator* comm_;
  std::ostream* log_;
  std::string dir_;
  std::string run_dir_;
  std::unique_ptr<ckpt::Storage> storage_;
  std::unique_ptr<ckpt::Checkpointer> ckpt_;
  int64_t saved_ = 0;
  int64_t failed_ = 0;        // saves that did not commit
  int64_t async_failed_ = 0;  // ... of which failed after Save returned
  bool reserved_ = false;
};

// The checkpoint `resume` names: "" when resume is empty, or "auto" and no checkpoint exists in
// ckpt.dir (default <run_dir>/ckpt) or ckpt.persist_dir; else a path.
Result<std::string> FindResumeCheckpoint(const TrainConfig& cfg, const std::string& run_dir);

// The training config stored in a checkpoint (for `loom train resume=...`), without the keys
// that belong to one run (run_dir, resume, ckpt.*).
Result<nlohmann::json> SavedTrainConfig(const std::string& checkpoint);

}  // namespace loom::train
