// The unshaped link's capacity for `loom bench replay`, measured instead of assumed. Before the
// grid runs, the bench times loom's own reduce-scatter and all-gather between the two namespaces
// with no tbf, at the trainer's gradient size and at 1/16 of it (`loom bench collectives --json`,
// the same Gloo TCP pairs and ring the trainer uses, under the same scheduling policy). On a small
// shared host that veth pair is not a 10 Gbit/s link: every byte is copied by the kernel on both
// ends and every ring step wakes a thread, so a 1 MiB reduce-scatter ran at 0.14-0.3 GB/s of
// payload here under the default policy and 0.7-0.9 GB/s under SCHED_BATCH (loom train's
// default). The what-if of an "unshaped" configuration uses the fitted rate
// (BandwidthModel::unshaped_bits_per_s) as its bandwidth and the fitted per-segment latency
// (unshaped_alpha_ns) as its α.
//
//   LOOM_ASSIGN_OR_RETURN(LinkProbe p, ReadLinkProbe("probe.json"));
//   VethLinkFit f = FitVethLink(p, profile_spec);
//   bw.unshaped_bits_per_s = 8 * f.bytes_per_s;
//   bw.unshaped_alpha_ns = f.alpha_ns;
//
// Thread-safety: a pure function (reads one file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/model_spec.h"

namespace loom::trace::evaluation {

struct LinkProbeOp {
  std::string op;                  // "reduce_scatter" or "allgather"
  int64_t bytes = 0;               // the collective's size
  double wire_bytes_per_rank = 0;  // payload each rank sends per call
  double time_us = 0;              // loom's median time per call
};

struct LinkProbe {
  std::vector<LinkProbeOp> ops;      // at the largest size of the file
  std::vector<LinkProbeOp> all_ops;  // every reduce_scatter / allgather row, all sizes
  double goodput_bytes_per_s = 0;    // Σ wire bytes / Σ time over `ops`
};

// The veth rate (bytes/s) that makes the replay's price of the probe's ring steps equal the
// measured time: each op at 2 ranks is one ring step of `wire_bytes_per_rank` bytes, which the
// model prices sync_ns + segments·α + bytes/β + recv_ns + bytes·recv_ns_per_byte, so
// β = Σ bytes / Σ (time − the rest). Without it the model would charge the probe's per-segment
// latency twice (once in the goodput, once as α). The remainder is floored at a quarter of the
// measured time (β at most 4× the raw goodput) for a profile whose latencies alone exceed it.
double ModelVethRate(const LinkProbe& probe, const dfg::ModelSpec& spec);

// The veth's own per-segment latency and rate, priced the way the replay prices a ring step.
// The α the profile fitted belongs to the profiled (tbf-shaped) link: there it includes the token
// bucket's queueing, and charging it per segment on the unshaped veth over-predicts every
// many-segment configuration. With probe rows at two or more sizes, (α, 1/β) are the least-squares
// solution of  time − (sync_ns + recv_ns + bytes·recv_ns_per_byte) = segments·α + bytes/β  over
// `all_ops`; a negative α is clamped to 0 (β refitted). With one size, or no positive rate from
// the fit, alpha_ns stays < 0 (keep the profile's α) and the rate is ModelVethRate's.
struct VethLinkFit {
  double alpha_ns = -1;    // >= 0: fitted per-segment latency; < 0: not identified
  double bytes_per_s = 0;  // payload rate net of the model's other costs
  int sizes = 0;           // distinct probe sizes used
};
VethLinkFit FitVethLink(const LinkProbe& probe, const dfg::ModelSpec& spec);

// Reads a `loom bench collectives --json` document: loom's arm of every reduce_scatter and
// allgather row (`all_ops`), and those at the file's largest size (`ops`). kDataLoss naming the file when it is not such a
// document or has neither op; kInvalidArgument when a row has a non-positive time.
Result<LinkProbe> ReadLinkProbe(const std::string& path);

}  // namespace loom::trace::evaluation
