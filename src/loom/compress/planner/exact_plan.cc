#include "loom/compress/planner/exact_plan.h"

#include <algorithm>
#include <limits>

#include "loom/compress/planner/espresso.h"

namespace loom::compress::planner {
namespace {

class Search {
 public:
  Search(const TimelineSimulator& sim, const ExactOptions& o, int none) : sim_(sim), opts_(o) {
    const CostModel& m = sim.model();
    options_.push_back({none, Placement::kCompute});
    for (int c = 0; c < static_cast<int>(m.codecs.size()); ++c) {
      if (m.codecs[c].is_none()) continue;
      for (Placement p : o.placements) options_.push_back({c, p});
    }
    const int n = sim.num_tensors();
    plan_.assign(n, TensorStrategy{none, Placement::kCompute});
    best_plan_ = plan_;
    best_s_ = sim.IterationSeconds(plan_);  // the all-"none" incumbent
  }

  // A better starting incumbent prunes more (the greedy plan, typically).
  void Offer(const std::vector<TensorStrategy>& plan) {
    const double s = sim_.IterationSeconds(plan);
    if (s < best_s_) {
      best_s_ = s;
      best_plan_ = plan;
    }
  }

  // Assigns tensors [depth, n) given plan_[0, depth); the rest of plan_ is "none".
  Status Visit(int depth) {
    if (++nodes_ > opts_.max_nodes) {
      return ResourceExhaustedError(
          "ExactPlan: gave up after " + std::to_string(opts_.max_nodes) +
          " search nodes; use fewer tensors or codecs, or raise ExactOptions::max_nodes");
    }
    const int n = sim_.num_tensors();
    for (const TensorStrategy& o : options_) {
      plan_[depth] = o;
      Result<Timeline> t = sim_.Run(plan_);
      LOOM_RETURN_IF_ERROR(t.status());
      if (depth + 1 == n) {
        if (t->iteration_s < best_s_) {
          best_s_ = t->iteration_s;
          best_plan_ = plan_;
        }
        continue;
      }
      if (Bound(*t, depth + 1) >= best_s_) continue;
      LOOM_RETURN_IF_ERROR(Visit(depth + 1));
    }
    plan_[depth] = options_.front();  // back to "none" for the caller's bound
    return OkStatus();
  }

  // A lower bound on any completion of plan_[0, k) (tensors from k on are "none" in t): the
  // prefix's decodes and backward end can only move later; each later tensor j reaches the link
  // no earlier than its ready time (plus its encode, unless the link encodes it) and after tensor
  // j-1 left it, so the chain L_j = min over options of its link end bounds when it leaves.
  double Bound(const Timeline& t, int k) const {
    double bound = t.backward_end_s;
    for (int i = 0; i < k; ++i) bound = std::max(bound, t.tensors[i].decode_end_s);
    double link = t.tensors[k - 1].link_end_s;
    for (int j = k; j < sim_.num_tensors(); ++j) {
      double next = std::numeric_limits<double>::infinity();
      double done = next;
      for (const TensorStrategy& o : options_) {
        const double ready = t.tensors[j].ready_s, encode = sim_.EncodeSeconds(j, o.codec);
        const double decode = sim_.DecodeSeconds(j, o.codec);
        if (o.placement == Placement::kLink) {  // ("none" is always kCompute here)
          const double end = std::max(link, ready) + encode + sim_.LinkSeconds(j, o.codec) + decode;
          next = std::min(next, end);
          done = std::min(done, end);
          continue;
        }
        const double end = std::max(link, ready + encode) + sim_.LinkSeconds(j, o.codec);
        next = std::min(next, end);
        done = std::min(done, end + decode);
      }
      link = next;
      bound = std::max(bound, done);
    }
    return std::max(bound, link);
  }

  const TimelineSimulator& sim_;
  const ExactOptions& opts_;
  std::vector<TensorStrategy> options_;  // "none" first
  std::vector<TensorStrategy> plan_, best_plan_;
  double best_s_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace

Result<ExactResult> ExactPlan(const TimelineSimulator& sim, const ExactOptions& options) {
  const int n = sim.num_tensors();
  if (n > options.max_tensors) {
    return InvalidArgumentError("ExactPlan: " + std::to_string(n) +
                                " tensors; the exhaustive search is limited to " +
                                std::to_string(options.max_tensors) + " (use EspressoPlan)");
  }
  LOOM_RETURN_IF_ERROR(ValidatePlacements(options.placements).WithContext("ExactPlan"));
  const int none = sim.model().Find("none");
  if (none < 0) return InvalidArgumentError("ExactPlan: the cost model has no \"none\" codec");
  ExactResult r;
  if (n == 0) {
    r.plan_s = sim.IterationSeconds({});
    return r;
  }
  Search s(sim, options, none);
  EspressoOptions greedy;
  greedy.placements = options.placements;
  LOOM_ASSIGN_OR_RETURN(PlanReport seed, EspressoPlan(sim, greedy));
  s.Offer(seed.plan);
  LOOM_RETURN_IF_ERROR(s.Visit(0));
  r.plan = s.best_plan_;
  r.plan_s = s.best_s_;
  r.nodes = s.nodes_;
  return r;
}

}  // namespace loom::compress::planner
