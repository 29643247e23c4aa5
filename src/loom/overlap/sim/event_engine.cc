#include "loom/overlap/sim/event_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace loom::overlap::internal {
namespace {

constexpr double kUnknown = -1.0;

Status Validate(const SimProgram& p) {
  const int n_items = static_cast<int>(p.items.size());
  const int n_msgs = static_cast<int>(p.messages.size());
  for (int i = 0; i < n_items; ++i) {
    const SimItem& it = p.items[i];
    if (it.pool < 0 || it.pool >= static_cast<int>(p.pools.size())) {
      return InvalidArgumentError("sim item " + std::to_string(i) + " has bad pool " +
                                  std::to_string(it.pool));
    }
    for (int m : it.wait_msgs) {
      if (m < 0 || m >= n_msgs) {
        return InvalidArgumentError("sim item " + std::to_string(i) + " waits on bad message " +
                                    std::to_string(m));
      }
    }
    for (int d : it.wait_items) {
      if (d < 0 || d >= n_items || d == i) {
        return InvalidArgumentError("sim item " + std::to_string(i) + " waits on bad item " +
                                    std::to_string(d));
      }
    }
  }
  for (int m = 0; m < n_msgs; ++m) {
    for (int d : p.messages[m].wait_items) {
      if (d < 0 || d >= n_items) {
        return InvalidArgumentError("sim message " + std::to_string(m) + " waits on bad item " +
                                    std::to_string(d));
      }
    }
  }
  for (size_t k = 0; k < p.pools.size(); ++k) {
    if (p.pools[k].workers < 1) {
      return InvalidArgumentError("sim pool " + std::to_string(k) + " has no workers");
    }
  }
  return OkStatus();
}

void BuildTrace(const SimProgram& p, const SimResult& r, const std::vector<int>& item_worker,
                SimTrace* trace) {
  auto& ev = trace->events;
  for (size_t i = 0; i < p.items.size(); ++i) {
    const SimItem& it = p.items[i];
    const bool compute = p.pools[it.pool].kind == PoolKind::kCompute;
    SimEvent s;
    s.kind = compute ? SimEventKind::kTileStart : SimEventKind::kReduceStart;
    s.time_s = r.item_start[i];
    s.item = static_cast<int>(i);
    s.pool = it.pool;
    s.worker = item_worker[i];
    s.peer = it.peer;
    s.bytes = it.bytes;
    s.waits_on = it.wait_msgs;
    SimEvent e = s;
    e.kind = compute ? SimEventKind::kTileEnd : SimEventKind::kReduceEnd;
    e.time_s = r.item_end[i];
    e.waits_on.clear();
    ev.push_back(std::move(s));
    ev.push_back(std::move(e));
  }
  for (size_t m = 0; m < p.messages.size(); ++m) {
    SimEvent s;
    s.kind = SimEventKind::kChunkSend;
    s.time_s = r.msg_send[m];
    s.item = static_cast<int>(m);
    s.peer = p.messages[m].peer;
    s.bytes = p.messages[m].bytes;
    SimEvent a = s;
    a.kind = SimEventKind::kChunkArrive;
    a.time_s = r.msg_arrive[m];
    ev.push_back(s);
    ev.push_back(a);
  }
  // Ends/arrivals before starts at equal times, so "arrive then start" orders correctly.
  auto rank = [](SimEventKind k) {
    switch (k) {
      case SimEventKind::kTileEnd:
      case SimEventKind::kReduceEnd:
      case SimEventKind::kChunkArrive:
        return 0;
      default:
        return 1;
    }
  };
  std::stable_sort(ev.begin(), ev.end(), [&](const SimEvent& a, const SimEvent& b) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    return rank(a.kind) < rank(b.kind);
  });
}

}  // namespace

Result<SimResult> RunProgram(const SimProgram& p, const LinkModel& link, bool record_trace) {
  LOOM_RETURN_IF_ERROR(Validate(p));
  const size_t n_items = p.items.size();
  const size_t n_msgs = p.messages.size();
  SimResult r;
  r.item_start.assign(n_items, kUnknown);
  r.item_end.assign(n_items, kUnknown);
  r.msg_send.assign(n_msgs, kUnknown);
  r.msg_arrive.assign(n_msgs, kUnknown);
  std::vector<int> item_worker(n_items, -1);

  // Per pool: its items in program order, the next one to issue, worker free times, and the
  // previous issue time (in-order issue).
  const size_t n_pools = p.pools.size();
  std::vector<std::vector<int>> queue(n_pools);
  for (size_t i = 0; i < n_items; ++i) queue[p.items[i].pool].push_back(static_cast<int>(i));
  std::vector<size_t> next(n_pools, 0);
  std::vector<std::vector<double>> worker_free(n_pools);
  for (size_t k = 0; k < n_pools; ++k) worker_free[k].assign(p.pools[k].workers, 0.0);
  std::vector<double> last_issue(n_pools, 0.0);
  size_t next_msg = 0;
  double link_free = 0;

  size_t done = 0;
  const size_t total = n_items + n_msgs;
  while (done < total) {
    bool progress = false;
    for (size_t k = 0; k < n_pools; ++k) {
      while (next[k] < queue[k].size()) {
        const int i = queue[k][next[k]];
        const SimItem& it = p.items[i];
        double ready = last_issue[k];
        bool ok = true;
        for (int m : it.wait_msgs) {
          if (r.msg_arrive[m] < 0) {
            ok = false;
            break;
          }
          ready = std::max(ready, r.msg_arrive[m]);
        }
        for (int d : it.wait_items) {
          if (!ok) break;
          if (r.item_end[d] < 0) {
            ok = false;
            break;
          }
          ready = std::max(ready, r.item_end[d]);
        }
        if (!ok) break;
        auto w = std::min_element(worker_free[k].begin(), worker_free[k].end());
        const double start = std::max(ready, *w);
        r.item_start[i] = start;
        r.item_end[i] = start + it.cost_s;
        *w = r.item_end[i];
        item_worker[i] = static_cast<int>(w - worker_free[k].begin());
        last_issue[k] = start;
        if (p.pools[k].kind == PoolKind::kCompute) r.compute_busy_s += it.cost_s;
        ++next[k];
        ++done;
        progress = true;
      }
    }
    while (next_msg < n_msgs) {
      const SimMessage& m = p.messages[next_msg];
      double ready = link_free;
      bool ok = true;
      for (int d : m.wait_items) {
        if (r.item_end[d] < 0) {
          ok = false;
          break;
        }
        ready = std::max(ready, r.item_end[d]);
      }
      if (!ok) break;
      const double t = link.MessageSeconds(m.bytes);
      r.msg_send[next_msg] = ready;
      r.msg_arrive[next_msg] = ready + t;
      link_free = ready + t;
      r.link_busy_s += t;
      ++next_msg;
      ++done;
      progress = true;
    }
    if (!progress) {
      return InternalError(
          "simulator deadlock: " + std::to_string(total - done) + " of " + std::to_string(total) +
          " items/messages can never start (next message " + std::to_string(next_msg) + ")");
    }
  }
  for (size_t i = 0; i < n_items; ++i) r.makespan_s = std::max(r.makespan_s, r.item_end[i]);
  for (size_t m = 0; m < n_msgs; ++m) r.makespan_s = std::max(r.makespan_s, r.msg_arrive[m]);
  if (record_trace) BuildTrace(p, r, item_worker, &r.trace);
  return r;
}

}  // namespace loom::overlap::internal
