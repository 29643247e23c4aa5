// RunTraining: data-parallel training of the reference GPT, the body of `loom train` on each
// rank. loom's own code moves the gradients: flat buckets reduced while backward runs
// (GradReducer), ZeRO-1 or all-reduce data parallelism (DataParallelOptimizer), bf16 GEMMs with
// fp32 master weights and fp32 reductions, clipping, warmup + cosine LR, gradient accumulation,
// periodic eval, deterministic seeding, per-step loss/tokens/s/MFU. Rank 0 prints progress and
// writes the run directory (config.json, metrics.jsonl, report.html); checkpoints go to
// <run_dir>/ckpt (or ckpt.dir) and `resume=` continues from one with any world size.
// Thread-safety: one call per process; owns the communicator while it runs.
#pragma once

#include <iosfwd>
#include <string>

#include "loom/comm/communicator.h"
#include "loom/comm/world.h"
#include "loom/train/checkpoint_hook.h"
#include "loom/train/train_config.h"

namespace loom::train {

struct TrainSummary {
  std::string run_dir;
  int64_t steps = 0;
  double first_loss = 0;
  double final_loss = 0;       // mean train loss of the last logged window
  double final_eval_loss = 0;
  double tokens_per_s = 0;     // median over steps after the first 3, all ranks together
  double mfu = 0;              // at that throughput
  double peak_flops = 0;       // per rank, the MFU denominator
  std::string sample;
  std::string compressed_traffic;  // rank 0's compressed bytes vs fp32, empty if uncompressed
};

// `hook` == nullptr: checkpointing follows the config (ckpt.every, resume) through
// TrainCheckpointer; tests may pass their own hook.
Result<TrainSummary> RunTraining(const TrainConfig& config, comm::Communicator& comm,
                                 const comm::WorldInfo& world, CheckpointHook* hook,
                                 std::ostream& out);

}  // namespace loom::train
