#include "loom/trace/dfg/trace_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace loom::trace::dfg {
namespace {

using ingest::EventKind;
using ingest::RankTrace;
using ingest::TraceEvent;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  double hi = v[m];
  if (v.size() % 2 == 1) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + m)) / 2;
}

struct BucketObs {
  const TraceEvent* coll = nullptr;
  std::vector<const TraceEvent*> sends, recvs;
};

struct StepObs {
  int64_t step = 0;
  const TraceEvent* span = nullptr;
  std::vector<const TraceEvent*> pre;  // top-level main-lane ops before the last backward
  const TraceEvent* bw = nullptr;
  const TraceEvent* update = nullptr;
  std::vector<const TraceEvent*> update_colls;  // main-lane collectives in or after UPDATE
  std::map<int64_t, int64_t> first_send;        // collective seq -> its first SEND's start
  std::map<int64_t, int64_t> last_recv;         // collective seq -> its last RECV's end
  std::vector<BucketObs> buckets;
  std::string signature;
};

// "...~><ring step>_<chunk>": the ring step, or -1.
int RingStepOf(std::string_view name) {
  const size_t p = name.rfind("~>");
  if (p == std::string_view::npos) return -1;
  int v = 0;
  bool any = false;
  for (size_t i = p + 2; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    v = v * 10 + (name[i] - '0');
    any = true;
  }
  return any ? v : -1;
}

int64_t StepNumber(const RankTrace& t, const TraceEvent& e) {
  if (e.step >= 0) return e.step;
  const std::string_view n = t.Name(e);
  const size_t h = n.rfind('#');
  if (h == std::string_view::npos) return -1;
  int64_t v = 0;
  for (size_t i = h + 1; i < n.size() && n[i] >= '0' && n[i] <= '9'; ++i) v = v * 10 + (n[i] - '0');
  return v;
}

bool IsWait(const RankTrace& t, const TraceEvent& e) {
  return e.kind == EventKind::kOther && t.Name(e).substr(0, 4) == "wait";
}

Result<std::map<int64_t, StepObs>> ObserveRank(const RankTrace& t, const TraceModelOptions& o) {
  std::map<int64_t, StepObs> steps;
  for (const TraceEvent& e : t.events) {
    if (e.kind != EventKind::kStep) continue;
    const int64_t n = StepNumber(t, e);
    if (n < 0 || (o.first_step >= 0 && n < o.first_step) || (o.last_step >= 0 && n > o.last_step)) {
      continue;
    }
    steps[n].step = n;
    steps[n].span = &e;
  }
  if (steps.empty()) {
    return InvalidArgumentError("trace " + t.path + " (rank " + std::to_string(t.rank) +
                                "): no ProfilerStep#N step spans in the step window");
  }
  // Events to steps: by their step arg, else by containment in a step span.
  std::map<int64_t, std::vector<const TraceEvent*>> by_step;
  for (const TraceEvent& e : t.events) {
    if (e.kind == EventKind::kStep) continue;
    int64_t n = e.step;
    if (n < 0 || !steps.count(n)) {
      n = -1;
      for (auto& [k, s] : steps) {
        if (e.ts_ns >= s.span->ts_ns && e.ts_ns < s.span->end_ns()) n = k;
      }
    }
    if (n >= 0 && steps.count(n)) by_step[n].push_back(&e);
  }
  for (auto& [n, s] : steps) {
    const int32_t main = s.span->lane;
    std::vector<const TraceEvent*> top;
    int64_t cur_end = INT64_MIN;
    std::map<int64_t, size_t> bucket_of_seq;
    std::vector<const TraceEvent*> main_colls;
    for (const TraceEvent* e : by_step[n]) {
      if (e->kind == EventKind::kComm && e->lane == main) main_colls.push_back(e);
      if (e->lane == main && e->kind != EventKind::kComm && e->kind != EventKind::kSend &&
          e->kind != EventKind::kRecv && e->kind != EventKind::kCommEnqueue) {
        if (e->ts_ns < cur_end) continue;  // nested
        cur_end = e->end_ns();
        if (!IsWait(t, *e)) top.push_back(e);
      } else if (e->kind == EventKind::kComm && e->lane != main) {
        if (e->seq >= 0) bucket_of_seq[e->seq] = s.buckets.size();
        s.buckets.push_back({e, {}, {}});
      }
    }
    for (const TraceEvent* e : by_step[n]) {
      if (e->kind == EventKind::kSend && e->seq >= 0) {
        auto [it, fresh] = s.first_send.try_emplace(e->seq, e->ts_ns);
        if (!fresh) it->second = std::min(it->second, e->ts_ns);
      }
      if (e->kind == EventKind::kRecv && e->seq >= 0) {
        auto [it, fresh] = s.last_recv.try_emplace(e->seq, e->end_ns());
        if (!fresh) it->second = std::max(it->second, e->end_ns());
      }
      if ((e->kind != EventKind::kSend && e->kind != EventKind::kRecv) || e->lane == main) continue;
      auto it = bucket_of_seq.find(e->seq);
      if (it == bucket_of_seq.end()) continue;
      (e->kind == EventKind::kSend ? s.buckets[it->second].sends : s.buckets[it->second].recvs)
          .push_back(e);
    }
    int last_bw = -1;
    for (size_t i = 0; i < top.size(); ++i) {
      if (top[i]->kind == EventKind::kBackward) last_bw = static_cast<int>(i);
    }
    if (last_bw < 0) continue;  // no backward in this step: dropped (e.g. cut by the window)
    s.bw = top[last_bw];
    for (int i = 0; i < last_bw; ++i) {
      s.pre.push_back(top[i]);
      s.signature += std::string(t.Name(*top[i])) + ";";
    }
    for (size_t i = last_bw + 1; i < top.size(); ++i) {
      if (top[i]->kind == EventKind::kUpdate) {
        s.update = top[i];
        break;
      }
    }
    if (s.update != nullptr) {
      for (const TraceEvent* c : main_colls) {
        if (c->ts_ns >= s.update->ts_ns) {
          s.update_colls.push_back(c);
        }
      }
    }
    s.signature +=
        "|" + std::to_string(s.buckets.size()) + "|u" + std::to_string(s.update_colls.size());
  }
  for (auto it = steps.begin(); it != steps.end();) {
    it = it->second.bw == nullptr ? steps.erase(it) : std::next(it);
  }
  return steps;
}

// Fraction of backward at which each bucket became ready (see the header).
std::vector<double> ReadyFractions(const StepObs& s, const std::vector<double>& cum_bytes,
                                   int64_t queued_threshold_ns) {
  const size_t B = s.buckets.size();
  const double b0 = static_cast<double>(s.bw->ts_ns);
  const double dur = std::max<double>(1, static_cast<double>(s.bw->dur_ns));
  std::vector<double> f(B, -1), cap(B, 1);
  for (size_t b = 0; b < B; ++b) {
    const TraceEvent* c = s.buckets[b].coll;
    cap[b] = std::clamp((c->ts_ns - b0) / dur, 0.0, 1.0);
    if (b == 0 || c->ts_ns - s.buckets[b - 1].coll->end_ns() > queued_threshold_ns) f[b] = cap[b];
  }
  double pc = 0, pf = 0;  // previous anchor (cumulative bytes, fraction)
  for (size_t b = 0; b < B; ++b) {
    if (f[b] >= 0) {
      pc = cum_bytes[b];
      pf = f[b];
      continue;
    }
    size_t n = b + 1;
    while (n < B && f[n] < 0) ++n;
    const double nc = n < B ? cum_bytes[n] : 1.0, nf = n < B ? f[n] : 1.0;
    const double w = nc > pc ? (cum_bytes[b] - pc) / (nc - pc) : 1.0;
    f[b] = std::min(cap[b], pf + w * (nf - pf));
  }
  for (size_t b = 1; b < B; ++b) f[b] = std::max(f[b], f[b - 1]);
  return f;
}

// Length of [a, b) covered by the (sorted, possibly overlapping) intervals.
double Covered(const std::vector<std::pair<int64_t, int64_t>>& iv, double a, double b) {
  double sum = 0, reach = a;
  for (const auto& [s, e] : iv) {
    const double lo = std::max<double>(std::max<double>(s, reach), a);
    const double hi = std::min<double>(e, b);
    if (hi > lo) {
      sum += hi - lo;
      reach = hi;
    }
  }
  return sum;
}

std::string Mode(const std::map<std::string, int>& counts) {
  std::string best;
  int n = -1;
  for (const auto& [k, c] : counts) {
    if (c > n) {
      best = k;
      n = c;
    }
  }
  return best;
}

}  // namespace

std::string KappaFit::ToString() const {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "kappa %.3f (%s, slope %.3f, %lld samples)", kappa,
                identified ? "fitted" : "not identifiable: assumed", slope,
                static_cast<long long>(samples));
  return buf;
}

namespace {

using RankSteps = std::map<int64_t, StepObs>;

// Steps present on every rank with the most common signature per rank.
std::vector<int64_t> CommonSteps(const std::vector<RankSteps>& obs, const TraceModelOptions& o,
                                 std::vector<std::string>* notes) {
  std::vector<std::string> sig(obs.size());
  for (size_t r = 0; r < obs.size(); ++r) {
    std::map<std::string, int> counts;
    for (const auto& [n, s] : obs[r]) ++counts[s.signature];
    sig[r] = Mode(counts);
  }
  std::vector<int64_t> steps;
  int64_t dropped = 0;
  for (const auto& [n, s] : obs[0]) {
    bool ok = true;
    for (size_t r = 0; r < obs.size() && ok; ++r) {
      auto it = obs[r].find(n);
      ok = it != obs[r].end() && it->second.signature == sig[r] &&
           it->second.buckets.size() == obs[0].at(n).buckets.size();
    }
    if (ok)
      steps.push_back(n);
    else
      ++dropped;
  }
  if (dropped > 0) {
    notes->push_back(std::to_string(dropped) +
                     " step(s) dropped: missing on a rank or a different op/bucket sequence");
  }
  const int64_t skip = std::min<int64_t>(o.skip_first, std::max<int64_t>(0, steps.size() - 1));
  if (skip > 0) {
    steps.erase(steps.begin(), steps.begin() + skip);
    notes->push_back("first " + std::to_string(skip) + " step(s) of the window skipped (warm-up)");
  }
  return steps;
}

// Per-ring-step transfers from matched SEND/RECV chunks of the used steps.
std::vector<LinkSample> LinkSamples(const std::vector<RankTrace>& traces,
                                    const ingest::MatchResult& match, const std::set<int64_t>& used,
                                    LinkTopology topology, std::vector<std::string>* notes,
                                    std::vector<LinkSample>* every) {
  struct Agg {
    double t0 = INFINITY, t1 = -INFINITY, recv0 = INFINITY, bytes = 0, segs = 0;
    double last_recv_dur = 0;  // wait of the RECV that ended last
    int sender = 0;
    int64_t step = -1;
  };
  std::map<std::tuple<int, int64_t, int>, Agg> agg;
  for (const ingest::MatchedP2P& p : match.p2p) {
    const TraceEvent& s = traces[p.send_trace].events[p.send_event];
    const TraceEvent& v = traces[p.recv_trace].events[p.recv_event];
    if (s.step >= 0 && !used.count(s.step)) continue;
    const int ring = RingStepOf(traces[p.send_trace].Name(s));
    Agg& a = agg[{traces[p.send_trace].rank, s.seq, ring}];
    a.t0 = std::min<double>(a.t0, s.ts_ns);
    if (v.end_ns() >= a.t1) a.last_recv_dur = static_cast<double>(v.dur_ns);
    a.t1 = std::max<double>(a.t1, v.end_ns());
    a.sender = traces[p.send_trace].rank;
    a.step = s.step;
    a.recv0 = std::min<double>(a.recv0, v.ts_ns);
    a.bytes += std::max<int64_t>(0, s.bytes >= 0 ? s.bytes : v.bytes);
    a.segs += 1;
  }
  std::vector<LinkSample> clean, all;
  std::vector<double> starts, ends;
  for (const auto& [k, a] : agg) {
    starts.push_back(a.t0);
    ends.push_back(a.t1);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Queueing behind the sender's own earlier data: a rank finishes a collective when it has
  // *received*, so its next SEND can start while its previous bytes still drain through the
  // (shaped) link. The replay serializes a rank's transfers itself, so a sample is its service
  // time: from max(post, the previous transfer's arrival on this link) to its arrival.
  std::map<std::tuple<int, int64_t, int>, double> service_start;
  std::map<int, std::vector<std::pair<double, std::tuple<int, int64_t, int>>>> by_sender;
  for (const auto& [k, a] : agg) by_sender[a.sender].push_back({a.t0, k});
  int64_t queued = 0;
  for (auto& [sender, v] : by_sender) {
    std::sort(v.begin(), v.end());
    double busy_until = -INFINITY;
    for (const auto& [t0, k] : v) {
      const Agg& a = agg.at(k);
      const double start = std::max(t0, std::min(busy_until, a.t1));
      if (start > t0) ++queued;
      service_start[k] = start;
      busy_until = std::max(busy_until, a.t1);
    }
  }
  if (queued > 0) {
    notes->push_back("link fit: " + std::to_string(queued) + " of " + std::to_string(agg.size()) +
                     " transfers queued behind the sender's earlier data; fitted on service time");
  }
  for (const auto& [k, a] : agg) {
    LinkSample s{
        a.bytes, std::max(0.0, a.t1 - service_start.at(k)), std::max(1.0, a.segs), 1, a.sender,
        a.step};
    if (topology == LinkTopology::kShared) {
      const double mid = (a.t0 + a.t1) / 2;
      const double open = std::upper_bound(starts.begin(), starts.end(), mid) - starts.begin();
      const double closed = std::upper_bound(ends.begin(), ends.end(), mid) - ends.begin();
      s.concurrency = std::max(1.0, open - closed);
    }
    all.push_back(s);
    // The arrival time is known when the receiver was waiting for it: it started waiting before
    // the send, or its last wait was not instant (data not there yet when it asked).
    const bool timed = a.recv0 <= a.t0 || a.last_recv_dur >= 20'000;
    if (timed) clean.push_back(s);
    LinkSample e = s;
    e.post_ns = a.t0;
    e.arrival_ns = a.t1;
    e.timed = timed;
    every->push_back(e);
  }
  if (clean.size() < 2 && !all.empty()) {
    notes->push_back("link fit: receivers were rarely waiting; fitted on all " +
                     std::to_string(all.size()) + " transfers (biased by wait time)");
    return all;
  }
  return clean;
}

// κ from backward duration vs its overlap with this rank's collectives: Theil-Sen slope (the
// median of pairwise slopes between steps of one rank whose overlaps differ by > 50 µs), robust
// to the stalls of a loaded machine that stretch both at once. With one bucket κ is not
// identifiable (1, or TraceModelOptions::kappa).
KappaFit FitKappa(const std::vector<RankSteps>& obs, const std::vector<int64_t>& steps) {
  std::vector<double> slopes;
  int64_t samples = 0;
  for (const RankSteps& rs : obs) {
    std::vector<double> o, d;
    for (int64_t n : steps) {
      const StepObs& s = rs.at(n);
      // Only buckets before the last: the last one starts when backward is (nearly) done, so
      // its overlap grows *with* a stalled backward (reverse causality), not the other way.
      std::vector<std::pair<int64_t, int64_t>> iv;
      for (size_t b = 0; b + 1 < s.buckets.size(); ++b) {
        iv.push_back({s.buckets[b].coll->ts_ns, s.buckets[b].coll->end_ns()});
      }
      std::sort(iv.begin(), iv.end());
      o.push_back(Covered(iv, s.bw->ts_ns, s.bw->end_ns()));
      d.push_back(s.bw->dur_ns);
    }
    samples += static_cast<int64_t>(o.size());
    for (size_t i = 0; i < o.size(); ++i) {
      for (size_t j = i + 1; j < o.size(); ++j) {
        if (std::abs(o[j] - o[i]) > 50'000) slopes.push_back((d[j] - d[i]) / (o[j] - o[i]));
      }
    }
  }
  KappaFit k;
  k.samples = samples;
  if (slopes.size() >= 6) {
    k.slope = Median(slopes);
    k.identified = true;
    k.kappa = std::clamp(1.0 / (1.0 - std::clamp(k.slope, 0.0, 0.75)), 1.0, 4.0);
  }
  return k;
}

}  // namespace

namespace {

// Per-step samples of one rank, reduced to one value each by the statistic.
struct RankSamples {
  std::vector<double> head, bw_update_gap, tail, update, tail_iso;
  std::vector<std::vector<double>> pre_dur, pre_gap, seg_iso;
  std::vector<std::vector<double>> bucket_sync, update_sync, bucket_finish, update_finish;
};

// Samples shared by all ranks (one value each in the spec).
struct CommSamples {
  std::vector<double> sync, step_gap, to_update;
  double seg_bytes_max = 0;
  bool multi_segment = false;
};

// The fit of BuildModelFromTraces, step by step.
class ModelFitter {
 public:
  ModelFitter(const std::vector<RankTrace>& traces, const ingest::MatchResult& match,
              const TraceModelOptions& o)
      : traces_(traces), match_(match), o_(o), n_(static_cast<int>(traces.size())) {}

  Result<TraceModel> Run() {
    LOOM_RETURN_IF_ERROR(Observe());
    LOOM_RETURN_IF_ERROR(Layout());
    m_.kappa = FitKappa(obs_, m_.steps);
    if (o_.kappa >= 1) m_.kappa.kappa = o_.kappa;
    m_.spec.kappa = m_.kappa.kappa;
    CommSamples comm;
    for (int r = 0; r < n_; ++r) FitRank(r, &comm);
    ModelSpec& spec = m_.spec;
    spec.sync_ns = Stat(comm.sync);
    for (RankModel& rm : spec.ranks) {  // collectives without a SEND: the median
      for (double& d : rm.bucket_sync_ns) d = d < 0 ? spec.sync_ns : d;
      for (double& d : rm.update_sync_ns) d = d < 0 ? spec.sync_ns : d;
    }
    spec.step_gap_ns = Stat(comm.step_gap);
    spec.comm_to_update_gap_ns = Stat(comm.to_update);
    if (comm.multi_segment) spec.segment_bytes = static_cast<int64_t>(comm.seg_bytes_max);
    LOOM_RETURN_IF_ERROR(FitLinks());
    // Measured iteration: the slowest rank's step span, one value over steps.
    for (int64_t n : m_.steps) {
      double worst = 0;
      for (const RankSteps& rs : obs_) worst = std::max<double>(worst, rs.at(n).span->dur_ns);
      m_.measured_step_ns.push_back(worst);
    }
    m_.measured_iteration_ns = Stat(m_.measured_step_ns);
    LOOM_RETURN_IF_ERROR(spec.Validate());
    return std::move(m_);
  }

 private:
  double Stat(std::vector<double> v) const {
    if (o_.statistic == TraceModelOptions::Statistic::kMedian || v.empty()) {
      return Median(std::move(v));
    }
    double sum = 0;
    for (double x : v) sum += x;
    return sum / v.size();
  }

  Status Observe() {
    for (int r = 0; r < n_; ++r) {
      if (traces_[r].rank != r) {
        return InvalidArgumentError("trace model: expected ranks 0.." + std::to_string(n_ - 1) +
                                    " in order; " + traces_[r].path + " is rank " +
                                    std::to_string(traces_[r].rank));
      }
    }
    for (const RankTrace& t : traces_) {
      LOOM_ASSIGN_OR_RETURN(RankSteps rs, ObserveRank(t, o_));
      if (rs.empty()) {
        return InvalidArgumentError("trace " + t.path + " (rank " + std::to_string(t.rank) +
                                    "): no step has a backward span on its main lane");
      }
      obs_.push_back(std::move(rs));
    }
    m_.steps = CommonSteps(obs_, o_, &m_.notes);
    if (m_.steps.empty()) {
      return InvalidArgumentError("trace model: no step is complete and alike on all " +
                                  std::to_string(n_) + " ranks (" + traces_[0].path + " ...)");
    }
    return OkStatus();
  }

  // Collective kind, buckets -> gradient pieces of <= split_bytes, update collectives.
  Status Layout() {
    const StepObs& first = obs_[0].at(m_.steps[0]);
    const std::vector<BucketObs>& ref = first.buckets;
    b_ = ref.size();
    if (b_ == 0) {
      return InvalidArgumentError("trace " + traces_[0].path +
                                  ": no gradient collectives off the main lane in step " +
                                  std::to_string(m_.steps[0]));
    }
    ModelSpec& spec = m_.spec;
    spec.world_size = n_;
    spec.topology = o_.topology;
    spec.collective = KindOf(ref[0].coll->op);
    bucket_bytes_.resize(b_);
    cum_.resize(b_);
    pieces_.resize(b_);
    double total = 0;
    for (size_t b = 0; b < b_; ++b) {
      bucket_bytes_[b] = std::max<int64_t>(4, ref[b].coll->bytes);
      total += bucket_bytes_[b];
    }
    double acc = 0;
    spec.grads.clear();
    spec.bucket_begin.clear();
    const int64_t split = std::max<int64_t>(4, o_.split_bytes);
    for (size_t b = 0; b < b_; ++b) {
      acc += bucket_bytes_[b];
      cum_[b] = acc / total;
      spec.bucket_begin.push_back(static_cast<int>(spec.grads.size()));
      pieces_[b] = static_cast<int>((bucket_bytes_[b] + split - 1) / split);
      for (int i = 0; i < pieces_[b]; ++i) {
        const int64_t lo = bucket_bytes_[b] * i / pieces_[b];
        const int64_t hi = bucket_bytes_[b] * (i + 1) / pieces_[b];
        spec.grads.push_back({"bucket" + std::to_string(b) + ".part" + std::to_string(i), hi - lo});
      }
    }
    for (const TraceEvent* c : first.update_colls) {
      spec.update_collectives.push_back({std::max<int64_t>(0, c->bytes), KindOf(c->op)});
    }
    return OkStatus();
  }

  static CollectiveKind KindOf(ingest::CollectiveOp op) {
    if (op == ingest::CollectiveOp::kReduceScatter) return CollectiveKind::kReduceScatter;
    if (op == ingest::CollectiveOp::kAllGather) return CollectiveKind::kAllGather;
    return CollectiveKind::kAllReduce;
  }

  void FitRank(int r, CommSamples* comm) {
    const StepObs& first = obs_[r].at(m_.steps[0]);
    RankSamples rs;
    rs.pre_dur.resize(first.pre.size());
    rs.pre_gap.resize(first.pre.size());
    rs.seg_iso.resize(b_);
    rs.bucket_sync.resize(b_);
    rs.bucket_finish.resize(b_);
    rs.update_sync.resize(first.update_colls.size());
    rs.update_finish.resize(first.update_colls.size());
    for (int64_t n : m_.steps) {
      const StepObs& s = obs_[r].at(n);
      CollectCompute(s, &rs);
      CollectCollectives(s, &rs);
      CollectRing(traces_[r], s, comm);
      comm->to_update.push_back(rs.bw_update_gap.back());
    }
    RankModel& rm = m_.spec.ranks.emplace_back();
    rm.head_ns = Stat(rs.head);
    for (size_t i = 0; i < first.pre.size(); ++i) {
      const TraceEvent* e = first.pre[i];
      rm.pre.push_back({std::string(traces_[r].Name(*e)),
                        e->kind == EventKind::kForward ? NodeKind::kForward : NodeKind::kOther,
                        Stat(rs.pre_dur[i]), Stat(rs.pre_gap[i])});
    }
    if (!rm.pre.empty()) rm.pre_to_bw_gap_ns = rm.pre.back().gap_after_ns;
    for (size_t b = 0; b < b_; ++b) {
      const double seg = std::max(0.0, Stat(rs.seg_iso[b]));
      for (int i = 0; i < pieces_[b]; ++i) {
        const int g = m_.spec.bucket_begin[b] + i;
        rm.bw_ns.push_back(seg * m_.spec.grads[g].bytes / static_cast<double>(bucket_bytes_[b]));
      }
    }
    rm.bw_tail_ns = std::max(0.0, Stat(rs.tail_iso));
    for (const auto& v : rs.bucket_sync) rm.bucket_sync_ns.push_back(v.empty() ? -1 : Stat(v));
    for (const auto& v : rs.update_sync) rm.update_sync_ns.push_back(v.empty() ? -1 : Stat(v));
    for (const auto& v : rs.bucket_finish) rm.bucket_finish_ns.push_back(Stat(v));
    for (const auto& v : rs.update_finish) rm.update_finish_ns.push_back(Stat(v));
    rm.update_ns = Stat(rs.update);
    rm.bw_to_update_gap_ns = Stat(rs.bw_update_gap);
    rm.tail_ns = Stat(rs.tail);
  }

  // Head, pre ops, backward segments per bucket (de-rated to isolated time by κ), tail.
  void CollectCompute(const StepObs& s, RankSamples* rs) const {
    const TraceEvent* first_op = s.pre.empty() ? s.bw : s.pre[0];
    rs->head.push_back(std::max<int64_t>(0, first_op->ts_ns - s.span->ts_ns));
    for (size_t i = 0; i < s.pre.size() && i < rs->pre_dur.size(); ++i) {
      rs->pre_dur[i].push_back(s.pre[i]->dur_ns);
      const TraceEvent* next = i + 1 < s.pre.size() ? s.pre[i + 1] : s.bw;
      rs->pre_gap[i].push_back(std::max<int64_t>(0, next->ts_ns - s.pre[i]->end_ns()));
    }
    const double derate = 1 - 1 / m_.spec.kappa;
    const std::vector<double> f = ReadyFractions(s, cum_, o_.queued_threshold_ns);
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (const BucketObs& b : s.buckets) iv.push_back({b.coll->ts_ns, b.coll->end_ns()});
    std::sort(iv.begin(), iv.end());
    double prev = s.bw->ts_ns;
    for (size_t b = 0; b < b_; ++b) {
      const double end = s.bw->ts_ns + f[b] * s.bw->dur_ns;
      rs->seg_iso[b].push_back(std::max(0.0, end - prev) - Covered(iv, prev, end) * derate);
      prev = std::max(prev, end);
    }
    const double bw_end = static_cast<double>(s.bw->end_ns());
    rs->tail_iso.push_back(std::max(0.0, bw_end - prev) - Covered(iv, prev, bw_end) * derate);
    const int64_t comm_end = s.buckets.back().coll->end_ns();
    const int64_t after = s.update != nullptr ? s.update->ts_ns : s.span->end_ns();
    rs->bw_update_gap.push_back(std::max<int64_t>(0, after - std::max(s.bw->end_ns(), comm_end)));
  }

  // UPDATE's own compute, per-collective Sync / finish times, the tail after the last op.
  void CollectCollectives(const StepObs& s, RankSamples* rs) const {
    double update_ns = s.update != nullptr ? s.update->dur_ns : 0;
    int64_t last_coll_end = 0;
    auto sync_of = [&](const TraceEvent* c, std::vector<double>* sync,
                       std::vector<double>* finish) {
      auto fs = s.first_send.find(c->seq);
      if (fs != s.first_send.end()) sync->push_back(std::max<int64_t>(0, fs->second - c->ts_ns));
      auto lr = s.last_recv.find(c->seq);
      finish->push_back(lr != s.last_recv.end() ? std::max<int64_t>(0, c->end_ns() - lr->second)
                                                : 0);
    };
    for (size_t u = 0; u < s.update_colls.size(); ++u) {
      const TraceEvent* c = s.update_colls[u];
      if (c->end_ns() <= s.update->end_ns()) update_ns -= c->dur_ns;
      last_coll_end = std::max(last_coll_end, c->end_ns());
      sync_of(c, &rs->update_sync[u], &rs->update_finish[u]);
    }
    for (size_t b = 0; b < b_; ++b) {
      sync_of(s.buckets[b].coll, &rs->bucket_sync[b], &rs->bucket_finish[b]);
    }
    rs->update.push_back(std::max(0.0, update_ns));
    const int64_t comm_end = s.buckets.back().coll->end_ns();
    const int64_t last =
        std::max(last_coll_end,
                 s.update != nullptr ? s.update->end_ns() : std::max(s.bw->end_ns(), comm_end));
    rs->tail.push_back(std::max<int64_t>(0, s.span->end_ns() - last));
  }

  // Sync, RECV[s-1] -> SEND[s] gaps and segment sizes of the bucket collectives.
  static void CollectRing(const RankTrace& t, const StepObs& s, CommSamples* comm) {
    for (const BucketObs& b : s.buckets) {
      if (!b.sends.empty()) {
        comm->sync.push_back(std::max<int64_t>(0, b.sends[0]->ts_ns - b.coll->ts_ns));
      }
      std::map<int, std::pair<int64_t, int64_t>> ring;  // step -> (first send, last recv end)
      std::map<int, int> segs;
      for (const TraceEvent* e : b.sends) {
        const int st = RingStepOf(t.Name(*e));
        auto& p = ring.try_emplace(st, INT64_MAX, INT64_MIN).first->second;
        p.first = std::min(p.first, e->ts_ns);
        if (++segs[st] > 1) comm->multi_segment = true;
        comm->seg_bytes_max = std::max<double>(comm->seg_bytes_max, e->bytes);
      }
      for (const TraceEvent* e : b.recvs) {
        auto& p = ring.try_emplace(RingStepOf(t.Name(*e)), INT64_MAX, INT64_MIN).first->second;
        p.second = std::max(p.second, e->end_ns());
      }
      for (const auto& [st, p] : ring) {
        auto prev = ring.find(st - 1);
        if (st > 0 && prev != ring.end() && p.first != INT64_MAX &&
            prev->second.second != INT64_MIN) {
          comm->step_gap.push_back(std::max<int64_t>(0, p.first - prev->second.second));
        }
      }
    }
  }

  Status FitLinks() {
    ModelSpec& spec = m_.spec;
    const bool fit = o_.link_ns_per_byte < 0 || o_.link_alpha_ns < 0;
    const std::set<int64_t> used(m_.steps.begin(), m_.steps.end());
    std::vector<LinkSample> samples, every;
    if (fit) samples = LinkSamples(traces_, match_, used, o_.topology, &m_.notes, &every);
    if (fit && samples.empty() && n_ > 1) {
      // No chunk records: fit whole collectives (ring steps x chunk bytes).
      const int steps = spec.RingSteps();
      for (const RankSteps& rs : obs_) {
        for (int64_t n : m_.steps) {
          for (const BucketObs& b : rs.at(n).buckets) {
            samples.push_back({static_cast<double>(b.coll->bytes) / n_ * steps,
                               static_cast<double>(b.coll->dur_ns), static_cast<double>(steps), 1});
          }
        }
      }
      m_.notes.push_back("no SEND/RECV chunks: link fitted on whole collectives");
    }
    // Token buckets: per-sender links only, and only when neither α nor β is given.
    const bool bucket = o_.link_model != TraceModelOptions::LinkModel::kAlphaBeta &&
                        o_.topology == LinkTopology::kPerSender && o_.link_alpha_ns < 0 &&
                        o_.link_ns_per_byte < 0;
    const bool forced = o_.link_model == TraceModelOptions::LinkModel::kTokenBucket;
    const double gain = forced ? 1e300 : 0.85, min_shaped = forced ? 0 : 0.5;
    if (!samples.empty()) {
      LOOM_ASSIGN_OR_RETURN(m_.link, FitLinkStepTotals(samples));
      if (bucket && !every.empty()) {
        // Every link simulated on its own, one (rate, burst) for all. This decides for every
        // link (one shaped and one α-β link would make bandwidth what-ifs inconsistent: they
        // scale one factor, capped against this link's rate).
        if (auto tb = FitTokenBucket(every, m_.link, gain, min_shaped); tb.ok()) m_.link = *tb;
      }
      spec.alpha_ns = m_.link.alpha_ns;
      spec.ns_per_byte = m_.link.ns_per_byte;
      if (m_.link.token_bucket) {
        spec.burst_bytes = m_.link.burst_bytes;
        spec.line_ns_per_byte = m_.link.line_ns_per_byte;
      }
      if (!m_.link.beta_identified && o_.link_ns_per_byte < 0) {
        m_.notes.push_back(
            "link bandwidth not identifiable over all transfers (latency-bound): links "
            "without an own fit ignore bandwidth what-ifs; pass --link-gbps");
      }
    }
    if (!samples.empty() && o_.topology == LinkTopology::kPerSender) {
      // Each rank's egress link on its own (a starved receiver makes one direction slower).
      for (int r = 0; r < n_; ++r) {
        std::vector<LinkSample> mine;
        for (const LinkSample& x : samples) {
          if (x.link == r) mine.push_back(x);
        }
        LinkFit f;
        f.samples = 0;
        if (!mine.empty()) {
          auto fr = FitLinkStepTotals(mine);
          if (fr.ok() && fr->beta_identified) f = *fr;
        }
        if (f.samples > 0 && m_.link.token_bucket) {
          // Shaped: this link's own bucket whenever its fit finds a burst; else the spec's.
          std::vector<LinkSample> timeline;
          for (const LinkSample& x : every) {
            if (x.link == r) timeline.push_back(x);
          }
          auto tb = FitTokenBucket(timeline, f, 1e300, 0);
          f = tb.ok() && tb->token_bucket ? *tb : LinkFit{.samples = 0};
        }
        m_.rank_links.push_back(f);
        if (f.samples > 0 && o_.link_alpha_ns < 0 && o_.link_ns_per_byte < 0) {
          spec.ranks[r].egress_alpha_ns = f.alpha_ns;
          spec.ranks[r].egress_ns_per_byte = f.ns_per_byte;
          if (f.token_bucket) {
            spec.ranks[r].egress_burst_bytes = f.burst_bytes;
            spec.ranks[r].egress_line_ns_per_byte = f.line_ns_per_byte;
          }
        }
      }
    }
    if (o_.link_alpha_ns >= 0) spec.alpha_ns = o_.link_alpha_ns;
    if (o_.link_ns_per_byte >= 0) spec.ns_per_byte = o_.link_ns_per_byte;
    if (!fit) {
      m_.link.alpha_ns = spec.alpha_ns;
      m_.link.ns_per_byte = spec.ns_per_byte;
      m_.link.beta_identified = spec.ns_per_byte > 0;
    }
    return OkStatus();
  }

  const std::vector<RankTrace>& traces_;
  const ingest::MatchResult& match_;
  const TraceModelOptions& o_;
  const int n_;
  TraceModel m_;
  std::vector<RankSteps> obs_;
  size_t b_ = 0;                       // buckets
  std::vector<int64_t> bucket_bytes_;  // per bucket
  std::vector<double> cum_;            // cumulative byte fraction per bucket
  std::vector<int> pieces_;            // backward pieces per bucket
};

}  // namespace

Result<TraceModelOptions::LinkModel> ParseLinkModel(const std::string& name) {
  if (name == "auto") return TraceModelOptions::LinkModel::kAuto;
  if (name == "alpha-beta") return TraceModelOptions::LinkModel::kAlphaBeta;
  if (name == "token-bucket") return TraceModelOptions::LinkModel::kTokenBucket;
  return InvalidArgumentError("link model '" + name + "' is not auto, alpha-beta or token-bucket");
}

Result<TraceModel> BuildModelFromTraces(const std::vector<RankTrace>& traces,
                                        const ingest::MatchResult& match,
                                        const TraceModelOptions& o) {
  if (traces.empty()) return InvalidArgumentError("trace model: no traces");
  return ModelFitter(traces, match, o).Run();
}

}  // namespace loom::trace::dfg
