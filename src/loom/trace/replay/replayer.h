// Replay: dPRO's discrete-event list scheduling of a global DFG, predicting one iteration.
//
//   LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(spec));
//   LOOM_ASSIGN_OR_RETURN(ReplayResult r, Replay(g));
//   r.iteration_ns; r.critical_path.compute_ns; ...
//
// Semantics (dPRO replay.py, §1.4 of the spec): a node is ready at max(release, max over data
// predecessors of end + edge gap). A serial device runs one node at a time, picking among its
// ready nodes the lowest (priority, ready time, node id); after a node it idles Device::gap_ns.
// A node's work is dur_ns · ratio plus, for a node with a link, alpha + bytes · ns_per_byte, or
// on a token-bucket link (Link::burst_bytes > 0) alpha + its time through the link's bucket from
// its start: queued behind the link's earlier bytes, at line rate while tokens last, then at the
// token rate (dfg/token_bucket.h). A training loop repeats its iteration, so the buckets start
// an iteration as the previous identical one left them: the replay repeats until that state
// repeats (ReplayOptions::periodic_token_buckets; the first period starts from full buckets).
// Work progresses at rate 1, except: m nodes running on one *shared* link progress at 1/m each
// (processor sharing of one bottleneck), and a compute node runs at 1/κ(rank) while its rank's
// comm device is busy (Options::apply_kappa). Iteration time = the latest end over all nodes.
//
// Critical path: the longest path over data edges ∪ device-order edges (consecutive nodes on a
// serial device), weighted by realized durations and gaps, found by a DP over nodes in start
// order. Its time splits exactly into
//   compute: isolated durations of compute nodes on the path (FW/BW/UPDATE/codecs),
//   comm:    isolated durations of comm nodes (Sync/SEND/RECV: α-β time at full link rate),
//   gap:     edge gaps, device gaps and release (head) times on the path,
//   wait:    contention: the stretch of path nodes beyond their isolated time (CPU stolen by
//            comm, κ; link shared with other flows) plus any idle slack on the path,
// and compute + comm + gap + wait == iteration_ns (to rounding).
//
// Cost: O((V + E) log V) with an indexed heap of projected finish times (rates change only for
// the nodes on an affected link or rank). Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/dfg.h"

namespace loom::trace::replay {

struct ReplayOptions {
  bool apply_kappa = true;   // slow compute by κ while comm runs (default true)
  bool shared_links = true;  // honour Link::shared (default true)
  bool token_buckets = true;  // honour Link::burst_bytes (default true; false: α-β time)
  // Token buckets: replay the iteration again from the bucket state the previous one left until
  // it repeats (default true; false: one iteration from full buckets), at most max_periods times.
  bool periodic_token_buckets = true;
  int max_periods = 64;
};

struct NodeTiming {
  double ready_ns = 0;
  double start_ns = 0;
  double end_ns = 0;
  double isolated_ns = 0;  // work at rate 1 (no contention)
};

struct PathStep {
  int node = 0;
  double start_ns = 0;
  double end_ns = 0;
  double gap_before_ns = 0;  // gap on the edge into this node (or release)
  bool via_device = false;   // entered through a device-order edge (else data edge / start)
};

struct CriticalPath {
  std::vector<PathStep> steps;  // in time order
  double compute_ns = 0;
  double comm_ns = 0;
  double gap_ns = 0;
  double wait_ns = 0;
  double total_ns() const { return compute_ns + comm_ns + gap_ns + wait_ns; }
};

struct ReplayResult {
  double iteration_ns = 0;
  std::vector<NodeTiming> timing;              // per node
  std::vector<std::vector<int>> device_order;  // per device, nodes in start order
  CriticalPath critical_path;
  int64_t events = 0;  // simulation events processed (of the last period)
  int periods = 1;     // iterations replayed to reach the token buckets' steady state
};

// The graph must be finalized (dfg::Graph::Finalize or BuildGraph).
Result<ReplayResult> Replay(const dfg::Graph& graph, const ReplayOptions& options = {});

// "compute 12.1 ms (54%), comm 8.0 ms (36%), gap 1.2 ms, wait 1.1 ms; 37 nodes: rank0->FW..."
std::string SummarizeCriticalPath(const dfg::Graph& graph, const ReplayResult& result,
                                  int max_nodes = 8);

}  // namespace loom::trace::replay
