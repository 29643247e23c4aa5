// Planning half of the fleet simulator: validates a SimConfig and draws a job's faults and
// global regime changes (see fleet_simulator.h for the model and the fault-type mix).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/philox.h"
#include "loom/monitor/fleet/sim/fleet_simulator.h"
#include "loom/monitor/fleet/sim/internal/sim_streams.h"

namespace loom::monitor {
namespace {

// InfiniteHBD-Trace hardware fault counts (spec §6) mapped to simulator types; the mapping is
// documented in fleet_simulator.h.
struct TypeWeight {
  const char* type;
  double weight;
};
constexpr TypeWeight kTypeMix[] = {
    {"stall", 111},       // DBE ECC 60 + device unknown error 40 + xid 11
    {"fail_slow", 71},    // PCIe link width low 25 + GPU not itemised 13 + fan (throttle) 33
    {"link_drop", 40},    // link down 40
    {"pfc_storm", 30},    // NIC 30
    {"unreachable", 35},  // nvidia-smi timeout 9 + PSU 26
    {"concurrent", 15},   // switch / rack events [G]
};
constexpr const char* kTransientEffects[] = {"stall", "pfc_storm", "link_drop", "fail_slow"};

double Uniform(PhiloxStream& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng.NextUniform());
}
double LogUniform(PhiloxStream& rng, double lo, double hi) {
  return std::exp(Uniform(rng, std::log(lo), std::log(hi)));
}
// Exponential waiting time at `rate` per second.
double Exponential(PhiloxStream& rng, double rate) {
  return -std::log(1.0 - static_cast<double>(rng.NextUniform())) / rate;
}

std::string DrawType(PhiloxStream& rng) {
  double total = 0;
  for (const TypeWeight& w : kTypeMix) total += w.weight;
  double u = Uniform(rng, 0, total);
  for (const TypeWeight& w : kTypeMix) {
    if (u < w.weight) return w.type;
    u -= w.weight;
  }
  return kTypeMix[0].type;
}

// The 3D-parallel group of `machine` minus the machine itself.
std::vector<int> GroupOf(const SimConfig& c, int machine) {
  std::vector<int> g;
  if (c.group_size <= 1) return g;
  const int first = machine / c.group_size * c.group_size;
  for (int m = first; m < std::min(first + c.group_size, c.machines); ++m) {
    if (m != machine) g.push_back(m);
  }
  return g;
}

int RackCount(const SimConfig& c, int machine) {
  const int first = machine / c.rack_size * c.rack_size;
  return std::min(first + c.rack_size, c.machines) - first;
}

// Machines whose series a fault touches: root, concurrent members and the group.
std::vector<int> Touched(const SimFault& f) {
  std::vector<int> t = f.label.group;
  t.push_back(f.label.machine);
  return t;
}

bool Overlaps(const std::vector<std::vector<std::pair<int64_t, int64_t>>>& busy,
              const SimFault& f) {
  for (int m : Touched(f)) {
    for (const auto& [a, b] : busy[m]) {
      if (f.label.onset_s < b && a < f.label.end_s) return true;
    }
  }
  return false;
}

// Fills type-specific severities with draws from `rng` (nullptr: mid-range values).
void SetSeverity(SimFault* f, PhiloxStream* rng) {
  auto pick = [rng](double lo, double hi, bool log_scale = false) {
    if (rng == nullptr) return log_scale ? std::sqrt(lo * hi) : (lo + hi) / 2;
    return log_scale ? LogUniform(*rng, lo, hi) : Uniform(*rng, lo, hi);
  };
  const std::string& e = f->effect;
  if (e == "stall") {
    f->stall_stuck = rng != nullptr && rng->NextUniform() < 0.5f;
  } else if (e == "fail_slow") {
    f->stretch = rng == nullptr ? 1.5 : LogUniform(*rng, 1.05, 2.0);
  } else if (e == "pfc_storm") {
    f->pfc_add = pick(20, 80);
    f->net_factor = pick(0.3, 0.6);
  } else if (e == "link_drop") {
    f->nvlink_factor = pick(0.1, 0.5);
    f->net_factor = pick(0.3, 0.7);
  } else if (e == "concurrent") {
    f->net_factor = pick(0.05, 0.3);
    f->pfc_add = pick(5, 20);
  }
}

// Builds the fault (type, members, group); `rng` draws members and severities.
SimFault BuildFault(const SimConfig& c, const std::string& type, int machine, int64_t onset,
                    int64_t end, PhiloxStream* rng) {
  SimFault f;
  f.label.type = type;
  f.label.machine = machine;
  f.label.onset_s = onset;
  f.label.end_s = end;
  f.effect = type;
  if (type == "transient") {
    f.label.must_alarm = false;
    f.effect = rng == nullptr ? "stall" : kTransientEffects[rng->NextBelow(4)];
  } else if (type == "concurrent") {
    const int first = machine / c.rack_size * c.rack_size;
    std::vector<int> others;
    for (int m = first; m < first + RackCount(c, machine); ++m) {
      if (m != machine) others.push_back(m);
    }
    int k = 1 + (rng == nullptr ? 1 : static_cast<int>(rng->NextBelow(3)));  // 2-4 in total
    k = std::min<int>(k, static_cast<int>(others.size()));
    if (rng != nullptr) {  // partial Fisher-Yates
      for (int i = 0; i < k; ++i) {
        const size_t j = i + rng->NextBelow(others.size() - i);
        std::swap(others[i], others[j]);
      }
    }
    others.resize(k);
    std::sort(others.begin(), others.end());
    f.label.group = others;
  } else if (type != "unreachable") {
    f.label.group = GroupOf(c, machine);
  }
  SetSeverity(&f, rng);
  return f;
}

}  // namespace

const std::vector<std::string>& SimMetricNames() {
  static const std::vector<std::string> kNames = {"pfc_tx",    "cpu_busy",   "gpu_duty",
                                                  "gpu_power", "gpu_tensor", "nvlink_bw",
                                                  "net_tx",    "step_time"};
  return kNames;
}

const std::vector<std::string>& SimFaultTypes() {
  static const std::vector<std::string> kTypes = {
      "stall", "pfc_storm", "link_drop", "fail_slow", "unreachable", "concurrent", "transient"};
  return kTypes;
}

Status ValidateSimConfig(const SimConfig& c) {
  auto bad = [](const std::string& field, const std::string& rule, double got) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", got);
    return InvalidArgumentError("simulator config: " + field + " must be " + rule + ", got " + buf);
  };
  if (c.machines < 2 || c.machines > 100000) return bad("machines", "in [2, 100000]", c.machines);
  if (c.seconds < 60) return bad("seconds", ">= 60", static_cast<double>(c.seconds));
  if (static_cast<double>(c.machines) * c.seconds * SimMetricNames().size() > 4e9) {
    return InvalidArgumentError(
        "simulator config: machines x seconds x metrics exceeds 4e9 "
        "samples (16 GB); simulate a shorter job");
  }
  if (c.group_size < 1) return bad("group_size", ">= 1", c.group_size);
  if (c.rack_size < 1) return bad("rack_size", ">= 1", c.rack_size);
  if (!(c.faults_per_machine_day >= 0 && c.faults_per_machine_day <= 1000)) {
    return bad("faults_per_machine_day", "in [0, 1000]", c.faults_per_machine_day);
  }
  if (c.continuity_s < 2) return bad("continuity_s", ">= 2", static_cast<double>(c.continuity_s));
  if (!(c.transient_fraction >= 0 && c.transient_fraction <= 1)) {
    return bad("transient_fraction", "in [0, 1]", c.transient_fraction);
  }
  if (c.min_fault_s < c.continuity_s) {
    return bad("min_fault_s", ">= continuity_s (" + std::to_string(c.continuity_s) + ")",
               static_cast<double>(c.min_fault_s));
  }
  if (c.max_fault_s < c.min_fault_s) {
    return bad("max_fault_s", ">= min_fault_s (" + std::to_string(c.min_fault_s) + ")",
               static_cast<double>(c.max_fault_s));
  }
  if (c.warmup_s < 0) return bad("warmup_s", ">= 0", static_cast<double>(c.warmup_s));
  if (!(c.step_period_s >= 2 && c.step_period_s <= 600)) {
    return bad("step_period_s", "in [2, 600]", c.step_period_s);
  }
  if (!(c.compute_fraction > 0.05 && c.compute_fraction < 0.95)) {
    return bad("compute_fraction", "in (0.05, 0.95)", c.compute_fraction);
  }
  if (!(c.phase_offset_s >= 0 && c.phase_offset_s <= c.step_period_s)) {
    return bad("phase_offset_s", "in [0, step_period_s]", c.phase_offset_s);
  }
  if (!(c.phase_jitter_s >= 0 && c.phase_jitter_s <= c.step_period_s)) {
    return bad("phase_jitter_s", "in [0, step_period_s]", c.phase_jitter_s);
  }
  if (!(c.ar_coeff >= 0 && c.ar_coeff < 1)) return bad("ar_coeff", "in [0, 1)", c.ar_coeff);
  if (!(c.noise_sigma >= 0 && c.noise_sigma <= 1)) {
    return bad("noise_sigma", "in [0, 1]", c.noise_sigma);
  }
  if (!(c.spikes_per_machine_hour >= 0 && c.spikes_per_machine_hour <= 3600)) {
    return bad("spikes_per_machine_hour", "in [0, 3600]", c.spikes_per_machine_hour);
  }
  if (!(c.regime_changes_per_hour >= 0 && c.regime_changes_per_hour <= 60)) {
    return bad("regime_changes_per_hour", "in [0, 60]", c.regime_changes_per_hour);
  }
  if (!(c.group_effect_strength >= 0 && c.group_effect_strength <= 1)) {
    return bad("group_effect_strength", "in [0, 1]", c.group_effect_strength);
  }
  if (c.group_delay_s < 0)
    return bad("group_delay_s", ">= 0", static_cast<double>(c.group_delay_s));
  return OkStatus();
}

SimFault MakeFault(const SimConfig& config, const std::string& type, int machine, int64_t onset_s,
                   int64_t end_s) {
  return BuildFault(config, type, machine, onset_s, end_s, nullptr);
}

SimPlan PlanJob(const SimConfig& c, uint64_t seed) {
  SimPlan plan;
  // Regime changes: Poisson arrivals; pauses never overlap; the period factor stays in
  // [0.6, 1.6] of the configured step period.
  {
    PhiloxStream rng(seed, internal::kRegimeStream);
    const double rate = c.regime_changes_per_hour / 3600.0;
    double t = 60;
    double speed = 1.0;
    while (rate > 0) {
      t += Exponential(rng, rate);
      if (t >= static_cast<double>(c.seconds)) break;
      SimRegime r;
      r.onset_s = static_cast<int64_t>(t);
      const float u = rng.NextUniform();
      if (u < 0.8f) {
        r.kind = u < 0.4f ? "eval_pause" : "checkpoint_pause";
        const double d = u < 0.4f ? Uniform(rng, 60, 300) : Uniform(rng, 30, 180);
        r.end_s = std::min<int64_t>(c.seconds, r.onset_s + static_cast<int64_t>(d));
        t = static_cast<double>(r.end_s);
      } else {
        r.kind = "speed_change";
        r.end_s = r.onset_s;
        double f = rng.NextUniform() < 0.5f ? Uniform(rng, 0.75, 0.9) : Uniform(rng, 1.1, 1.25);
        f = std::clamp(speed * f, 0.6, 1.6) / speed;
        speed *= f;
        r.speed_factor = f;
      }
      plan.regimes.push_back(r);
    }
  }
  // Faults: Poisson arrivals over [warm-up, seconds - min_fault_s) at the configured rate.
  PhiloxStream rng(seed, internal::kFaultStream);
  const int64_t first = std::min<int64_t>(c.warmup_s, c.seconds / 2);
  const int64_t last = c.seconds - c.min_fault_s;
  const double rate = c.faults_per_machine_day * c.machines / 86400.0;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> busy(c.machines);
  double t = static_cast<double>(first);
  while (rate > 0 && last > first) {
    t += Exponential(rng, rate);
    if (t >= static_cast<double>(last)) break;
    const int64_t onset = static_cast<int64_t>(t);
    const bool transient = rng.NextUniform() < c.transient_fraction;
    std::string type = transient ? "transient" : DrawType(rng);
    int64_t duration;
    if (transient) {
      const int64_t lo = std::max<int64_t>(1, c.continuity_s / 10);
      duration = lo + static_cast<int64_t>(rng.NextBelow(c.continuity_s - lo));  // < T_c
    } else {
      duration = std::llround(
          LogUniform(rng, static_cast<double>(c.min_fault_s), static_cast<double>(c.max_fault_s)));
    }
    const int64_t end = std::min(c.seconds, onset + duration);
    for (int attempt = 0; attempt < 20; ++attempt) {
      const int machine = static_cast<int>(rng.NextBelow(c.machines));
      std::string t_type = type;
      if (t_type == "concurrent" && RackCount(c, machine) < 2) t_type = "link_drop";
      SimFault f = BuildFault(c, t_type, machine, onset, end, &rng);
      if (Overlaps(busy, f)) continue;
      for (int m : Touched(f)) busy[m].emplace_back(onset, end);
      plan.faults.push_back(std::move(f));
      break;
    }
  }
  return plan;
}

}  // namespace loom::monitor
