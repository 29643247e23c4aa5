#include "loom/trace/replay/replayer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <tuple>

#include "loom/trace/dfg/token_bucket.h"
#include "loom/trace/replay/internal/indexed_heap.h"

namespace loom::trace::replay {
namespace {

using dfg::Graph;
using dfg::Node;

constexpr double kEps = 1e-6;  // ns: events closer than this are simultaneous

class Simulator {
 public:
  // `buckets`: each link's token bucket at the iteration's start (nullptr: full).
  Simulator(const Graph& g, const ReplayOptions& o, const std::vector<dfg::TokenBucket>* buckets)
      : g_(g), o_(o), n_(static_cast<int>(g.nodes().size())), finish_(n_) {
    timing_.resize(n_);
    remaining_.assign(n_, 0);
    rate_.assign(n_, 1);
    t_upd_.assign(n_, 0);
    indeg_.resize(n_);
    devs_.resize(g.devices().size());
    link_running_.resize(g.links().size());
    if (buckets != nullptr) {
      buckets_ = *buckets;
    } else {
      for (const dfg::Link& l : g.links()) {
        buckets_.emplace_back(l.ns_per_byte, l.burst_bytes, l.line_ns_per_byte);
        buckets_.back().Reset(0);
      }
    }
    const int ranks = std::max(1, g.num_ranks());
    comm_busy_.assign(ranks, 0);
    rank_compute_.resize(ranks);
  }

  Status Run(ReplayResult* out) {
    for (int v = 0; v < n_; ++v) {
      indeg_[v] = static_cast<int>(g_.in_edges()[v].size());
      timing_[v].ready_ns = g_.nodes()[v].release_ns;
      if (indeg_[v] == 0) Push(timing_[v].ready_ns, kReady, v);
    }
    int finished = 0;
    while (!fixed_.empty() || !finish_.empty()) {
      double t = std::numeric_limits<double>::infinity();
      if (!fixed_.empty()) t = std::get<0>(fixed_.top());
      if (!finish_.empty()) t = std::min(t, finish_.top_priority());
      for (bool progress = true; progress;) {
        progress = false;
        while (!finish_.empty() && finish_.top_priority() <= t + kEps) {
          const int v = finish_.top();
          const double end = std::max(timing_[v].start_ns, finish_.top_priority());
          finish_.Pop();
          Finish(v, end);
          ++finished;
          progress = true;
        }
        while (!fixed_.empty() && std::get<0>(fixed_.top()) <= t + kEps) {
          auto [time, seq, type, id] = fixed_.top();
          fixed_.pop();
          ++events_;
          progress = true;
          if (type == kDeviceFree) {
            dirty_.push_back(id);
            continue;
          }
          const Node& node = g_.nodes()[id];
          if (node.device < 0 || g_.devices()[node.device].kind == dfg::DeviceKind::kUnbounded) {
            Start(id, t);
          } else {
            devs_[node.device].queue.emplace(node.priority, timing_[id].ready_ns, id);
            dirty_.push_back(node.device);
          }
        }
      }
      for (int d : dirty_) Dispatch(d, t);
      dirty_.clear();
    }
    if (finished != n_) {
      return InternalError("replay finished " + std::to_string(finished) + " of " +
                           std::to_string(n_) + " DFG nodes");
    }
    out->timing = std::move(timing_);
    out->device_order = std::move(order_);
    out->events = events_;
    out->iteration_ns = 0;
    for (const NodeTiming& t : out->timing)
      out->iteration_ns = std::max(out->iteration_ns, t.end_ns);
    return OkStatus();
  }

  std::vector<std::vector<int>> order_;
  const std::vector<dfg::TokenBucket>& buckets() const { return buckets_; }

 private:
  enum EventType { kReady = 0, kDeviceFree = 1 };
  using Event = std::tuple<double, int64_t, int, int>;  // time, seq, type, id
  struct DeviceState {
    int busy = -1;
    double free_at = 0;
    std::priority_queue<std::tuple<int, double, int>, std::vector<std::tuple<int, double, int>>,
                        std::greater<>>
        queue;
  };

  void Push(double t, EventType type, int id) { fixed_.emplace(t, seq_++, type, id); }

  bool Slowable(const Node& v) const {
    return o_.apply_kappa && dfg::IsCompute(v.kind) && v.device >= 0 &&
           !g_.devices()[v.device].is_comm && v.rank >= 0;
  }
  double RateOf(int v) const {
    const Node& node = g_.nodes()[v];
    double rate = 1;
    if (node.link >= 0 && o_.shared_links && g_.links()[node.link].shared) {
      rate /= static_cast<double>(std::max<size_t>(1, link_running_[node.link].size()));
    }
    if (Slowable(node) && comm_busy_[node.rank] > 0) rate /= std::max(1.0, g_.kappa(node.rank));
    return rate;
  }
  void Refresh(int v, double t) {
    remaining_[v] = std::max(0.0, remaining_[v] - (t - t_upd_[v]) * rate_[v]);
    t_upd_[v] = t;
    rate_[v] = RateOf(v);
    finish_.Set(v, t + remaining_[v] / rate_[v]);
  }
  void RefreshRank(int rank, double t) {
    for (int w : rank_compute_[rank]) Refresh(w, t);
  }
  static void Remove(std::vector<int>* v, int x) {
    auto it = std::find(v->begin(), v->end(), x);
    if (it != v->end()) {
      *it = v->back();
      v->pop_back();
    }
  }

  void Start(int v, double t) {
    const Node& node = g_.nodes()[v];
    NodeTiming& tm = timing_[v];
    tm.start_ns = t;
    double work = node.dur_ns * node.ratio;
    if (node.link >= 0) {
      const dfg::Link& link = g_.links()[node.link];
      const double bytes = static_cast<double>(node.bytes);
      if (o_.token_buckets && link.token_bucket()) {
        // Its time in the bucket depends on what the link sent before (not slowed later: a
        // SEND is not compute and a token-bucket link is not shared).
        work += link.alpha_ns + (buckets_[node.link].Send(t, bytes).drained_ns - t);
      } else {
        work += link.TimeNs(bytes);
      }
    }
    tm.isolated_ns = work;
    remaining_[v] = work;
    t_upd_[v] = t;
    rate_[v] = 1;
    if (node.device >= 0) {
      if (order_.size() < g_.devices().size()) order_.resize(g_.devices().size());
      order_[node.device].push_back(v);
    }
    if (node.link >= 0) {
      link_running_[node.link].push_back(v);
      for (int w : link_running_[node.link]) {
        if (w != v) Refresh(w, t);
      }
    }
    if (node.device >= 0 && g_.devices()[node.device].is_comm && node.rank >= 0) {
      if (comm_busy_[node.rank]++ == 0) RefreshRank(node.rank, t);
    }
    if (Slowable(node)) rank_compute_[node.rank].push_back(v);
    rate_[v] = RateOf(v);
    finish_.Set(v, t + remaining_[v] / rate_[v]);
  }

  void Finish(int v, double t) {
    const Node& node = g_.nodes()[v];
    timing_[v].end_ns = t;
    if (node.link >= 0) {
      Remove(&link_running_[node.link], v);
      for (int w : link_running_[node.link]) Refresh(w, t);
    }
    if (Slowable(node)) Remove(&rank_compute_[node.rank], v);
    if (node.device >= 0 && g_.devices()[node.device].is_comm && node.rank >= 0) {
      if (--comm_busy_[node.rank] == 0) RefreshRank(node.rank, t);
    }
    if (node.device >= 0 && g_.devices()[node.device].kind == dfg::DeviceKind::kSerial) {
      DeviceState& d = devs_[node.device];
      d.busy = -1;
      d.free_at = t + g_.devices()[node.device].gap_ns;
      if (d.free_at > t)
        Push(d.free_at, kDeviceFree, node.device);
      else
        dirty_.push_back(node.device);
    }
    for (int e : g_.out_edges()[v]) {
      const dfg::Edge& ed = g_.edges()[e];
      NodeTiming& w = timing_[ed.to];
      w.ready_ns = std::max(w.ready_ns, t + ed.gap_ns);
      if (--indeg_[ed.to] == 0) Push(w.ready_ns, kReady, ed.to);
    }
  }

  void Dispatch(int d, double t) {
    DeviceState& s = devs_[d];
    if (s.busy >= 0 || s.free_at > t + kEps || s.queue.empty()) return;
    const int v = std::get<2>(s.queue.top());
    s.queue.pop();
    s.busy = v;
    Start(v, t);
  }

  const Graph& g_;
  const ReplayOptions& o_;
  const int n_;
  internal::IndexedMinHeap finish_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> fixed_;
  std::vector<NodeTiming> timing_;
  std::vector<double> remaining_, rate_, t_upd_;
  std::vector<int> indeg_;
  std::vector<DeviceState> devs_;
  std::vector<std::vector<int>> link_running_;
  std::vector<dfg::TokenBucket> buckets_;  // per link (used when Link::token_bucket())
  std::vector<int> comm_busy_;
  std::vector<std::vector<int>> rank_compute_;
  std::vector<int> dirty_;
  int64_t seq_ = 0;
  int64_t events_ = 0;
};

// Longest path over data ∪ device-order edges (see the header for the attribution).
CriticalPath FindCriticalPath(const Graph& g, const ReplayResult& r) {
  const int n = static_cast<int>(g.nodes().size());
  CriticalPath cp;
  if (n == 0) return cp;
  std::vector<int> dev_pred(n, -1);
  for (size_t d = 0; d < r.device_order.size(); ++d) {
    if (g.devices()[d].kind != dfg::DeviceKind::kSerial) continue;
    for (size_t i = 1; i < r.device_order[d].size(); ++i) {
      dev_pred[r.device_order[d][i]] = r.device_order[d][i - 1];
    }
  }
  // Kahn over the union graph (it is acyclic for a schedule that respects both edge sets).
  std::vector<int> indeg(n, 0), order;
  std::vector<std::vector<int>> dev_succ(n);
  for (int v = 0; v < n; ++v) {
    indeg[v] = static_cast<int>(g.in_edges()[v].size()) + (dev_pred[v] >= 0);
    if (dev_pred[v] >= 0) dev_succ[dev_pred[v]].push_back(v);
    if (indeg[v] == 0) order.push_back(v);
  }
  for (size_t h = 0; h < order.size(); ++h) {
    const int v = order[h];
    for (int e : g.out_edges()[v]) {
      if (--indeg[g.edges()[e].to] == 0) order.push_back(g.edges()[e].to);
    }
    for (int w : dev_succ[v]) {
      if (--indeg[w] == 0) order.push_back(w);
    }
  }
  std::vector<double> len(n, 0), in_gap(n, 0);
  std::vector<int> pred(n, -1);
  std::vector<char> via_dev(n, 0);
  for (int v : order) {
    const dfg::Node& node = g.nodes()[v];
    double best = node.release_ns;
    in_gap[v] = node.release_ns;
    for (int e : g.in_edges()[v]) {
      const dfg::Edge& ed = g.edges()[e];
      if (len[ed.from] + ed.gap_ns > best) {
        best = len[ed.from] + ed.gap_ns;
        pred[v] = ed.from;
        in_gap[v] = ed.gap_ns;
        via_dev[v] = 0;
      }
    }
    if (dev_pred[v] >= 0) {
      const double dg = g.devices()[node.device].gap_ns;
      if (len[dev_pred[v]] + dg > best) {
        best = len[dev_pred[v]] + dg;
        pred[v] = dev_pred[v];
        in_gap[v] = dg;
        via_dev[v] = 1;
      }
    }
    const NodeTiming& t = r.timing[v];
    len[v] = std::max(best, t.start_ns) + (t.end_ns - t.start_ns);
  }
  int last = 0;
  for (int v = 0; v < n; ++v) {
    if (r.timing[v].end_ns > r.timing[last].end_ns) last = v;
  }
  for (int v = last; v >= 0; v = pred[v]) {
    cp.steps.push_back({v, r.timing[v].start_ns, r.timing[v].end_ns, in_gap[v], via_dev[v] != 0});
  }
  std::reverse(cp.steps.begin(), cp.steps.end());
  double prev_end = 0;
  for (const PathStep& s : cp.steps) {
    const dfg::Node& node = g.nodes()[s.node];
    const NodeTiming& t = r.timing[s.node];
    const double dur = t.end_ns - t.start_ns;
    const double iso = std::min(dur, t.isolated_ns);
    (dfg::IsComm(node.kind) ? cp.comm_ns : cp.compute_ns) += iso;
    // The gap actually spent (never more than the time between the predecessor and the start).
    const double gap = std::clamp(s.gap_before_ns, 0.0, std::max(0.0, s.start_ns - prev_end));
    cp.gap_ns += gap;
    cp.wait_ns += (dur - iso) + std::max(0.0, s.start_ns - prev_end - gap);
    prev_end = s.end_ns;
  }
  return cp;
}

std::string Ms(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  return buf;
}

}  // namespace

Result<ReplayResult> Replay(const dfg::Graph& graph, const ReplayOptions& options) {
  if (!graph.finalized()) {
    return FailedPreconditionError("replay: the DFG is not finalized (call Graph::Finalize)");
  }
  bool buckets = false;
  for (const dfg::Link& l : graph.links()) buckets |= l.token_bucket();
  buckets = buckets && options.token_buckets && options.periodic_token_buckets;
  // Token buckets: replay iterations until the bucket state an iteration leaves repeats (the
  // training loop's periodic steady state); the first starts from full buckets.
  ReplayResult result;
  std::vector<dfg::TokenBucket> start;
  for (int round = 0;; ++round) {
    ReplayResult r;
    Simulator sim(graph, options, start.empty() ? nullptr : &start);
    LOOM_RETURN_IF_ERROR(sim.Run(&r));
    r.periods = round + 1;
    bool same = round > 0 && std::abs(r.iteration_ns - result.iteration_ns) < 1;
    std::vector<dfg::TokenBucket> next = sim.buckets();
    for (size_t l = 0; l < next.size(); ++l) {
      next[l].StartNextPeriod(r.iteration_ns);
      if (!start.empty()) {
        same = same && std::abs(next[l].TokensAt(0) - start[l].TokensAt(0)) < 1 &&
               std::abs(std::max(0.0, next[l].drained_ns()) -
                        std::max(0.0, start[l].drained_ns())) < 1;
      }
    }
    result = std::move(r);
    if (!buckets || same || round + 1 >= options.max_periods) break;
    start = std::move(next);
  }
  result.device_order.resize(graph.devices().size());
  result.critical_path = FindCriticalPath(graph, result);
  return result;
}

std::string SummarizeCriticalPath(const dfg::Graph& graph, const ReplayResult& result,
                                  int max_nodes) {
  const CriticalPath& cp = result.critical_path;
  const double total = std::max(1e-9, cp.total_ns());
  auto pct = [&](double v) {
    return std::to_string(static_cast<int>(std::lround(100 * v / total)));
  };
  std::string s = "compute " + Ms(cp.compute_ns) + " (" + pct(cp.compute_ns) + "%), comm " +
                  Ms(cp.comm_ns) + " (" + pct(cp.comm_ns) + "%), gap " + Ms(cp.gap_ns) + " (" +
                  pct(cp.gap_ns) + "%), wait " + Ms(cp.wait_ns) + " (" + pct(cp.wait_ns) + "%); " +
                  std::to_string(cp.steps.size()) + " nodes:";
  // The longest nodes on the path, in path order.
  std::vector<size_t> idx(cp.steps.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto dur = [&](size_t i) { return cp.steps[i].end_ns - cp.steps[i].start_ns; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return dur(a) > dur(b); });
  if (static_cast<int>(idx.size()) > max_nodes) idx.resize(max_nodes);
  std::sort(idx.begin(), idx.end());
  for (size_t i : idx) {
    s += " " + graph.nodes()[cp.steps[i].node].name + " " + Ms(dur(i)) + ";";
  }
  return s;
}

}  // namespace loom::trace::replay
