// ContinuityGate: Minder's continuity rule. Each second a detector proposes at most one candidate
// machine per channel (metric); the gate alerts on channel c when the same machine has been c's
// candidate (score >= threshold, or data missing) for continuity_s consecutive seconds. Channels
// are walked in priority order and the first satisfied one names the alert.
//
//   ContinuityGate gate({.threshold = 3.5, .continuity_s = 30});
//   GateDecision d = gate.Step(step, t);   // step: ScoreStep from a detector at second t
//   if (d.alert) ...d.machine, d.channel...
//
// With min_fraction = 1 a candidate run breaks when the candidate changes or disappears; with
// min_fraction < 1 the machine must be the candidate in at least that fraction of the last T_c
// seconds (and now). A skipped second (calls at t and t+2) restarts every history.
// continuity_s <= 1 means "no continuity" (alert on every candidate).
// Score-adaptive confirmation (fast_confirm_s > 0): a candidate second counts with weight
// clamp(score / threshold, 1, need / fast_confirm_s) instead of 1 when at least
// fast_min_channels channels name the same machine that second, and the gate confirms once the
// machine's weights over the last T_c seconds reach need (= ceil(min_fraction x T_c)). A score
// near the threshold needs the full T_c; a score far above it confirms after fast_confirm_s
// seconds. A missing-data candidate (unreachable machine, missed heartbeats) counts with weight
// need / missing_confirm_s when missing_confirm_s > 0. Both off (0) = Minder's rule.
// Thread-safety: not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace loom::monitor {

// One channel's outcome at one second.
struct ChannelScore {
  std::string metric;  // channel name: a metric, "all", "missing", ...
  int machine = -1;    // highest-scoring machine, -1 = none (e.g. too few machines)
  double score = -std::numeric_limits<double>::infinity();
  bool missing = false;  // `machine` has no data in the window: always a candidate
  // The next-highest-scoring machines after `machine`, best first (-1 = none; a detector that
  // does not fill them leaves them empty). The gate ignores them; the evaluation records them
  // so it can replay the gate with already-flagged machines left out (concurrency exclusion).
  static constexpr int kRunnersUp = 3;
  std::array<int, kRunnersUp> runner_up = {-1, -1, -1};
  std::array<float, kRunnersUp> runner_up_score = {-std::numeric_limits<float>::infinity(),
                                                   -std::numeric_limits<float>::infinity(),
                                                   -std::numeric_limits<float>::infinity()};
};

struct ScoreStep {
  std::vector<ChannelScore> channels;  // priority order
  std::vector<float> machine_scores;   // per machine, first channel; NaN = missing
};

struct GateOptions {
  double threshold = 3.5;     // minimum channel score to be a candidate
  int64_t continuity_s = 30;  // T_c; Minder's batch setting is 240
  // Fraction of the last T_c seconds the channel's candidate must have been this machine.
  // 1.0 = Minder's strict rule (the same candidate every second).
  double min_fraction = 1.0;
  // Corroboration: a channel's candidate counts only if at least this many channels name the
  // same machine at that second (a missing-data candidate always counts). 1 = Minder.
  // Capped at the detector's channel count.
  int min_channels = 1;
  // Score-adaptive gate: the fewest candidate seconds that can confirm (0 = off = count every
  // second as 1), and how many channels must name the machine that second for its score to
  // weigh more than 1 (a one-metric excursion never takes the fast path when > 1).
  int64_t fast_confirm_s = 0;
  int fast_min_channels = 2;
  // Missing-data candidates confirm after this many seconds (0 = like any other candidate).
  int64_t missing_confirm_s = 0;
};

// Weight of one candidate second under `options` (see ContinuityGate): `need` = hits required,
// `agree` = channels naming the machine this second.
double CandidateWeight(const GateOptions& options, int need, double score, bool missing, int agree);

struct GateDecision {
  int candidate = -1;  // the first channel (in priority order) with a candidate this second
  bool alert = false;
  int machine = -1;
  int channel = -1;
  bool missing = false;
  double score = 0;
};

class ContinuityGate {
 public:
  explicit ContinuityGate(GateOptions options) : options_(options) {}
  GateDecision Step(const ScoreStep& step, int64_t t);
  void Reset();
  const GateOptions& options() const { return options_; }
  void set_threshold(double threshold) { options_.threshold = threshold; }

 private:
  GateOptions options_;
  // Per channel: the last T_c candidates (ring, -1 = none) and how often each machine occurs.
  struct History {
    std::vector<int> ring;
    size_t head = 0, filled = 0;
    std::vector<int> count;  // by machine
    std::vector<double> weight;       // ring of candidate weights (parallel to ring)
    std::vector<double> weight_sum;   // by machine
  };
  int64_t last_t_ = std::numeric_limits<int64_t>::min();
  std::vector<History> history_;
  std::vector<int> cand_;
  std::vector<int> support_;
  std::vector<int> agree_;
};

}  // namespace loom::monitor
