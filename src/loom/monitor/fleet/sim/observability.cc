#include "loom/monitor/fleet/sim/observability.h"

#include <algorithm>

namespace loom::monitor {

bool NeedsRunningJob(const std::string& effect) {
  return effect == "fail_slow" || effect == "link_drop";
}

std::vector<double> RunningFractions(const SimConfig& config, const SimPlan& plan,
                                     int64_t detect_window_s) {
  const int64_t T = std::max<int64_t>(0, config.seconds);
  // Seconds stopped by a pause, and how many stall roots halt the job in each second (a
  // fault's own stall is subtracted when its window is examined).
  std::vector<uint8_t> paused(T, 0);
  std::vector<int> stalls(T, 0);
  for (const SimRegime& r : plan.regimes) {
    if (r.kind == "speed_change") continue;
    for (int64_t t = std::max<int64_t>(0, r.onset_s); t < std::min(T, r.end_s); ++t) paused[t] = 1;
  }
  auto halts = [&config](const SimFault& f) {  // as fleet_simulator.cc's RenderGlobal
    return f.effect == "stall" && f.label.machine >= 0 && f.label.machine < config.machines;
  };
  for (const SimFault& f : plan.faults) {
    if (!halts(f)) continue;
    for (int64_t t = std::max<int64_t>(0, f.label.onset_s); t < std::min(T, f.label.end_s); ++t) {
      ++stalls[t];
    }
  }
  std::vector<double> out;
  out.reserve(plan.faults.size());
  for (const SimFault& f : plan.faults) {
    const int64_t a = std::clamp<int64_t>(f.label.onset_s, 0, T);
    const int64_t b = std::clamp<int64_t>(
        std::min(f.label.end_s, f.label.onset_s + detect_window_s), a, T);
    const int own = halts(f) ? 1 : 0;
    int64_t running = 0;
    for (int64_t t = a; t < b; ++t) running += !paused[t] && stalls[t] - own == 0;
    out.push_back(b > a ? static_cast<double>(running) / static_cast<double>(b - a) : 0.0);
  }
  return out;
}

std::vector<uint8_t> ObservableFaults(const SimPlan& plan, const std::vector<double>& running) {
  std::vector<uint8_t> out(plan.faults.size(), 1);
  for (size_t k = 0; k < plan.faults.size() && k < running.size(); ++k) {
    if (NeedsRunningJob(plan.faults[k].effect)) {
      out[k] = running[k] >= kObservableRunningFraction;
    }
  }
  return out;
}

int DropUnobservableFaults(const SimConfig& config, int64_t detect_window_s, SimPlan* plan) {
  const std::vector<uint8_t> seen =
      ObservableFaults(*plan, RunningFractions(config, *plan, detect_window_s));
  std::vector<SimFault> kept;
  for (size_t k = 0; k < plan->faults.size(); ++k) {
    if (seen[k] || !plan->faults[k].label.must_alarm) kept.push_back(plan->faults[k]);
  }
  const int removed = static_cast<int>(plan->faults.size() - kept.size());
  plan->faults = std::move(kept);
  return removed;
}

}  // namespace loom::monitor
