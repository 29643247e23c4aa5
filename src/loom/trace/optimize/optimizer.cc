// Simulated annealing over Strategy (see optimizer.h).
#include "loom/trace/optimize/optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "loom/trace/optimize/fusion_dp.h"

namespace loom::trace::optimize {
namespace {

using Clock = std::chrono::steady_clock;

// A replayed strategy: its cost and each bucket's comm time on the critical path.
struct Evaluation {
  double cost_ns = 0;
  std::vector<double> path_ns;  // per bucket
};

std::string Key(const Strategy& s) {
  std::string k = s.overlap ? "o" : "x";
  for (size_t b = 0; b < s.bucket_begin.size(); ++b) {
    k += '|';
    k += std::to_string(s.bucket_begin[b]);
    k += ':';
    k += s.codecs[b];
  }
  return k;
}

// Replays strategies, memoised by strategy.
class Evaluator {
 public:
  Evaluator(const dfg::ModelSpec& base, const OptimizeOptions& o) : base_(base), o_(o) {}

  Result<Evaluation> Evaluate(const Strategy& s) {
    const std::string key = Key(s);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    LOOM_ASSIGN_OR_RETURN(dfg::ModelSpec spec, ApplyStrategy(base_, s, o_.codec_models));
    LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(spec));
    LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g, o_.replay_options));
    ++replays_;
    Evaluation e;
    e.cost_ns = r.iteration_ns;
    e.path_ns.assign(s.num_buckets(), 0);
    for (const replay::PathStep& step : r.critical_path.steps) {
      const dfg::Node& v = g.nodes()[step.node];
      const bool bucket_comm = v.bucket >= 0 && v.bucket < s.num_buckets() &&
                               (dfg::IsComm(v.kind) || v.kind == dfg::NodeKind::kCompress ||
                                v.kind == dfg::NodeKind::kDecompress);
      if (bucket_comm) e.path_ns[v.bucket] += step.end_ns - step.start_ns;
    }
    memo_.emplace(key, e);
    return e;
  }
  int replays() const { return replays_; }

 private:
  const dfg::ModelSpec& base_;
  const OptimizeOptions& o_;
  std::map<std::string, Evaluation> memo_;
  int replays_ = 0;
};

// Portable draws from a seeded mt19937_64 (the std distributions differ across libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double Uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  int Below(int k) { return static_cast<int>(g_() % static_cast<uint64_t>(k)); }
  double Normal() {
    const double u = std::max(Uniform(), 1e-300), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }

 private:
  std::mt19937_64 g_;
};

int BucketEnd(const Strategy& s, int b, int n) {
  return b + 1 < s.num_buckets() ? s.bucket_begin[b + 1] : n;
}

int PickBucket(const Evaluation& cur, const OptimizeOptions& o, Rng* rng) {
  const int buckets = static_cast<int>(cur.path_ns.size());
  double total = 0;
  for (double w : cur.path_ns) total += w;
  if (!o.critical_path_moves || total <= 0 || rng->Uniform() < o.explore) {
    return rng->Below(buckets);
  }
  double x = rng->Uniform() * total;
  for (int b = 0; b < buckets; ++b) {
    x -= cur.path_ns[b];
    if (x < 0) return b;
  }
  return buckets - 1;
}

// One random move on bucket b of `s` (false: none applies). Describes it in *what.
bool Propose(const Strategy& s, int b, int n, const SearchSpace& space, Rng* rng, Strategy* out,
             std::string* what) {
  enum Move { kFuseNext, kFusePrev, kSplit, kShift, kCodec, kOverlap };
  const int lo = s.bucket_begin[b], hi = BucketEnd(s, b, n);
  std::vector<Move> moves;
  if (space.fuse) {
    if (b + 1 < s.num_buckets()) moves.push_back(kFuseNext);
    if (b > 0) moves.push_back(kFusePrev);
    if (hi - lo >= 2) moves.push_back(kSplit);
    if (s.num_buckets() > 1) moves.push_back(kShift);
  }
  if (space.codecs.size() > 1) moves.push_back(kCodec);
  if (space.try_overlap_off || !s.overlap) moves.push_back(kOverlap);
  if (moves.empty()) return false;
  *out = s;
  switch (moves[rng->Below(static_cast<int>(moves.size()))]) {
    case kFuseNext:
    case kFusePrev: {
      const int first = (b + 1 < s.num_buckets() && (b == 0 || rng->Below(2) == 0)) ? b : b - 1;
      out->bucket_begin.erase(out->bucket_begin.begin() + first + 1);
      out->codecs.erase(out->codecs.begin() + first + 1);
      *what = "fuse " + std::to_string(first) + "+" + std::to_string(first + 1);
      return true;
    }
    case kSplit: {
      // dPRO's tensor partition: split point ~ N((m-1)/2, (m-1)/4) over the m-1 boundaries.
      const int m = hi - lo;
      const double mu = (m - 1) / 2.0, sigma = std::max(0.5, (m - 1) / 4.0);
      int at = lo + 1 + static_cast<int>(std::lround(mu + sigma * rng->Normal() - 0.5));
      at = std::clamp(at, lo + 1, hi - 1);
      out->bucket_begin.insert(out->bucket_begin.begin() + b + 1, at);
      out->codecs.insert(out->codecs.begin() + b + 1, s.codecs[b]);
      *what = "split " + std::to_string(b) + " at gradient " + std::to_string(at);
      return true;
    }
    case kShift: {
      // Move the boundary with a neighbour by one gradient, either way.
      const bool right = b + 1 < s.num_buckets() && (b == 0 || rng->Below(2) == 0);
      const int k = right ? b + 1 : b;  // boundary index moved
      const int left_lo = s.bucket_begin[k - 1], right_hi = BucketEnd(s, k, n);
      const int at = s.bucket_begin[k] + (rng->Below(2) == 0 ? -1 : 1);
      if (at <= left_lo || at >= right_hi) return false;
      out->bucket_begin[k] = at;
      *what = "shift boundary " + std::to_string(k) + " to gradient " + std::to_string(at);
      return true;
    }
    case kCodec: {
      std::string c = s.codecs[b];
      while (c == s.codecs[b]) c = space.codecs[rng->Below(static_cast<int>(space.codecs.size()))];
      out->codecs[b] = c;
      *what = "codec " + std::to_string(b) + " " + s.codecs[b] + " -> " + c;
      return true;
    }
    case kOverlap:
      out->overlap = !s.overlap;
      *what = std::string("overlap ") + (out->overlap ? "on" : "off");
      return true;
  }
  return false;
}

Status CheckOptions(const dfg::ModelSpec& base, const OptimizeOptions& o) {
  if (o.max_replays < 1) return InvalidArgumentError("optimize: max_replays must be >= 1");
  if (!(o.t0 > 0) || !(o.t_final > 0) || o.t_final > o.t0) {
    return InvalidArgumentError("optimize: temperatures need 0 < t_final <= t0");
  }
  if (o.space.codecs.empty()) return InvalidArgumentError("optimize: no codecs in the space");
  // Every codec must resolve before the search starts: errors name the codec.
  Strategy probe = Strategy::FromSpec(base);
  for (const std::string& c : o.space.codecs) {
    probe.codecs.assign(probe.num_buckets(), c);
    LOOM_RETURN_IF_ERROR(ApplyStrategy(base, probe, o.codec_models).status());
  }
  return OkStatus();
}

}  // namespace

Result<SearchResult> Optimize(const dfg::ModelSpec& base, const OptimizeOptions& o) {
  const auto start = Clock::now();
  LOOM_RETURN_IF_ERROR(base.Validate());
  LOOM_RETURN_IF_ERROR(CheckOptions(base, o));
  const int n = static_cast<int>(base.grads.size());
  Evaluator eval(base, o);
  Rng rng(o.seed);
  SearchResult res;
  res.base = Strategy::FromSpec(base);
  LOOM_ASSIGN_OR_RETURN(Evaluation cur_eval, eval.Evaluate(res.base));
  Strategy cur = res.base;
  res.base_ns = cur_eval.cost_ns;
  res.best = cur;
  res.predicted_ns = cur_eval.cost_ns;

  if (o.seed_with_fusion_dp && o.space.fuse && base.bucket_codec.empty()) {
    Result<FusionPlan> dp = OptimalFusion(base, o.replay_options);
    if (dp.ok()) {
      Strategy s = cur;
      s.bucket_begin = dp->bucket_begin;
      s.codecs.assign(s.num_buckets(), "none");
      LOOM_ASSIGN_OR_RETURN(Evaluation e, eval.Evaluate(s));
      if (e.cost_ns < cur_eval.cost_ns) {
        cur = s;
        cur_eval = e;
        res.best = s;
        res.predicted_ns = e.cost_ns;
        res.accepted.push_back({0, "start from the fusion DP's buckets", e.cost_ns, true});
      }
    }
  }

  const int steps = o.max_steps > 0 ? o.max_steps : 4 * o.max_replays;
  const double gamma = std::pow(o.t_final / o.t0, 1.0 / std::max(1, steps - 1));
  double temperature = o.t0;
  for (int k = 0; k < steps; ++k, temperature *= gamma) {
    if (eval.replays() >= o.max_replays) break;
    if (std::chrono::duration<double>(Clock::now() - start).count() > o.time_budget_s) break;
    res.steps = k + 1;
    Strategy cand;
    std::string what;
    if (!Propose(cur, PickBucket(cur_eval, o, &rng), n, o.space, &rng, &cand, &what)) continue;
    LOOM_ASSIGN_OR_RETURN(Evaluation e, eval.Evaluate(cand));
    const double delta = (e.cost_ns - cur_eval.cost_ns) / std::max(1.0, res.base_ns);
    if (delta > 0 && rng.Uniform() >= std::exp(-delta / temperature)) continue;
    cur = std::move(cand);
    cur_eval = std::move(e);
    const bool improved = cur_eval.cost_ns < res.predicted_ns;
    if (improved) {
      res.best = cur;
      res.predicted_ns = cur_eval.cost_ns;
    }
    res.accepted.push_back({k + 1, what, cur_eval.cost_ns, improved});
  }
  res.replays = eval.replays();
  res.search_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return res;
}

}  // namespace loom::trace::optimize
