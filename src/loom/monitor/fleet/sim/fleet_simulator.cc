// Rendering half of the fleet simulator: turns a SimPlan into a metric series (model in
// fleet_simulator.h). Two passes: a global pass over time (step clock, pauses, job-wide halt and
// slow-down, observed step time), then one pass per machine (step-phase activity mix, fault
// effects, gains, AR(1) Student-t noise), then spikes.
#include "loom/monitor/fleet/sim/fleet_simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "loom/base/philox.h"
#include "loom/monitor/fleet/sim/internal/sim_streams.h"

namespace loom::monitor {
namespace {

enum Metric { kPfc, kCpu, kDuty, kPower, kTensor, kNvlink, kNet, kStep, kMetrics };
// What a machine's GPU/host is doing during a (fraction of a) second.
enum Activity { kCompute, kComm, kWait, kIdle, kStuck, kEval, kCkpt, kActivities };
enum Mode : uint8_t { kRunning, kHalted, kEvalPause, kCkptPause };

// Mean level of each metric per activity (step_time is handled separately). Units: pfc_tx
// kframes/s, cpu_busy fraction, gpu_duty %, gpu_power W, gpu_tensor fraction, nvlink_bw GB/s,
// net_tx Gbit/s.
constexpr float kLevel[kStep][kActivities] = {
    // compute comm  wait   idle   stuck  eval   ckpt
    {0.5f, 3.0f, 0.2f, 0.0f, 0.0f, 0.3f, 4.0f},      // pfc_tx
    {0.35f, 0.45f, 0.3f, 0.05f, 0.08f, 0.6f, 0.9f},  // cpu_busy
    {98.f, 70.f, 85.f, 2.f, 100.f, 60.f, 5.f},       // gpu_duty
    {380.f, 180.f, 130.f, 65.f, 95.f, 250.f, 90.f},  // gpu_power
    {0.55f, 0.02f, 0.0f, 0.0f, 0.0f, 0.3f, 0.0f},    // gpu_tensor
    {10.f, 180.f, 2.f, 0.f, 0.f, 5.f, 2.f},          // nvlink_bw
    {2.f, 60.f, 0.5f, 0.1f, 0.1f, 1.f, 20.f},        // net_tx
};
// Added per unit of time in the PFC burst at the start of the communication phase.
constexpr float kBurstLevel[kStep] = {60.f, 0.f, 0.f, 0.f, 0.f, 0.f, 5.f};
constexpr double kBurstSeconds = 0.5;
// Noise scale of each metric (its typical range); step_time noise is relative.
constexpr float kNoiseScale[kStep] = {20.f, 1.f, 100.f, 400.f, 0.6f, 200.f, 60.f};
constexpr float kStepNoiseRelative = 0.3f;  // x noise_sigma
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kUpper[kMetrics] = {kInf, 1.f, 100.f, kInf, 1.f, kInf, kInf, kInf};
constexpr float kGainSigma = 0.02f;

// Student-t (3 degrees of freedom) scaled to unit variance, as a 2^16-entry quantile table
// indexed by 16 random bits: heavy tails at the cost of a table load.
const std::array<float, 65536>& StudentT3Table() {
  static const std::array<float, 65536> kTable = [] {
    std::array<float, 65536> table{};
    const double r3 = std::sqrt(3.0);
    auto cdf = [r3](double x) {
      const double y = x / r3;
      return 0.5 + (std::atan(y) + y / (1 + y * y)) / M_PI;
    };
    auto pdf = [](double x) { return 6 * std::sqrt(3.0) / (M_PI * (3 + x * x) * (3 + x * x)); };
    // Upper half by Newton's method, each quantile starting from the previous one (the CDF is
    // concave there, so the iterates approach the root from below); lower half by symmetry.
    double x = 0;
    for (int k = 32768; k < 65536; ++k) {
      const double p = (k + 0.5) / 65536.0;
      for (int it = 0; it < 50; ++it) {
        const double step = (p - cdf(x)) / pdf(x);
        x += step;
        if (std::fabs(step) < 1e-9 * (1 + std::fabs(x))) break;
      }
      table[k] = static_cast<float>(x / r3);
      table[65535 - k] = -table[k];
    }
    return table;
  }();
  return kTable;
}

// Length of [p, p + d) (mod 1, d < 1) inside [a, b) with 0 <= a <= b <= 1.
double Overlap(double p, double d, double a, double b) {
  auto ov = [a, b](double x0, double x1) {
    return std::max(0.0, std::min(x1, b) - std::max(x0, a));
  };
  if (p + d <= 1.0) return ov(p, p + d);
  return ov(p, 1.0) + ov(0.0, p + d - 1.0);
}

// Job-wide state per second.
struct GlobalTrack {
  std::vector<uint8_t> mode;
  std::vector<double> phase;   // step phase in [0, 1) at the start of the second
  std::vector<float> dphase;   // phase advance during the second (0 when not running)
  std::vector<float> stretch;  // slowest machine's compute stretch (fail-slow), >= 1
  std::vector<float> step_time;
};

// One fault's effect on one machine, with strength g (1 on the root, group_effect_strength on
// its group).
enum class Kind { kStall, kFailSlow, kUnreachable, kOther };
struct Effect {
  int64_t start = 0, end = 0;
  const SimFault* fault = nullptr;
  float g = 1.f;
  Kind kind = Kind::kOther;
};

Kind KindOf(const SimFault& f) {
  if (f.effect == "stall") return Kind::kStall;
  if (f.effect == "fail_slow") return Kind::kFailSlow;
  if (f.effect == "unreachable") return Kind::kUnreachable;
  return Kind::kOther;
}

std::vector<std::vector<Effect>> EffectsPerMachine(const SimConfig& c, const SimPlan& plan) {
  std::vector<std::vector<Effect>> per(c.machines);
  for (const SimFault& f : plan.faults) {
    const FaultLabel& l = f.label;
    if (l.machine < 0 || l.machine >= c.machines) continue;
    const Kind kind = KindOf(f);
    per[l.machine].push_back({l.onset_s, l.end_s, &f, 1.f, kind});
    const bool members_fail = l.type == "concurrent";
    const int64_t start = members_fail ? l.onset_s : std::min(l.end_s, l.onset_s + c.group_delay_s);
    const float g = members_fail ? 1.f : static_cast<float>(c.group_effect_strength);
    for (int m : l.group) {
      if (m >= 0 && m < c.machines && start < l.end_s)
        per[m].push_back({start, l.end_s, &f, g, kind});
    }
  }
  for (auto& v : per) {
    std::stable_sort(v.begin(), v.end(),
                     [](const Effect& a, const Effect& b) { return a.start < b.start; });
  }
  return per;
}

GlobalTrack RenderGlobal(const SimConfig& c, uint64_t seed, const SimPlan& plan,
                         const std::vector<std::vector<Effect>>& effects) {
  const int64_t T = c.seconds;
  GlobalTrack g;
  g.mode.assign(T, kRunning);
  g.phase.assign(T, 0.0);
  g.dphase.assign(T, 0.f);
  g.stretch.assign(T, 1.f);
  g.step_time.assign(T, 0.f);
  std::vector<float> speed(T, 1.f);
  for (const SimRegime& r : plan.regimes) {
    const int64_t a = std::clamp<int64_t>(r.onset_s, 0, T);
    if (r.kind == "speed_change") {
      for (int64_t t = a; t < T; ++t) speed[t] *= static_cast<float>(r.speed_factor);
    } else {
      const uint8_t m = r.kind == "eval_pause" ? kEvalPause : kCkptPause;
      for (int64_t t = a; t < std::clamp<int64_t>(r.end_s, 0, T); ++t) g.mode[t] = m;
    }
  }
  for (const auto& list : effects) {
    for (const Effect& e : list) {
      const int64_t a = std::max<int64_t>(0, e.start), b = std::min(T, e.end);
      if (e.kind == Kind::kStall && e.g == 1.f) {
        for (int64_t t = a; t < b; ++t) g.mode[t] = kHalted;  // synchronous: everyone waits
      } else if (e.kind == Kind::kFailSlow) {
        const float s = 1.f + e.g * static_cast<float>(e.fault->stretch - 1.0);
        for (int64_t t = a; t < b; ++t) g.stretch[t] = std::max(g.stretch[t], s);
      }
    }
  }
  // Step clock: the phase advances at 1 / period while running; the observed step time is the
  // last completed step's duration, or the running step's age if that is longer.
  PhiloxStream rng(seed, internal::kStepJitterStream);
  const double cf = c.compute_fraction;
  double phase = 0, step_start = 0, last_duration = c.step_period_s;
  double jitter = 1.0 + 0.01 * rng.NextNormal();
  for (int64_t t = 0; t < T; ++t) {
    g.phase[t] = phase;
    if (g.mode[t] == kRunning) {
      const double period = c.step_period_s * speed[t] * jitter * (cf * g.stretch[t] + 1 - cf);
      const double d = 1.0 / period;
      g.dphase[t] = static_cast<float>(d);
      phase += d;
      if (phase >= 1.0) {
        const double done = static_cast<double>(t) + (1.0 - g.phase[t]) / d;
        last_duration = done - step_start;
        step_start = done;
        phase -= 1.0;
        jitter = std::clamp(1.0 + 0.01 * rng.NextNormal(), 0.95, 1.05);
      }
    }
    g.step_time[t] = static_cast<float>(std::max(last_duration, t + 1.0 - step_start));
  }
  return g;
}

// Writes one machine's 8 rows.
void RenderMachine(const SimConfig& c, uint64_t seed, int machine, const GlobalTrack& g,
                   const std::vector<Effect>& effects, FleetSeries* out) {
  const int64_t T = c.seconds;
  PhiloxStream fixed(seed, internal::MachineStream(machine, 0));
  std::array<float, kMetrics> gain{};
  for (float& x : gain) x = 1.f + kGainSigma * fixed.NextNormal();
  // Phase offset: a constant part (the agent's sampling-clock offset) plus a part redrawn every
  // step (who reaches the collective first changes from step to step).
  const double constant_offset = c.phase_offset_s * fixed.NextNormal() / c.step_period_s;
  PhiloxStream jitter_rng(seed, internal::MachineStream(machine, 3));
  double offset = 0;

  PhiloxStream noise_rng(seed, internal::MachineStream(machine, 1));
  const std::array<float, 65536>& tt = StudentT3Table();
  const float a = static_cast<float>(c.ar_coeff);
  const float innov = static_cast<float>(c.noise_sigma * std::sqrt(1.0 - c.ar_coeff * c.ar_coeff));
  std::array<float, kMetrics> e{};
  auto draw = [&](std::array<float, kMetrics>& z) {
    for (int m = 0; m < kMetrics; m += 2) {
      const uint32_t u = noise_rng.NextU32();
      z[m] = tt[u & 0xffff];
      z[m + 1] = tt[u >> 16];
    }
  };
  draw(e);
  for (float& x : e) x *= static_cast<float>(c.noise_sigma);  // stationary start

  std::array<float*, kMetrics> row{};
  for (int m = 0; m < kMetrics; ++m) row[m] = &out->at(m, machine, 0);
  const double cf = c.compute_fraction;
  size_t cursor = 0;
  std::array<float, kMetrics> z{};
  for (int64_t t = 0; t < T; ++t) {
    draw(z);
    for (int m = 0; m < kMetrics; ++m) e[m] = a * e[m] + innov * z[m];
    if (t == 0 || g.phase[t] < g.phase[t - 1]) {  // a new step began
      const double o =
          constant_offset + c.phase_jitter_s * jitter_rng.NextNormal() / c.step_period_s;
      offset = o - std::floor(o);
    }
    while (cursor < effects.size() && effects[cursor].end <= t) ++cursor;
    const Effect* eff =
        cursor < effects.size() && effects[cursor].start <= t ? &effects[cursor] : nullptr;
    const SimFault* f = eff ? eff->fault : nullptr;
    if (f && eff->kind == Kind::kUnreachable && eff->g == 1.f) {
      for (int m = 0; m < kMetrics; ++m) row[m][t] = NAN;
      continue;
    }
    // Activity mix over [t, t + 1).
    std::array<float, kActivities> mix{};
    float burst = 0;
    switch (g.mode[t]) {
      case kEvalPause:
        mix[kEval] = 1;
        break;
      case kCkptPause:
        mix[kCkpt] = 1;
        break;
      case kHalted:
        mix[kWait] = 1;
        break;
      default: {
        const double S = g.stretch[t];
        double s = 1.0;
        if (f && eff->kind == Kind::kFailSlow) s = 1.0 + eff->g * (f->stretch - 1.0);
        s = std::min(s, S);
        const double denom = cf * S + 1 - cf;
        const double ce = cf * s / denom, we = cf * S / denom;  // compute end, wait end
        const double d = g.dphase[t];
        double p = g.phase[t] + offset;
        p -= std::floor(p);
        const float fc = static_cast<float>(Overlap(p, d, 0, ce) / d);
        const float fw = static_cast<float>(Overlap(p, d, ce, we) / d);
        mix[kCompute] = fc;
        mix[kWait] = fw;
        mix[kComm] = std::max(0.f, 1.f - fc - fw);
        const double bl = kBurstSeconds * d;
        burst = static_cast<float>(Overlap(p, d, we, std::min(1.0, we + bl)) / d);
      }
    }
    if (f && eff->kind == Kind::kStall) {
      const float gs = eff->g;
      for (float& x : mix) x *= 1.f - gs;
      mix[f->stall_stuck ? kStuck : kIdle] += gs;
      burst *= 1.f - gs;
    }
    std::array<float, kMetrics> v{};
    for (int m = 0; m < kStep; ++m) {
      float x = burst * kBurstLevel[m];
      for (int k = 0; k < kActivities; ++k) x += mix[k] * kLevel[m][k];
      v[m] = x;
    }
    if (f) {
      const float gs = eff->g;
      v[kPfc] += gs * static_cast<float>(f->pfc_add);
      v[kNet] *= 1.f + gs * static_cast<float>(f->net_factor - 1.0);
      v[kNvlink] *= 1.f + gs * static_cast<float>(f->nvlink_factor - 1.0);
    }
    for (int m = 0; m < kStep; ++m) {
      row[m][t] = std::clamp(v[m] * gain[m] + e[m] * kNoiseScale[m], 0.f, kUpper[m]);
    }
    row[kStep][t] = std::max(0.f, g.step_time[t] * (1.f + kStepNoiseRelative * e[kStep]));
  }
}

// Heavy-tailed spikes shorter than continuity_s on one metric of one machine (not step_time).
void AddSpikes(const SimConfig& c, uint64_t seed, int machine, FleetSeries* out) {
  const double rate = c.spikes_per_machine_hour / 3600.0;
  if (rate <= 0 || c.noise_sigma <= 0) return;
  PhiloxStream rng(seed, internal::MachineStream(machine, 2));
  double t = 0;
  while (true) {
    t += -std::log(1.0 - static_cast<double>(rng.NextUniform())) / rate;
    if (t >= static_cast<double>(c.seconds)) break;
    const int64_t start = static_cast<int64_t>(t);
    // Spikes are noise only if shorter than the continuity window in use (spec §7.4): length
    // log-uniform in [1, max(1, continuity_s / 2)]; anything longer is a labelled fault.
    const double max_len = std::max(1.0, static_cast<double>(c.continuity_s / 2));
    const int64_t len = std::min<int64_t>(
        static_cast<int64_t>(max_len),
        static_cast<int64_t>(std::exp(rng.NextUniform() * std::log(max_len))) + 1);
    const int m = static_cast<int>(rng.NextBelow(kStep));
    const float sign = rng.NextUniform() < 0.5f ? -1.f : 1.f;
    // Heavy-tailed amplitude: Pareto (alpha 2) from 2 x noise_sigma, capped at 12 x.
    const float u = std::max(rng.NextUniform(), 1.f / 36.f);
    const float amp =
        sign * (2.f / std::sqrt(u)) * static_cast<float>(c.noise_sigma) * kNoiseScale[m];
    float* r = &out->at(m, machine, 0);
    for (int64_t s = start; s < std::min(c.seconds, start + len); ++s) {
      if (!std::isnan(r[s])) r[s] = std::clamp(r[s] + amp, 0.f, kUpper[m]);
    }
  }
}

}  // namespace

LabelledJob RenderJob(const SimConfig& config, uint64_t seed, const SimPlan& plan) {
  LabelledJob job;
  job.seed = seed;
  job.series = FleetSeries::Make(SimMetricNames(), config.machines, config.seconds);
  const std::vector<std::vector<Effect>> effects = EffectsPerMachine(config, plan);
  const GlobalTrack global = RenderGlobal(config, seed, plan, effects);
  for (int i = 0; i < config.machines; ++i) {
    RenderMachine(config, seed, i, global, effects[i], &job.series);
    AddSpikes(config, seed, i, &job.series);
  }
  for (const SimFault& f : plan.faults) job.faults.push_back(f.label);
  for (const SimRegime& r : plan.regimes) {
    job.regime_changes_s.push_back(r.onset_s);
    if (r.kind != "speed_change" && r.end_s < config.seconds)
      job.regime_changes_s.push_back(r.end_s);
  }
  return job;
}

LabelledJob SimulateJob(const SimConfig& config, uint64_t seed) {
  return RenderJob(config, seed, PlanJob(config, seed));
}

}  // namespace loom::monitor
