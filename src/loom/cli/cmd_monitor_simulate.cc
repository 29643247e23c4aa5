// `loom monitor simulate`: writes one seeded synthetic fleet job (metric series + fault labels +
// regime changes) with the fleet simulator, for training and evaluating the detectors.
//
//   loom monitor simulate --machines 64 --hours 4 --seed 7 --out /tmp/job7
//
// Prints a one-line summary and a table of the injected faults. Exit codes: 0 ok, 1 write
// failure, 2 bad flags.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "loom/cli/commands.h"
#include "loom/monitor/fleet/sim/fleet_io.h"
#include "loom/monitor/fleet/sim/fleet_simulator.h"

namespace loom::cli {
namespace {

struct SimulateArgs {
  monitor::SimConfig config;
  double hours = 0;
  int64_t seconds = 0;
  uint64_t seed = 1;
  std::string out;
};

std::string JoinInts(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(v[i]));
  }
  return s.empty() ? "-" : s;
}

int Run(SimulateArgs a) {
  monitor::SimConfig& c = a.config;
  if (a.seconds > 0) {
    c.seconds = a.seconds;
  } else if (a.hours > 0) {
    c.seconds = std::llround(a.hours * 3600.0);
  } else if (a.hours < 0 || a.seconds < 0) {
    std::fprintf(stderr, "loom monitor simulate: --hours/--seconds must be > 0\n");
    return kExitUsage;
  }
  // A fault that must alarm lasts at least the continuity window.
  c.min_fault_s = std::max(c.min_fault_s, c.continuity_s);
  if (Status s = monitor::ValidateSimConfig(c); !s.ok()) {
    std::fprintf(stderr, "loom monitor simulate: %s\n", s.message().c_str());
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const monitor::LabelledJob job = monitor::SimulateJob(c, a.seed);
  const double sim_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (Status s = monitor::SaveJob(job, a.out); !s.ok()) {
    std::fprintf(stderr, "loom monitor simulate: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  int must_alarm = 0;
  for (const monitor::FaultLabel& f : job.faults) must_alarm += f.must_alarm ? 1 : 0;
  const double mb = static_cast<double>(job.series.values.size()) * 4 / 1e6;
  std::printf(
      "simulated %d machines x %lld s x %d metrics (seed %llu): %zu faults (%d must alarm), "
      "%zu regime changes, simulated in %.2f s -> %s (%.1f MB)\n",
      c.machines, static_cast<long long>(c.seconds), job.series.metrics(),
      static_cast<unsigned long long>(a.seed), job.faults.size(), must_alarm,
      job.regime_changes_s.size(), sim_s, a.out.c_str(), mb);
  if (!job.faults.empty()) {
    std::printf("%8s  %-12s %9s %10s %-10s %s\n", "machine", "type", "onset_s", "duration_s",
                "must_alarm", "group");
    for (const monitor::FaultLabel& f : job.faults) {
      std::printf("%8d  %-12s %9lld %10lld %-10s %s\n", f.machine, f.type.c_str(),
                  static_cast<long long>(f.onset_s), static_cast<long long>(f.end_s - f.onset_s),
                  f.must_alarm ? "yes" : "no", JoinInts(f.group).c_str());
    }
  }
  return 0;
}

}  // namespace

void RegisterMonitorSimulate(CLI::App& monitor, CliContext* ctx) {
  auto* cmd = monitor.add_subcommand(
      "simulate", "write a seeded synthetic fleet job (metrics + labelled faults) to a directory");
  auto a = std::make_shared<SimulateArgs>();
  monitor::SimConfig& c = a->config;
  cmd->add_option("--machines", c.machines, "machines in the job")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  auto* hours = cmd->add_option("--hours", a->hours, "job length in hours (default 4)");
  auto* seconds = cmd->add_option("--seconds", a->seconds, "job length in seconds");
  hours->excludes(seconds);
  cmd->add_option("--seed", a->seed, "seed (keep train/validation/test seeds disjoint)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
                       ? std::string()
                       : "--seed must be a non-negative integer, got '" + v + "'";
          },
          "UINT"))
      ->capture_default_str();
  cmd->add_option("--faults-per-machine-day", c.faults_per_machine_day,
                  "fault arrival rate (elevated for evaluation)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--group-size", c.group_size, "3D-parallel group size (fault spreading)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--rack-size", c.rack_size, "machines per rack (concurrent faults)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--continuity-s", c.continuity_s,
                  "faults shorter than this are transients (must not alarm)")
      ->capture_default_str();
  cmd->add_option("--transient-fraction", c.transient_fraction, "share of transient faults")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "output directory (meta.json + series.f32)")->required();
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a); });
}

}  // namespace loom::cli
