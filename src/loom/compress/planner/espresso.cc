#include "loom/compress/planner/espresso.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace loom::compress::planner {
namespace {

// A change must beat the incumbent by more than rounding noise to be kept.
bool Better(double candidate, double incumbent) { return candidate < incumbent * (1 - 1e-12); }

class Greedy {
 public:
  Greedy(const TimelineSimulator& sim, int none)
      : sim_(sim), plan_(sim.num_tensors(), TensorStrategy{none, Placement::kCompute}) {
    best_ = Simulate();
  }

  double Simulate() {
    ++simulations_;
    return sim_.IterationSeconds(plan_);
  }

  // Tries each option for tensor i, keeps the best if it beats the current plan.
  bool TryOptions(int i, const std::vector<TensorStrategy>& options) {
    const TensorStrategy keep = plan_[i];
    TensorStrategy winner = keep;
    double winner_s = best_;
    for (const TensorStrategy& o : options) {
      if (o == keep) continue;
      plan_[i] = o;
      const double s = Simulate();
      if (Better(s, winner_s)) {
        winner = o;
        winner_s = s;
      }
    }
    plan_[i] = winner;
    if (winner == keep) return false;
    best_ = winner_s;
    return true;
  }

  // Tensors from `first` on, largest first, ties by index.
  std::vector<int> Candidates(int first) const {
    std::vector<int> order(sim_.num_tensors() - first);
    std::iota(order.begin(), order.end(), first);
    const auto& t = sim_.profile().tensors;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return t[a].elements > t[b].elements; });
    return order;
  }

  int FirstExposed() const {
    Result<Timeline> t = sim_.Run(plan_);
    return t.ok() ? LastCommGroupStart(*t) : 0;
  }

  const TimelineSimulator& sim_;
  std::vector<TensorStrategy> plan_;
  double best_ = 0;
  int64_t simulations_ = 0;
};

std::vector<TensorStrategy> Options(const CostModel& m, Placement p, bool with_none) {
  std::vector<TensorStrategy> out;
  for (int c = 0; c < static_cast<int>(m.codecs.size()); ++c) {
    const bool none = m.codecs[c].is_none();
    if (none && !with_none) continue;
    out.push_back({c, none ? Placement::kCompute : p});
  }
  return out;
}

}  // namespace

int LastCommGroupStart(const Timeline& t) {
  int start = 0;
  for (int i = 0; i < static_cast<int>(t.tensors.size()); ++i) {
    if (t.tensors[i].link_start_s <= t.tensors[i].link_ready_s) start = i;
  }
  return start;
}

Status ValidatePlacements(std::span<const Placement> placements) {
  if (placements.empty()) return InvalidArgumentError("placements: none allowed");
  for (size_t i = 0; i < placements.size(); ++i) {
    if (placements[i] > Placement::kLink) {
      return InvalidArgumentError("placements: unknown placement " +
                                  std::to_string(static_cast<int>(placements[i])));
    }
    for (size_t j = 0; j < i; ++j) {
      if (placements[j] == placements[i]) {
        return InvalidArgumentError(std::string("placements: \"") + PlacementName(placements[i]) +
                                    "\" listed twice");
      }
    }
  }
  return OkStatus();
}

namespace {

struct Search {
  // Per allowed placement, in the options' order: every codec there (the first also "none").
  std::vector<std::vector<TensorStrategy>> by_placement;
  std::vector<TensorStrategy> all;  // "none", then every codec in every allowed placement
};

// (c), (d) and the refinement passes over `candidates`, from g's current plan.
void Improve(Greedy& g, const std::vector<int>& candidates, const Search& s,
             const EspressoOptions& options) {
  for (const std::vector<TensorStrategy>& in_placement : s.by_placement) {
    for (int i : candidates) g.TryOptions(i, in_placement);
  }
  for (int pass = 0; pass < options.refine_passes; ++pass) {
    bool changed = false;
    for (int i : candidates) changed |= g.TryOptions(i, s.all);
    if (!changed) break;
  }
}

// Pairwise moves among the `k` largest candidates: escapes plateaus where one tensor must
// give up compression for another to gain it.
bool PairMoves(Greedy& g, const std::vector<int>& candidates, const Search& s, int k) {
  const int n = std::min<int>(k, candidates.size());
  bool changed = false;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const int i = candidates[a], j = candidates[b];
      const TensorStrategy keep_i = g.plan_[i], keep_j = g.plan_[j];
      TensorStrategy best_i = keep_i, best_j = keep_j;
      double best = g.best_;
      for (const TensorStrategy& oi : s.all) {
        for (const TensorStrategy& oj : s.all) {
          g.plan_[i] = oi;
          g.plan_[j] = oj;
          const double t = g.Simulate();
          if (Better(t, best)) {
            best = t;
            best_i = oi;
            best_j = oj;
          }
        }
      }
      g.plan_[i] = best_i;
      g.plan_[j] = best_j;
      if (best_i != keep_i || best_j != keep_j) {
        g.best_ = best;
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace

Result<PlanReport> EspressoPlan(const TimelineSimulator& sim, const EspressoOptions& options) {
  const CostModel& m = sim.model();
  const int none = m.Find("none");
  if (none < 0) return InvalidArgumentError("EspressoPlan: the cost model has no \"none\" codec");
  LOOM_RETURN_IF_ERROR(ValidatePlacements(options.placements).WithContext("EspressoPlan"));
  Search search;
  for (Placement p : options.placements) {
    search.by_placement.push_back(Options(m, p, /*with_none=*/search.by_placement.empty()));
    search.all.insert(search.all.end(), search.by_placement.back().begin(),
                      search.by_placement.back().end());
  }
  Greedy g(sim, none);
  PlanReport r;
  r.uncompressed_s = g.best_;

  // The best uniform plan, for the report (and as a starting point below).
  r.best_single = {none, Placement::kCompute};
  r.best_single_s = r.uncompressed_s;
  for (const TensorStrategy& o : search.all) {
    if (o.codec == none) continue;
    g.plan_.assign(sim.num_tensors(), o);
    const double s = g.Simulate();
    if (Better(s, r.best_single_s)) {
      r.best_single = o;
      r.best_single_s = s;
    }
  }
  g.plan_.assign(sim.num_tensors(), TensorStrategy{none, Placement::kCompute});

  // Start 1, Espresso's order. (a) hidden tensors stay uncompressed.
  int first = options.keep_hidden_uncompressed ? g.FirstExposed() : 0;
  const std::vector<int> exposed = g.Candidates(first);
  // (b) fp16 where it helps, then the hidden prefix under the current plan.
  if (const int fp16 = m.Find("fp16"); fp16 >= 0) {
    for (int i : exposed) g.TryOptions(i, {{fp16, options.placements.front()}});
    if (options.keep_hidden_uncompressed) first = std::max(first, g.FirstExposed());
  }
  r.first_candidate = first;
  Improve(g, g.Candidates(first), search, options);
  std::vector<TensorStrategy> best_plan = g.plan_;
  double best_s = g.best_;

  auto consider = [&](const std::vector<TensorStrategy>& start, double start_s,
                      const std::vector<int>& candidates) {
    g.plan_ = start;
    g.best_ = start_s;
    Improve(g, candidates, search, options);
    if (Better(g.best_, best_s)) {
      best_plan = g.plan_;
      best_s = g.best_;
    }
  };
  if (options.multi_start) {
    // Start 2: the same without the fp16 step, which can commit a large tensor too early.
    consider(std::vector<TensorStrategy>(sim.num_tensors(), {none, Placement::kCompute}),
             r.uncompressed_s, exposed);
    // Start 3: the best uniform plan, every tensor a candidate.
    consider(std::vector<TensorStrategy>(sim.num_tensors(), r.best_single), r.best_single_s,
             g.Candidates(0));
  }
  if (options.pair_moves > 1) {
    g.plan_ = best_plan;
    g.best_ = best_s;
    const std::vector<int> candidates = g.Candidates(r.first_candidate);
    while (PairMoves(g, candidates, search, options.pair_moves)) {
      Improve(g, candidates, search, options);
    }
    best_plan = g.plan_;
    best_s = g.best_;
  }
  r.plan = best_plan;
  r.plan_s = best_s;
  r.simulations = g.simulations_;
  return r;
}

}  // namespace loom::compress::planner
