// Whole-checkpoint operations behind `loom ckpt`: compare two checkpoints, import safetensors,
// and summarise per-stage save telemetry across ranks.
// Thread-safety: reentrant functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/ckpt/loader.h"

namespace loom::ckpt {

struct TensorDiff {
  std::string name;
  std::string problem;  // "only in A", "only in B", "dtype", "shape", "values", or ""
  double max_abs_diff = 0;
  int64_t differing = 0;  // elements
};

// Compares every tensor of `a` and `b` (one tensor in memory at a time); objects are compared
// byte for byte under the names "object:<key>" (replicated copies only). Element values are
// compared as doubles; `atol` 0 means bit-exact for floats.
Result<std::vector<TensorDiff>> CompareCheckpoints(Storage& storage, const CheckpointSource& a,
                                                   const CheckpointSource& b, double atol,
                                                   bool objects = true);

// Writes every tensor of `src` (e.g. a safetensors file) as a loom checkpoint step under `root`.
// The save snapshots all tensors at once, so peak memory is twice their total size. Returns
// the step directory.
Result<std::string> ImportAsCheckpoint(Storage& storage, const CheckpointSource& src,
                                       const std::string& root, int64_t step);

struct StageSummary {
  int64_t step = 0;
  std::string stage;
  int ranks = 0;
  double min_s = 0, median_s = 0, max_s = 0;
  std::vector<int> slow_ranks;  // above median + max(3 * MAD, 10% of median, 5 ms)
  int64_t bytes = 0;            // all ranks
};

// Reads <root>/telemetry/r*.jsonl (written by Checkpointer) and summarises each (step, stage).
Result<std::vector<StageSummary>> SummarizeTelemetry(const std::string& root);

}  // namespace loom::ckpt
