// ModelSpec: a compact description of one data-parallel training iteration (per-rank compute,
// gradients in backward order, their buckets, the ring collective, the link model, gaps and the
// compute slowdown κ) from which the global DFG is built. It is what the trace builder fits and
// what the what-if passes rewrite; tests and what-ifs without traces write one by hand.
//
//   ModelSpec s = ...;                          // or BuildModelFromTraces(...).spec
//   LOOM_ASSIGN_OR_RETURN(Graph g, BuildGraph(s));
//
// Graph built (dPRO §1.2), per rank r:
//   pre[0] -> pre[1] -> ... -> BW[0] -> ... -> BW[n-1] [-> BW.tail] (rank.compute, serial)
//   BW[last gradient of bucket b] -> Sync_b (gap bw_to_sync_gap_ns) (rank.comm, serial)
//   Sync_b of every rank -> [COMPRESS_b] -> SEND_b[0];  RECV_b[s-1] -> SEND_b[s] (step_gap_ns)
//   SEND_b,r[s] -> RECV_b,r+1[s];  RECV_b[last] -> [DECOMPRESS_b] -> UPDATE (comm_to_update_gap)
//   serial_collectives: RECV_b[last] -> Sync_{b+1} (one collective at a time, as loom's reducer)
//   overlap off: the last BW node -> Sync_b for every b
//   UPDATE -> [update collectives: Sync, SEND/RECV ring on rank.compute] -> STEP_END (tail_ns)
// A ring step's SEND carries bucket_bytes/N (x codec ratio) over the rank's egress link
// (LinkTopology) priced α·segments + bytes/β, or through the link's token bucket when
// burst_bytes > 0 (kPerSender only); the RECV costs recv_ns + bytes·recv_ns_per_byte
// (the reduction).
//
// Thread-safety: value types and a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/dfg.h"

namespace loom::trace::dfg {

struct ComputeOp {
  std::string name;                    // "forward", "dataloader", ...
  NodeKind kind = NodeKind::kForward;  // FW or OTHER
  double dur_ns = 0;
  double gap_after_ns = 0;  // idle time before the next op starts
};

struct RankModel {
  double head_ns = 0;           // step start -> first op
  std::vector<ComputeOp> pre;   // main-thread ops before the (last) backward, in order
  std::vector<double> bw_ns;    // per gradient piece, backward order (ModelSpec::grads)
  double bw_gap_ns = 0;         // idle time between consecutive backward pieces
  double pre_to_bw_gap_ns = 0;  // last pre op -> first backward piece
  double bw_tail_ns = 0;        // backward after the last gradient is ready (a BW node "tail",
                                // 0 bytes, after the pieces; 0: none)
  double update_ns = 0;
  double bw_to_update_gap_ns = 0;  // backward end -> update (when comm is not in the way)
  double tail_ns = 0;              // update end -> step end (logging, checkpoint, ...)
  double compute_ratio = 1.0;      // dPRO delay ratio on this rank's compute (straggler)
  // Measured per-collective Sync time on this rank (collective start -> first SEND): one per
  // bucket / per update collective, or empty for ModelSpec::sync_ns.
  // This rank's egress link when it differs from ModelSpec::alpha_ns / ns_per_byte (kPerSender
  // only; < 0: the spec's).
  double egress_alpha_ns = -1;
  double egress_ns_per_byte = -1;
  double egress_burst_bytes = -1;       // token bucket (< 0: the spec's burst_bytes)
  double egress_line_ns_per_byte = -1;  // (< 0: the spec's line_ns_per_byte)
  std::vector<double> bucket_sync_ns;
  std::vector<double> update_sync_ns;
  // Measured per-collective finish time on this rank (last RECV end -> collective end: waiting
  // for its own sends to complete); an edge gap after the collective. Empty: 0.
  std::vector<double> bucket_finish_ns;
  std::vector<double> update_finish_ns;
  static double At(const std::vector<double>& v, size_t i) { return i < v.size() ? v[i] : 0; }
  double BucketSync(int b, double fallback) const {
    return b < static_cast<int>(bucket_sync_ns.size()) ? bucket_sync_ns[b] : fallback;
  }
  double UpdateSync(int u, double fallback) const {
    return u < static_cast<int>(update_sync_ns.size()) ? update_sync_ns[u] : fallback;
  }
};

struct GradientPiece {
  std::string name;   // tensor name, or "bucket3.part1" when the trace has no tensor list
  int64_t bytes = 0;  // gradient bytes (fp32 on the wire unless compressed)
};

// A codec applied to one bucket: wire bytes x ratio, encode/decode a + b·elements on rank.comm.
struct CodecModel {
  std::string name = "none";
  double ratio = 1.0;  // compressed bytes / uncompressed bytes
  double encode_a_ns = 0;
  double encode_ns_per_elem = 0;
  double decode_a_ns = 0;
  double decode_ns_per_elem = 0;
  bool enabled() const { return name != "none"; }
};

enum class CollectiveKind : uint8_t {
  kAllReduce,      // ring: 2(N-1) steps (reduce-scatter then all-gather)
  kReduceScatter,  // ring: N-1 steps (ZeRO-1)
  kAllGather,      // ring: N-1 steps
};
std::string_view CollectiveKindName(CollectiveKind kind);

// A collective the main thread runs inside the optimizer step (ZeRO-1's parameter all-gather, a
// gradient-norm all-reduce): a ring on the ranks' compute devices after UPDATE's compute.
struct UpdateCollective {
  int64_t bytes = 0;
  CollectiveKind kind = CollectiveKind::kAllGather;
};
int RingStepsFor(CollectiveKind kind, int world);

enum class LinkTopology : uint8_t {
  kPerSender,  // each rank's egress is its own link, no sharing (veth + tbf per direction)
  kShared,     // every flow crosses one bottleneck (tbf on lo): m flows get β/m each
};

struct ModelSpec {
  int world_size = 1;
  std::vector<RankModel> ranks;          // world_size entries
  std::vector<GradientPiece> grads;      // backward order
  std::vector<int> bucket_begin{0};      // bucket b = grads[bucket_begin[b], bucket_begin[b+1])
  std::vector<CodecModel> bucket_codec;  // empty = none for all; else one per bucket
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::vector<UpdateCollective> update_collectives;  // in order, after UPDATE (default none)
  LinkTopology topology = LinkTopology::kPerSender;
  double alpha_ns = 50'000;          // per message latency (default 50 µs)
  double ns_per_byte = 1.0;          // 1/β (default 1 ns/B = 1 GB/s); token rate when burst
  double burst_bytes = 0;            // > 0: per-sender links are token buckets (Link; default 0)
  double line_ns_per_byte = 0;       // token bucket: ns/B while tokens last (default 0)
  int64_t segment_bytes = 0;         // pipelined segments per ring step (0: one message)
  double sync_ns = 0;                // Sync node: comm-thread setup per collective (default
                                     // for RankModel::bucket_sync_ns / update_sync_ns)
  double bw_to_sync_gap_ns = 0;      // gradient ready -> Sync
  double step_gap_ns = 0;            // RECV[s-1] end -> SEND[s] start
  double recv_ns = 0;                // RECV fixed cost
  double recv_ns_per_byte = 0;       // RECV cost per byte (the reduction)
  double comm_to_update_gap_ns = 0;  // last RECV -> UPDATE
  double kappa = 1.0;                // compute slowdown while comm runs (>= 1)
  bool overlap = true;               // false: comm starts after the whole backward
  bool serial_collectives = true;    // one bucket's collective at a time per rank

  int num_buckets() const { return static_cast<int>(bucket_begin.size()); }
  int64_t BucketBytes(int b) const;
  int64_t TotalGradBytes() const;
  int RingSteps() const;  // per collective, for world_size
  Status Validate() const;
};

// Builds the DFG described above (validated; Finalize() done).
Result<Graph> BuildGraph(const ModelSpec& spec);

// A spec with `world` identical ranks: `fw_ns` forward ops, backward pieces `bw_ns` with
// `grad_bytes` each, bucketed by `bucket_bytes` (see Regroup in whatif), update `update_ns`.
ModelSpec SyntheticSpec(int world, const std::vector<double>& fw_ns,
                        const std::vector<double>& bw_ns, const std::vector<int64_t>& grad_bytes,
                        double update_ns, int64_t bucket_bytes);

// Contiguous buckets in backward order, each <= max_bytes (a single larger gradient is a bucket
// of its own): returns bucket_begin. max_bytes <= 0: one bucket.
std::vector<int> BucketsByBytes(const std::vector<GradientPiece>& grads, int64_t max_bytes);

}  // namespace loom::trace::dfg
