// Compression planning for `loom train compress.plan=auto|FILE` (ByteComp/Espresso, through
// src/loom/compress/planner).
//
//   auto: after compress.warmup_steps uncompressed steps, every rank measures on this host
//     - each candidate codec's encode and decode-add time at two sizes (a + b n, least squares),
//     - the link: all-reduce time at 4 KiB and 4 MiB (alpha + beta bytes per phase),
//     - the last warm-up step's bucket ready times (from GradReducer's profile),
//   takes the maximum over ranks (the slowest rank sets the pace), and rank 0 plans with the
//   candidates placed on the communication thread (how GradReducer runs them) and broadcasts the
//   plan, which is written to <run_dir>/compress_plan.json. A plan predicting less than 3% gain
//   over uncompressed is replaced by all-uncompressed (compression would not pay).
//   FILE: a plan from an earlier run (or written by hand) is loaded and checked against this
//   run's buckets and world size.
// The result is one codec spec per gradient bucket ("none" = full precision).
// Thread-safety: call from the training thread while no step is in flight (uses the communicator).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/comm/communicator.h"
#include "loom/compress/planner/cost_model.h"
#include "loom/compress/planner/plan_json.h"
#include "loom/compress/codec.h"
#include "loom/nn/param_layout.h"
#include "loom/train/train_config.h"

namespace loom::train {

// Measures the codecs in `candidates` ("none" is added) and the link, max over ranks.
Result<compress::planner::CostModel> MeasureCostModel(comm::Communicator& comm,
                                                      const std::vector<std::string>& candidates,
                                                      bool reduce_scatter);

// The buckets as planner tensors: names, sizes and ready times (-1 = ready at `backward_end_s`),
// max over ranks.
Result<compress::planner::BackwardProfile> AgreeOnProfile(comm::Communicator& comm,
                                                          const nn::FlatLayout& layout,
                                                          std::vector<double> ready_s,
                                                          double backward_end_s);

// Rank 0 plans; every rank returns the same plan.
Result<compress::planner::CompressionPlan> PlanAndBroadcast(
    comm::Communicator& comm, const compress::planner::BackwardProfile& profile,
    const compress::planner::CostModel& model);

// "bucket 3" names used in plans (stable across runs with the same layout).
std::string PlanTensorName(int bucket);

class GradReducer;

// The trainer's side: applies compress.plan to the GradReducer.
class BucketPlanner {
 public:
  // `log`: rank 0's output stream (nullptr on other ranks).
  BucketPlanner(const TrainConfig& cfg, comm::Communicator* comm, const nn::FlatLayout* layout,
                std::string run_dir, std::ostream* log);
  ~BucketPlanner();
  bool enabled() const { return !cfg_.compress.plan.empty(); }
  // compress.plan=FILE: loads, checks and applies the plan.
  Status Start(GradReducer& reducer);
  // compress.plan=auto: after the last warm-up step (0-based step warmup_steps - 1), measures,
  // plans, writes <run_dir>/compress_plan.json and applies the plan.
  Status AfterStep(int64_t step, GradReducer& reducer);

 private:
  Status Apply(const compress::planner::CompressionPlan& plan, GradReducer& reducer);

  const TrainConfig& cfg_;
  comm::Communicator* comm_;
  const nn::FlatLayout* layout_;
  std::string run_dir_;
  std::ostream* log_;
  std::vector<std::unique_ptr<compress::Codec>> codecs_;  // the plan's, one per bucket or null
};

}  // namespace loom::train
