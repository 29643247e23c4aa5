#include "loom/trace/ingest/clock_align.h"

#include <algorithm>
#include <limits>

namespace loom::trace::ingest {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// Tightest constraint θ[v] − θ[u] ≤ w seen for the ordered pair (u, v), and where it came from.
struct Edge {
  int64_t w = kInf;
  bool from_collective = true;
  size_t source = 0;  // index into match.collectives or match.p2p
};

struct Graph {
  int n = 0;
  std::vector<Edge> e;  // n*n, e[u*n+v]
  Edge& at(int u, int v) { return e[static_cast<size_t>(u) * n + v]; }
  const Edge& at(int u, int v) const { return e[static_cast<size_t>(u) * n + v]; }
  void Add(int u, int v, int64_t w, bool coll, size_t src) {
    Edge& x = at(u, v);
    if (w < x.w) x = {w, coll, src};
  }
};

// Shortest distances from `src` (reverse = along reversed edges). Assumes no negative cycle.
std::vector<int64_t> ShortestFrom(const Graph& g, int src, bool reverse) {
  std::vector<int64_t> d(g.n, kInf);
  d[src] = 0;
  for (int it = 0; it < g.n; ++it) {
    bool changed = false;
    for (int u = 0; u < g.n; ++u) {
      if (d[u] == kInf) continue;
      for (int v = 0; v < g.n; ++v) {
        const int64_t w = reverse ? g.at(v, u).w : g.at(u, v).w;
        if (w == kInf || u == v) continue;
        if (d[u] + w < d[v]) {
          d[v] = d[u] + w;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return d;
}

std::string DescribeEdge(const std::vector<RankTrace>& traces, const MatchResult& match,
                         const Graph& g, int u, int v) {
  const Edge& x = g.at(u, v);
  std::string s = "theta[rank " + std::to_string(traces[v].rank) + "] - theta[rank " +
                  std::to_string(traces[u].rank) + "] <= " + std::to_string(x.w) + " ns from ";
  if (x.from_collective) {
    const MatchedCollective& c = match.collectives[x.source];
    s += "collective " + std::string(CollectiveOpName(c.op)) + " group '" + c.group + "' seq " +
         std::to_string(c.seq);
    for (size_t k = 0; k < c.trace_index.size(); ++k) {
      if (c.trace_index[k] == u) {
        s.append(" ('").append(traces[u].Name(traces[u].events[c.event_index[k]])).append("')");
        break;
      }
    }
  } else {
    const MatchedP2P& p = match.p2p[x.source];
    const RankTrace& st = traces[p.send_trace];
    s.append("'").append(st.Name(st.events[p.send_event]));
    s += "' rank " + std::to_string(st.rank) + " -> rank " +
         std::to_string(traces[p.recv_trace].rank);
  }
  return s;
}

// Bellman-Ford from a virtual source; returns the vertices of a negative cycle (empty if none).
std::vector<int> FindNegativeCycle(const Graph& g) {
  std::vector<int64_t> d(g.n, 0);
  std::vector<int> pred(g.n, -1);
  int last = -1;
  for (int it = 0; it < g.n; ++it) {
    last = -1;
    for (int u = 0; u < g.n; ++u) {
      for (int v = 0; v < g.n; ++v) {
        const int64_t w = g.at(u, v).w;
        if (w == kInf || u == v) continue;
        if (d[u] + w < d[v]) {
          d[v] = d[u] + w;
          pred[v] = u;
          last = v;
        }
      }
    }
    if (last < 0) return {};
  }
  int x = last;
  for (int i = 0; i < g.n; ++i) x = pred[x];  // now on the cycle
  std::vector<int> cycle{x};
  for (int y = pred[x]; y != x; y = pred[y]) cycle.push_back(y);
  std::reverse(cycle.begin(), cycle.end());  // edges cycle[k] -> cycle[k+1]
  return cycle;
}

}  // namespace

Result<ClockAlignment> SolveClockOffsets(const std::vector<RankTrace>& traces,
                                         const MatchResult& match, const AlignOptions& options) {
  const int n = static_cast<int>(traces.size());
  int ref = -1;
  for (int i = 0; i < n; ++i) {
    if (traces[i].rank == options.reference_rank) ref = i;
  }
  if (ref < 0) {
    return InvalidArgumentError("clock align: no trace of reference rank " +
                                std::to_string(options.reference_rank));
  }
  Graph g;
  g.n = n;
  g.e.assign(static_cast<size_t>(n) * n, Edge{});
  ClockAlignment out;
  for (size_t c = 0; c < match.collectives.size(); ++c) {
    const MatchedCollective& mc = match.collectives[c];
    for (size_t a = 0; a < mc.trace_index.size(); ++a) {
      const int i = mc.trace_index[a];
      const int64_t start_i = traces[i].events[mc.event_index[a]].ts_ns;
      for (size_t b = 0; b < mc.trace_index.size(); ++b) {
        const int j = mc.trace_index[b];
        if (i == j) continue;
        // θ_j − θ_i ≥ start_i − end_j  <=>  θ_i − θ_j ≤ end_j − start_i: edge j -> i.
        const int64_t end_j = traces[j].events[mc.event_index[b]].end_ns();
        g.Add(j, i, end_j - start_i + options.slack_ns, true, c);
        ++out.constraints;
      }
    }
  }
  if (options.use_p2p) {
    for (size_t k = 0; k < match.p2p.size(); ++k) {
      const MatchedP2P& p = match.p2p[k];
      if (p.send_trace == p.recv_trace) continue;
      const TraceEvent& s = traces[p.send_trace].events[p.send_event];
      const TraceEvent& r = traces[p.recv_trace].events[p.recv_event];
      const int64_t send_t =
          options.p2p_bound == AlignOptions::P2PBound::kSendEnd ? s.end_ns() : s.ts_ns;
      // θ_recv − θ_send ≥ send_t − recv_end  <=>  θ_send − θ_recv ≤ recv_end − send_t.
      g.Add(p.recv_trace, p.send_trace, r.end_ns() - send_t + options.slack_ns, false, k);
      ++out.constraints;
    }
  }
  if (std::vector<int> cycle = FindNegativeCycle(g); !cycle.empty()) {
    int64_t total = 0;
    std::string msg;
    for (size_t k = 0; k < cycle.size(); ++k) {
      const int u = cycle[k];
      const int v = cycle[(k + 1) % cycle.size()];
      total += g.at(u, v).w;
      msg += "\n  " + DescribeEdge(traces, match, g, u, v);
    }
    return InvalidArgumentError(
        "clock align: bad match: the constraints of these collectives contradict each other "
        "(a cycle of total weight " +
        std::to_string(total) +
        " ns < 0: no clock offsets satisfy them; a collective is probably matched with the "
        "wrong one):" +
        msg);
  }
  const std::vector<int64_t> hi = ShortestFrom(g, ref, /*reverse=*/false);
  const std::vector<int64_t> to_ref = ShortestFrom(g, ref, /*reverse=*/true);
  for (int i = 0; i < n; ++i) {
    RankOffset r;
    r.rank = traces[i].rank;
    r.trace_index = i;
    r.has_estimate = traces[i].clock.has_offset_estimate;
    r.estimate_ns = traces[i].clock.offset_estimate_ns;
    const bool hi_ok = hi[i] < kInf / 2;
    const bool lo_ok = to_ref[i] < kInf / 2;
    r.hi_ns = hi_ok ? hi[i] : kInf;
    r.lo_ns = lo_ok ? -to_ref[i] : -kInf;
    r.bounded = hi_ok && lo_ok;
    if (r.bounded) {
      r.offset_ns = r.lo_ns + (r.hi_ns - r.lo_ns) / 2;
    } else if (r.has_estimate && r.estimate_ns >= r.lo_ns && r.estimate_ns <= r.hi_ns) {
      r.offset_ns = r.estimate_ns;
    } else {
      r.offset_ns = hi_ok ? r.hi_ns : (lo_ok ? r.lo_ns : 0);
    }
    r.estimate_in_interval = r.has_estimate && r.estimate_ns >= r.lo_ns && r.estimate_ns <= r.hi_ns;
    out.ranks.push_back(r);
  }
  return out;
}

void ApplyClockOffsets(const ClockAlignment& alignment, std::vector<RankTrace>* traces) {
  for (const RankOffset& r : alignment.ranks) {
    RankTrace& t = (*traces)[r.trace_index];
    const int64_t delta = r.offset_ns - t.clock.applied_offset_ns;
    for (TraceEvent& e : t.events) e.ts_ns += delta;
    t.clock.applied_offset_ns = r.offset_ns;
  }
}

}  // namespace loom::trace::ingest
