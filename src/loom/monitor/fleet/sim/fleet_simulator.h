// Fleet simulator: seeded synthetic jobs (machines x metrics x seconds at 1 Hz) with labelled
// faults, the training/validation/test data of the fleet detectors (spec
// fault_detection.md §8.2). Deterministic in (config, seed): same inputs -> identical bytes.
//
//   SimConfig config;
//   config.machines = 64;
//   config.seconds = 4 * 3600;
//   LabelledJob job = SimulateJob(config, /*seed=*/7);
//   float pfc = job.series.at(/*metric=*/0, /*machine=*/3, /*t=*/120);
//
// Model (choices marked [G] are ours, not from a source):
//  * The job: synchronous data-parallel training. Every machine runs the same step, whose
//    period `step_period_s` (default 9 s) [G] is shared; each step has a compute phase
//    (`compute_fraction`) and a communication phase. Each metric is a per-metric waveform of the
//    step phase (GPU duty/power/tensor high while computing; NVLink/net/PFC high while
//    communicating, PFC with short bursts at the start of the exchange; CPU moderately busy).
//    Every machine has a small constant phase offset (`phase_offset_s`, its sampling clock),
//    a phase jitter redrawn every step (`phase_jitter_s`) and its own gain per metric (±2%).
//    A 1 s sample is the mean of the waveform over that second, so step phases blur at 1 Hz.
//  * Regime changes (global, must not alarm; onsets in `regime_changes_s`): eval pause (GPU
//    mid, network idle), checkpoint pause (GPU idle, CPU + net busy), LR-warmup speed change
//    (period changes by ±10-25% from then on). Arrivals are Poisson at `regime_changes_per_hour`.
//  * Noise per (machine, metric): AR(1) with coefficient `ar_coeff` and Student-t (3 degrees of
//    freedom) innovations, stationary std `noise_sigma` x the metric's range (step_time: 0.3 x
//    noise_sigma, relative), plus spikes of 1 .. continuity_s/2 s (log-uniform; amplitude
//    ±Pareto(2) from 2 x noise_sigma x range, capped at 12 x) at `spikes_per_machine_hour` on
//    one metric of one machine: noise is shorter than T_c by construction (spec §7.4), anything
//    longer is a labelled fault or transient. Values are clamped to the
//    metric's physical range, so idle metrics sit at exactly 0 on many machines (a robust
//    spread of 0 across machines is normal: detectors must floor it).
//  * Faults: Poisson arrivals at `faults_per_machine_day` over the job after `warmup_s`; a fault
//    may not overlap another fault on the same machine (retries a few times, then drops).
//    Type mix from InfiniteHBD-Trace's hardware fault counts (spec §6): of GPU 158, DBE ECC 60
//    + device unknown error 40 + xid 11 -> stall (111), PCIe link width low 25 + the 13 GPU
//    faults not itemised -> fail_slow, nvidia-smi timeout 9 -> unreachable; fan 33 (thermal
//    throttling) -> fail_slow (total 71); PSU 26 -> unreachable (total 35); link down 40 ->
//    link_drop; NIC 30 -> pfc_storm; switch/rack events, absent from a per-node trace ->
//    concurrent, weight 15 [G]. Software 24 and "other" 262 are not mapped. Weights: stall 111,
//    fail_slow 71, link_drop 40, unreachable 35, pfc_storm 30, concurrent 15. Then
//    `transient_fraction` of faults become transients (signature of stall, pfc_storm,
//    link_drop or fail_slow; duration max(1, continuity_s/10) .. continuity_s - 1;
//    must_alarm = false). Other durations log-uniform in [min_fault_s, max_fault_s], cut at
//    the end of the job; onsets in [min(warmup_s, seconds/2), seconds - min_fault_s).
//  * Fault signatures on the root machine (severity drawn per fault):
//    stall -> the GPU drops to idle (duty ~2%, power ~65 W) or, for half of the stalls, is
//    stuck in a kernel (duty ~100%, power ~95 W); tensor 0, CPU low, no traffic. Training is
//    synchronous, so the whole job halts: every machine's step_time grows and the healthy
//    ones wait in the collective (duty ~85%, power ~130 W, tensor 0) - the root differs from
//    them in CPU and power (and duty unless stuck), not in step_time or tensor activity.
//    pfc_storm -> pfc_tx + 20-80 kframes/s continuous (healthy mean ~5), net_tx x0.3-0.6.
//    link_drop -> nvlink_bw x0.1-0.5 and net_tx x0.3-0.7.
//    fail_slow -> its compute phase lasts 1.05-2x (log-uniform); the job's step period grows
//    by compute_fraction x (stretch - 1) and the others wait for it (their duty stays high,
//    tensor and power drop): the root looks *busier* than its peers.
//    unreachable -> NaN on every metric of the root, nothing else changes.
//    concurrent -> 2-4 machines of one rack (`rack_size`): net_tx x0.05-0.3, pfc_tx + 5-20.
//  * Group effect: machines sharing the root's 3D-parallel group (ids [g*G, (g+1)*G)) show a
//    weaker version (`group_effect_strength`) starting `group_delay_s` seconds after onset;
//    they are listed in FaultLabel::group. For `concurrent`, `group` lists the other failed
//    machines of the rack (all really faulty; naming any of them is correct). Unreachable and
//    transient faults do not spread (group empty).
//  * regime_changes_s lists the onset and the end of every pause and the onset of every speed
//    change.
// Thread-safety: all functions are pure (safe to call concurrently, e.g. one job per thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct SimConfig {
  int machines = 64;
  int64_t seconds = 4 * 3600;
  // 3D-parallel group: a fault spreads inside its group (machines [g*G, (g+1)*G)). 1 = none.
  int group_size = 8;
  // Machines of one rack (concurrent faults hit 2-4 machines of one rack).
  int rack_size = 4;
  // Elevated fault rate for evaluation (production sees ~2/day per job, far fewer per machine):
  // 64 machines x 4 h -> 0.5 x 64 x (4 h - warm-up) / 24 h = 5.1 faults expected.
  double faults_per_machine_day = 0.5;
  // Faults shorter than this are "transients" (must_alarm = false).
  int64_t continuity_s = 30;
  double transient_fraction = 0.2;
  // Fault durations, log-uniform (cut at the end of the job).
  int64_t min_fault_s = 30;
  int64_t max_fault_s = 2 * 3600;
  // No fault starts before this (detectors need history).
  int64_t warmup_s = 600;
  // Step waveform.
  double step_period_s = 9.0;
  double compute_fraction = 0.7;
  // Per-machine phase offsets: constant (sampling-clock offset) and redrawn every step.
  double phase_offset_s = 0.1;
  double phase_jitter_s = 0.2;
  // Noise: AR(1) coefficient and stationary std (fraction of the metric's range).
  double ar_coeff = 0.8;
  double noise_sigma = 0.03;
  double spikes_per_machine_hour = 0.5;
  // Global regime changes (eval/checkpoint pauses, LR-warmup speed changes), all machines.
  double regime_changes_per_hour = 1.0;
  // Group effect: fraction of the root's deviation seen by its group, and its delay.
  double group_effect_strength = 0.3;
  int64_t group_delay_s = 5;
};

// Seed ranges that keep simulated train / validation / test jobs disjoint (spec §8.2): use
// kTrainSeedBase + i for training jobs, and so on (i < 1000).
inline constexpr uint64_t kTrainSeedBase = 1000;
inline constexpr uint64_t kValidationSeedBase = 2000;
inline constexpr uint64_t kTestSeedBase = 3000;

// Metric names, in this order: "pfc_tx", "cpu_busy", "gpu_duty", "gpu_power", "gpu_tensor",
// "nvlink_bw", "net_tx", "step_time".
const std::vector<std::string>& SimMetricNames();

// Fault types the simulator emits (FaultLabel::type), transients included.
const std::vector<std::string>& SimFaultTypes();

// One planned fault with the parameters of its signature. `label` is what detectors are scored
// against; `effect` is the signature actually rendered (equal to label.type except for
// transients, whose effect is stall | pfc_storm | link_drop | fail_slow).
struct SimFault {
  FaultLabel label;
  std::string effect;
  bool stall_stuck = false;    // stall: GPU stuck in a kernel (duty ~100%) instead of idle
  double stretch = 1.0;        // fail_slow: the machine's compute phase lasts `stretch` x
  double pfc_add = 0.0;        // pfc_storm / concurrent: added pause frames (kframes/s)
  double net_factor = 1.0;     // pfc_storm / link_drop / concurrent: net_tx multiplier
  double nvlink_factor = 1.0;  // link_drop: nvlink_bw multiplier
};

// One global regime change (all machines together; must not alarm).
struct SimRegime {
  std::string kind;  // eval_pause | checkpoint_pause | speed_change
  int64_t onset_s = 0;
  int64_t end_s = 0;          // pauses: exclusive end; speed_change: onset_s (permanent)
  double speed_factor = 1.0;  // speed_change: the step period is multiplied by this from onset
};

struct SimPlan {
  std::vector<SimFault> faults;    // sorted by onset
  std::vector<SimRegime> regimes;  // sorted by onset, pauses never overlap
};

// Draws the faults and regime changes of a job (deterministic in (config, seed)).
SimPlan PlanJob(const SimConfig& config, uint64_t seed);

// A fault of `type` (stall | pfc_storm | link_drop | fail_slow | unreachable | concurrent |
// transient) on `machine` over [onset_s, end_s) with mid-range severity and the group filled in
// from the config, for tests and targeted evaluation. Transients render as a stall.
SimFault MakeFault(const SimConfig& config, const std::string& type, int machine, int64_t onset_s,
                   int64_t end_s);

// Renders a plan: the metric series, labels (plan order) and regime change times. Noise,
// machine gains and phase jitter depend on (config, seed) only, so a plan with one more fault
// changes nothing outside that fault's machines and interval (and the job-wide slow-down/halt).
// Faults on machines outside [0, machines) render nothing; of overlapping faults on one
// machine, the one that starts first applies until it ends.
LabelledJob RenderJob(const SimConfig& config, uint64_t seed, const SimPlan& plan);

// RenderJob(config, seed, PlanJob(config, seed)). Precondition: ValidateSimConfig(config).ok().
LabelledJob SimulateJob(const SimConfig& config, uint64_t seed);

// Explicit errors for out-of-range fields ("machines must be >= 2, got 1").
Status ValidateSimConfig(const SimConfig& config);

}  // namespace loom::monitor
