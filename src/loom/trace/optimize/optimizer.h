// Strategy search on the replayer (dPRO §optimizer, spec §6.4): which bucket boundaries, which
// codec per bucket and whether to overlap communication with backward minimise the replayed
// iteration time of a traced run.
//
//   OptimizeOptions o;
//   o.space.codecs = {"none", "fp16", "int4"};
//   LOOM_ASSIGN_OR_RETURN(SearchResult r, Optimize(base_spec, o));
//   r.base_ns; r.predicted_ns; r.best.Describe(base_spec); r.replays;
//   LOOM_ASSIGN_OR_RETURN(double ns, PredictStrategy(base_spec, some_strategy));
//
// State: a Strategy = contiguous buckets over ModelSpec::grads (backward order) x one codec per
// bucket x overlap on/off. Search: simulated annealing. Each step replays the current strategy,
// takes the buckets whose Sync/SEND/RECV/COMPRESS/DECOMPRESS nodes lie on the replay's critical
// path (all buckets when none do, e.g. a compute-bound run), picks one weighted by its time on
// the path, and applies one move to it: fuse with the next or previous bucket, split it in two
// (split point ~ N((n-1)/2, (n-1)/4) as dPRO), shift one gradient across a boundary, change its
// codec, or toggle overlap. Cost = replayed iteration time. Metropolis acceptance
// p = exp(-(C_new - C_cur) / (C_base · T_k)) with a geometric schedule T_k = T0 · γ^k from
// t0 down to t_final over max_replays steps. Replays are memoised by strategy, so `replays`
// counts distinct strategies replayed. The best strategy seen is returned; the base strategy
// (the spec's own buckets/codecs/overlap, which keeps its measured per-bucket Sync times) is
// the start and the fallback, so predicted_ns <= base_ns always.
//
// Determinism: identical for identical (spec, options) while the replay budget (not the time
// budget) ends the search.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::optimize {

// One point of the search space.
struct Strategy {
  std::vector<int> bucket_begin{0};  // bucket b = grads[bucket_begin[b], bucket_begin[b+1])
  std::vector<std::string> codecs;   // one per bucket: "none", "fp16", "int8", "int4", ...
  bool overlap = true;

  int num_buckets() const { return static_cast<int>(bucket_begin.size()); }
  // The strategy a spec already runs (its buckets, codec names, overlap).
  static Strategy FromSpec(const dfg::ModelSpec& spec);
  // "3 buckets [24 MiB, 8 MiB, 1.5 MiB], codecs [int4, none, none], overlap on"
  std::string Describe(const dfg::ModelSpec& base) const;
  // Per-bucket gradient bytes under `base`'s gradients.
  std::vector<int64_t> BucketBytes(const dfg::ModelSpec& base) const;
  bool operator==(const Strategy& o) const = default;
};

// Codec cost models by name. Lookup order: this table, the base spec's own bucket codecs, then
// whatif::DefaultCodec (assumed costs).
struct CodecTable {
  std::vector<dfg::CodecModel> models;
  // Builds models for `names`: fitted from a `loom bench codecs --json` file when `bench_json`
  // is non-empty and has rows for the name (else whatif::DefaultCodec). Errors name the codec.
  static Result<CodecTable> Load(const std::vector<std::string>& names,
                                 const std::string& bench_json = "");
  const dfg::CodecModel* Find(const std::string& name) const;
};

// `base` rewritten to run `s`. Unchanged bucket boundaries keep the spec's measured per-bucket
// Sync/finish times; otherwise they fall back to the median ModelSpec::sync_ns (as
// whatif::RegroupBuckets). Errors: boundaries not strictly increasing from 0 inside grads, a
// codec count that does not match the buckets, an unknown codec.
Result<dfg::ModelSpec> ApplyStrategy(const dfg::ModelSpec& base, const Strategy& s,
                                     const CodecTable& codecs = {});
// Replayed iteration time (ns) of `base` under `s`.
Result<double> PredictStrategy(const dfg::ModelSpec& base, const Strategy& s,
                               const CodecTable& codecs = {},
                               const replay::ReplayOptions& replay_options = {});

struct SearchSpace {
  std::vector<std::string> codecs{"none"};  // per-bucket codec choices (default: none only)
  bool try_overlap_off = true;              // let the search turn overlap off (default true)
  bool fuse = true;                         // change bucket boundaries (default true)
};

struct OptimizeOptions {
  SearchSpace space;
  CodecTable codec_models;                // costs for space.codecs (default: DefaultCodec)
  uint64_t seed = 1;                      // RNG seed (default 1)
  int max_replays = 400;                  // distinct strategies replayed (default 400)
  int max_steps = 0;                      // annealing steps (0: 4 x max_replays)
  double time_budget_s = 60;              // wall-clock cap (default 60 s)
  double t0 = 0.02;                       // initial temperature, fraction of base cost
  double t_final = 1e-4;                  // final temperature (geometric schedule)
  bool critical_path_moves = true;        // pick the moved bucket by its time on the critical
                                          // path (default); else uniformly
  double explore = 0.1;                   // chance a move picks a bucket uniformly anyway
  bool seed_with_fusion_dp = false;       // also start from the exact fusion DP's buckets
  replay::ReplayOptions replay_options;
};

struct AcceptedMove {
  int step = 0;       // annealing step
  std::string move;   // "fuse 3+4", "split 2 at 17", "codec 1 -> int4", "overlap off", ...
  double cost_ns = 0; // replayed iteration time after the move
  bool improved_best = false;
};

struct SearchResult {
  Strategy base;            // Strategy::FromSpec(base spec)
  Strategy best;
  double base_ns = 0;       // replayed iteration time of the base spec
  double predicted_ns = 0;  // replayed iteration time of `best` (<= base_ns)
  int replays = 0;          // distinct strategies replayed (including the base)
  int steps = 0;            // annealing steps taken
  double search_seconds = 0;
  std::vector<AcceptedMove> accepted;  // every accepted move, in order
  double speedup() const { return predicted_ns > 0 ? base_ns / predicted_ns : 0; }
};

Result<SearchResult> Optimize(const dfg::ModelSpec& base, const OptimizeOptions& options = {});

}  // namespace loom::trace::optimize
