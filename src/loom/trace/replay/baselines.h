// Analytical baselines for the replay benchmark (Calculon/roofline style), computed from the same
// ModelSpec the DFG is built from:
//   sum_ns:     T = T_compute + T_comm (no overlap at all)
//   overlap_ns: T = T_compute + max(0, T_comm − T_overlappable)
// T_compute = the slowest rank's head + main-thread ops + backward + update + tail (with gaps and
// straggler ratios); T_comm = Σ buckets (Sync + codec + ring steps × (α·segments + chunk/β +
// RECV cost + step gap)) plus the update collectives, on an unshared link; T_overlappable = the
// backward time after the first bucket's last gradient (what can hide comm), 0 when overlap is
// off.
//
// Thread-safety: pure functions.
#pragma once

#include "loom/trace/dfg/model_spec.h"

namespace loom::trace::replay {

struct AnalyticalEstimate {
  double compute_ns = 0;
  double comm_ns = 0;
  double overlappable_ns = 0;
  double sum_ns = 0;      // compute + comm
  double overlap_ns = 0;  // compute + max(0, comm - overlappable)
};

AnalyticalEstimate Analytical(const dfg::ModelSpec& spec);

}  // namespace loom::trace::replay
