// StragglerScore: NVRx's straggler formula on what the executors report. Each machine's compute
// time per step (forward + backward as the trainer reports it, outside collective waits: a fast
// rank waits for a slow one inside the collectives, so only the slow one computes long) is kept
// over the last `window` heartbeats; score = min over machines of the median / own median, and a machine scoring below
// `threshold` (NVRx: 0.75) is a straggler. Synchronous training makes every rank's *step* time
// equal, which is why the step time alone cannot name anyone.
//
//   StragglerScore s({.window = 8, .threshold = 0.75});
//   s.Add("m1", 0.031);  ...
//   for (auto& [machine, score] : s.Scores()) if (score < 0.75) ...
//
// Thread-safety: not thread-safe.
#pragma once

#include <deque>
#include <map>
#include <string>

namespace loom::robust {

struct StragglerOptions {
  int window = 8;          // samples per machine (one per heartbeat with progress)
  int min_samples = 4;     // no score before this many
  double threshold = 0.75;  // NVRx's value (also the driver's default; 0 turns it off)
};

class StragglerScore {
 public:
  explicit StragglerScore(StragglerOptions options) : options_(options) {}
  void Add(const std::string& machine, double compute_s);
  void Clear() { samples_.clear(); }
  // Score per machine with enough samples (only when at least two machines have them).
  std::map<std::string, double> Scores() const;
  double MedianOf(const std::string& machine) const;
  const StragglerOptions& options() const { return options_; }

 private:
  StragglerOptions options_;
  std::map<std::string, std::deque<double>> samples_;
};

}  // namespace loom::robust
