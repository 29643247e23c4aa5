// The unshaped link's capacity for `loom bench replay`, measured instead of assumed. Before the
// grid runs, the bench times loom's own reduce-scatter and all-gather of the trainer's gradient
// size between the two namespaces with no tbf (`loom bench collectives --json`, the same Gloo
// TCP pairs and ring the trainer uses, under the same scheduling policy). On a small shared host
// that veth pair is not a 10 Gbit/s link: every byte is copied by the kernel on both ends and every
// ring step wakes a thread, so a 1 MiB reduce-scatter ran at 0.14-0.3 GB/s of payload here under
// the default policy and 0.7-0.9 GB/s under SCHED_BATCH (loom train's default). The what-if of an
// "unshaped"
// configuration uses this goodput (BandwidthModel::unshaped_bits_per_s) as its bandwidth and cap.
//
//   LOOM_ASSIGN_OR_RETURN(LinkProbe p, ReadLinkProbe("probe.json"));
//   bw.unshaped_bits_per_s = 8 * p.goodput_bytes_per_s;
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
  std::vector<LinkProbeOp> ops;     // at the largest size of the file
  double goodput_bytes_per_s = 0;   // Σ wire bytes / Σ time over `ops`
};

// The veth rate (bytes/s) that makes the replay's price of the probe's ring steps equal the
// measured time: each op at 2 ranks is one ring step of `wire_bytes_per_rank` bytes, which the
// model prices sync_ns + segments·α + bytes/β + recv_ns + bytes·recv_ns_per_byte, so
// β = Σ bytes / Σ (time − the rest). Without it the model would charge the probe's per-segment
// latency twice (once in the goodput, once as α). The remainder is floored at a quarter of the
// measured time (β at most 4× the raw goodput) for a profile whose latencies alone exceed it.
double ModelVethRate(const LinkProbe& probe, const dfg::ModelSpec& spec);

// Reads a `loom bench collectives --json` document: loom's arm of every reduce_scatter and
// allgather row at the file's largest size. kDataLoss naming the file when it is not such a
// document or has neither op; kInvalidArgument when a row has a non-positive time.
Result<LinkProbe> ReadLinkProbe(const std::string& path);

}  // namespace loom::trace::evaluation
