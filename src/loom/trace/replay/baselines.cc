#include "loom/trace/replay/baselines.h"

#include <algorithm>
#include <cmath>

namespace loom::trace::replay {

AnalyticalEstimate Analytical(const dfg::ModelSpec& spec) {
  AnalyticalEstimate a;
  const int first_bucket_end =
      spec.num_buckets() > 1 ? spec.bucket_begin[1] : static_cast<int>(spec.grads.size());
  for (const dfg::RankModel& m : spec.ranks) {
    double t = m.head_ns + m.tail_ns + m.update_ns * m.compute_ratio + m.bw_to_update_gap_ns +
               m.bw_tail_ns * m.compute_ratio;
    for (const dfg::ComputeOp& op : m.pre) t += op.dur_ns * m.compute_ratio + op.gap_after_ns;
    if (!m.pre.empty()) t += m.pre_to_bw_gap_ns - m.pre.back().gap_after_ns;
    double overlappable = 0;
    for (size_t i = 0; i < m.bw_ns.size(); ++i) {
      const double d = m.bw_ns[i] * m.compute_ratio + (i > 0 ? m.bw_gap_ns : 0);
      t += d;
      if (static_cast<int>(i) >= first_bucket_end) overlappable += d;
    }
    overlappable += m.bw_tail_ns * m.compute_ratio;
    if (t > a.compute_ns) {
      a.compute_ns = t;
      a.overlappable_ns = spec.overlap ? overlappable : 0;
    }
  }
  const int N = spec.world_size;
  const int steps = spec.RingSteps();
  for (int b = 0; b < spec.num_buckets(); ++b) {
    const double bytes = static_cast<double>(spec.BucketBytes(b));
    const dfg::CodecModel codec =
        spec.bucket_codec.empty() ? dfg::CodecModel{} : spec.bucket_codec[b];
    const double chunk = std::ceil(bytes * codec.ratio / N);
    const double segs =
        spec.segment_bytes > 0 ? std::max(1.0, std::ceil(chunk / spec.segment_bytes)) : 1.0;
    double t = spec.ranks[0].BucketSync(b, spec.sync_ns);
    if (codec.enabled()) {
      t += codec.encode_a_ns + codec.encode_ns_per_elem * bytes / 4 + codec.decode_a_ns +
           codec.decode_ns_per_elem * bytes / 4;
    }
    if (steps > 0) {
      t += steps * (segs * spec.alpha_ns + chunk * spec.ns_per_byte + spec.recv_ns +
                    spec.recv_ns_per_byte * chunk) +
           (steps - 1) * spec.step_gap_ns;
    }
    a.comm_ns += t;
  }
  for (size_t i = 0; i < spec.update_collectives.size(); ++i) {
    const dfg::UpdateCollective& u = spec.update_collectives[i];
    const int us = dfg::RingStepsFor(u.kind, N);
    const double chunk = std::ceil(static_cast<double>(u.bytes) / N);
    a.comm_ns += spec.ranks[0].UpdateSync(static_cast<int>(i), spec.sync_ns);
    if (us > 0) {
      a.comm_ns += us * (spec.alpha_ns + chunk * spec.ns_per_byte + spec.recv_ns +
                         spec.recv_ns_per_byte * chunk) +
                   (us - 1) * spec.step_gap_ns;
    }
  }
  a.sum_ns = a.compute_ns + a.comm_ns;
  a.overlap_ns = a.compute_ns + std::max(0.0, a.comm_ns - a.overlappable_ns);
  return a;
}

}  // namespace loom::trace::replay
