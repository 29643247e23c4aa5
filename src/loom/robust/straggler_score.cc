#include "loom/robust/straggler_score.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace loom::robust {

void StragglerScore::Add(const std::string& machine, double compute_s) {
  if (!(compute_s >= 0)) return;  // NaN or negative: no sample
  auto& d = samples_[machine];
  d.push_back(compute_s);
  while (static_cast<int>(d.size()) > options_.window) d.pop_front();
}

double StragglerScore::MedianOf(const std::string& machine) const {
  auto it = samples_.find(machine);
  if (it == samples_.end() || static_cast<int>(it->second.size()) < options_.min_samples) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<double> v(it->second.begin(), it->second.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::map<std::string, double> StragglerScore::Scores() const {
  std::map<std::string, double> medians;
  for (const auto& [m, d] : samples_) {
    const double med = MedianOf(m);
    if (med == med) medians[m] = med;
  }
  std::map<std::string, double> scores;
  if (medians.size() < 2) return scores;
  double ref = std::numeric_limits<double>::infinity();
  for (const auto& [m, med] : medians) ref = std::min(ref, med);
  for (const auto& [m, med] : medians) scores[m] = med > 0 ? ref / med : 1.0;
  return scores;
}

}  // namespace loom::robust
