// What-if passes (dPRO §6.3 of the spec): each rewrites the iteration model and re-replays it.
//
//   WhatIf w;
//   w.bandwidth_scale = 0.5;          // β × 0.5
//   w.bucket_bytes = 8 << 20;         // regroup gradients into <= 8 MiB buckets
//   LOOM_ASSIGN_OR_RETURN(WhatIfResult r, RunWhatIf(base_spec, w));
//   r.base.iteration_ns; r.predicted.iteration_ns;
//
// Passes (applied in this order by ApplyWhatIf):
//   world size N′    ranks are replicated cyclically from the measured ones; the ring has 2(N′−1)
//                    steps (allreduce) of bucket/N′ bytes. Extrapolated: label it so.
//   bucket size B    gradients regrouped in backward order into contiguous buckets <= B; Sync,
//                    SEND/RECV rebuilt and chunks priced α·segments + bytes/β. Total bytes kept;
//                    per-bucket measured Sync times give way to the median ModelSpec::sync_ns.
//   compression      per bucket (all, or a list): wire bytes × ratio, plus COMPRESS/DECOMPRESS
//                    nodes on rank.comm costing a + b·elements (CodecModel). With
//                    compress_min_elements > 0, buckets of fewer fp32 gradient elements stay
//                    uncompressed, as the trainer's `compress.min_elements` sends them.
//   bandwidth × k    β → kβ (ns_per_byte / k); α unchanged. A token-bucket link (burst_bytes > 0)
//                    scales its token rate; its burst (tbf's configured bytes) and line rate stay,
//                    so a faster link refills the same burst sooner.
//   link shape       every per-sender link replaced by a tbf-shaped one: token rate, burst and
//                    line rate given (LinkShape; the ranks' own egress fits are dropped, α kept);
//                    burst 0: a plain link at that rate. Applied after bandwidth × k and the cap.
//   overlap off      edge last BW → every Sync on every rank.
//   straggler r × f  dPRO delay ratio: every compute node of rank r (pre, BW, UPDATE) takes ×f.
// Graph-level versions of the last three (ScaleBandwidth, DisableOverlap, SetStraggler on a
// dfg::Graph) give the same results and are what the tests compare against.
//
// Codec costs: DefaultCodec() documents assumed defaults; CodecFromBenchJson() fits a + b·n to
// `loom bench codecs --json` results (encode_gbs / decode_gbs per element count).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/dfg.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/replay/baselines.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::whatif {

// A link as `tc tbf rate R burst B` configures it on a veth pair whose own payload rate is L:
// tokens at rate_bytes_per_s, up to burst_bytes sent at line_bytes_per_s. burst_bytes 0: a plain
// α-β link at rate_bytes_per_s (line rate unused). alpha_ns >= 0: the links' per-message latency
// too (the target link's own α, e.g. probed on an unshaped veth); < 0: keep the profile's.
struct LinkShape {
  double rate_bytes_per_s = 0;
  double burst_bytes = 0;
  double line_bytes_per_s = 0;
  double alpha_ns = -1;
};

struct WhatIf {
  double bandwidth_scale = 1.0;                    // β × k (default 1: unchanged)
  // > 0: after scaling no link is faster than this many bytes/s (a tbf-shaped target delivers
  // at most its TCP goodput, however fast the profile's links looked; default 0: no cap)
  double bandwidth_cap_bytes_per_s = 0;
  std::optional<LinkShape> link_shape;             // set: every link shaped so (see above)
  int64_t bucket_bytes = 0;                        // > 0: regroup into buckets <= this
  std::optional<bool> overlap;                     // unset: keep
  std::vector<std::pair<int, double>> stragglers;  // (rank, ratio f)
  int world_size = 0;                              // > 0: extrapolate to this many ranks
  std::optional<dfg::CodecModel> compression;      // set: compress buckets (see below)
  std::vector<int> compress_buckets;               // empty: every bucket (after regrouping)
  int64_t compress_min_elements = 0;  // > 0: smaller buckets stay uncompressed (trainer bypass)
  // "bandwidth x0.5, bucket 8 MiB, overlap off"
  std::string Describe() const;
};

// Spec passes.
Status ScaleBandwidth(dfg::ModelSpec* spec, double k);
// Every link (common, egress, token-bucket line rate) at most `bytes_per_s` fast.
Status CapBandwidth(dfg::ModelSpec* spec, double bytes_per_s);
// kFailedPrecondition for a shared-bottleneck topology (token buckets are per sender);
// kInvalidArgument for a non-positive rate, or a burst without a line rate above the token rate.
Status ShapeLinks(dfg::ModelSpec* spec, const LinkShape& shape);
// The link passes of `w` (bandwidth × k, cap, shape) in ApplyWhatIf's order.
Status ApplyLinkWhatIf(dfg::ModelSpec* spec, const WhatIf& w);
Status RegroupBuckets(dfg::ModelSpec* spec, int64_t max_bytes);
// ZeRO-1 gathers the updated parameters bucket by bucket (train/dp_optimizer.cc), after the
// gradient-norm all-reduce. When `spec`'s buckets differ from `old_bucket_begin` and its update
// collectives hold one contiguous run of all-gathers, one per old bucket, the run becomes one
// all-gather per new bucket: bytes in the same proportion to the bucket's gradient bytes as
// before, each rank's mean Sync cost of the run, no measured finish time. Update collectives of
// any other shape, and unchanged buckets, are left as they were. (RegroupBuckets calls it.)
void RegroupPerBucketGathers(dfg::ModelSpec* spec, const std::vector<int>& old_bucket_begin);
void SetOverlap(dfg::ModelSpec* spec, bool on);
Status SetStraggler(dfg::ModelSpec* spec, int rank, double ratio);
Status SetWorldSize(dfg::ModelSpec* spec, int world);
Status SetCompression(dfg::ModelSpec* spec, const dfg::CodecModel& codec,
                      const std::vector<int>& buckets);
// Buckets under `min_elements` fp32 gradient elements (bytes / 4) lose their codec; returns how
// many did. min_elements <= 0: nothing changes.
int ExemptSmallBuckets(dfg::ModelSpec* spec, int64_t min_elements);
Result<dfg::ModelSpec> ApplyWhatIf(const dfg::ModelSpec& base, const WhatIf& w);

// Graph passes (same semantics, on a built graph; the graph is re-finalized).
Status ScaleBandwidth(dfg::Graph* graph, double k);
Status DisableOverlap(dfg::Graph* graph);
Status SetStraggler(dfg::Graph* graph, int rank, double ratio);

struct WhatIfResult {
  dfg::ModelSpec spec;  // the rewritten model
  dfg::Graph base_graph, graph;
  replay::ReplayResult base, predicted;
  replay::AnalyticalEstimate base_analytical, analytical;
  double speedup() const {
    return predicted.iteration_ns > 0 ? base.iteration_ns / predicted.iteration_ns : 0;
  }
};
Result<WhatIfResult> RunWhatIf(const dfg::ModelSpec& base, const WhatIf& w,
                               const replay::ReplayOptions& options = {});

// Codecs: "none", "fp16" (ratio 0.5), "int8" (8.25/32: int8 + one fp32 scale per 128),
// "int4" (4.25/32). Assumed costs (not measured; pass a bench JSON for measured ones):
// encode 2 µs + 0.5 ns/element, decode 2 µs + 0.25 ns/element for int8/int4; fp16 1 µs +
// 0.25 ns/element each way. `ratio` > 0 overrides the wire ratio.
Result<dfg::CodecModel> DefaultCodec(const std::string& name, double ratio = 0);
// Fits encode/decode a + b·n (ns, n elements) to the rows of a `loom bench codecs --json` file
// whose codec spec starts with `name` ("int4" matches "int4:g128:stochastic"); the ratio is
// bits_per_element / 32 unless `ratio` > 0. Errors name the file.
Result<dfg::CodecModel> CodecFromBenchJson(const std::string& path, const std::string& name,
                                           double ratio = 0);

}  // namespace loom::trace::whatif
