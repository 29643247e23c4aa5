// The `loom` subcommands. Each Register* adds its subcommand to the app and returns the place
// where its exit code is written once CLI11 has run its callback.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace loom::cli {

// What every subcommand may need besides its own flags.
struct CliContext {
  std::vector<std::string> argv;  // the original command line (for re-launching as ranks)
  int exit_code = 0;
};

// Exit codes: 0 success, 1 runtime failure, 2 bad usage or configuration, else a failed rank's
// code (or 128 + signal) as reported by the launcher.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

void RegisterLaunch(CLI::App& app, CliContext* ctx);
void RegisterTrain(CLI::App& app, CliContext* ctx);
void RegisterEnv(CLI::App& app, CliContext* ctx);
void RegisterCkpt(CLI::App& app, CliContext* ctx);
void RegisterBenchCollectives(CLI::App& bench, CliContext* ctx);
void RegisterBenchTrain(CLI::App& bench, CliContext* ctx);
void RegisterBenchCkpt(CLI::App& bench, CliContext* ctx);
void RegisterBenchCodecs(CLI::App& bench, CliContext* ctx);
void RegisterBenchConvergence(CLI::App& bench, CliContext* ctx);
// `loom bench overlap` (cmd_bench_overlap.cc): tile-level compute-communication overlap (issue 7).
void RegisterBenchOverlap(CLI::App& bench, CliContext* ctx);
// `loom bench overlap-peer` (cmd_bench_overlap_peer.cc): OpenMPI/Gloo peers of `bench overlap`.
void RegisterBenchOverlapPeer(CLI::App& bench, CliContext* ctx);
// `loom bench replay` (cmd_bench_replay.cc): replay/what-if predictions vs real runs (issue 6).
void RegisterBenchReplay(CLI::App& bench, CliContext* ctx);
// `loom monitor ...`: agent (cmd_monitor_agent.cc); simulate (cmd_monitor_simulate.cc); detect,
// eval (cmd_monitor_detect.cc); inject (cmd_monitor_inject.cc).
void RegisterMonitorAgent(CLI::App& monitor, CliContext* ctx);
void RegisterMonitorSimulate(CLI::App& monitor, CliContext* ctx);
void RegisterMonitorDetect(CLI::App& monitor, CliContext* ctx);
// `loom monitor report EVAL.json --html F` (cmd_monitor_report.cc).
void RegisterMonitorReport(CLI::App& monitor, CliContext* ctx);
// `loom monitor denoiser train|check` (cmd_monitor_denoiser.cc): Minder's LSTM-VAE denoisers.
void RegisterMonitorDenoiser(CLI::App& monitor, CliContext* ctx);
void RegisterMonitorInject(CLI::App& monitor, CliContext* ctx);
// `loom robust [--observe-only] -- CMD ...` and its executor (cmd_robust.cc).
void RegisterRobust(CLI::App& app, CliContext* ctx);
// `loom trace replay|whatif` (cmd_trace.cc): dPRO-style replay and what-if of traced runs.
void RegisterTrace(CLI::App& trace, CliContext* ctx);
// `loom trace optimize` (cmd_trace_optimize.cc): dPRO-style strategy search on the replayer.
void RegisterTraceOptimize(CLI::App& trace, CliContext* ctx);
// `loom trace costmodel collect|train|predict|eval` (cmd_trace_costmodel.cc): CDMPP predictor.
void RegisterTraceCostmodel(CLI::App& trace, CliContext* ctx);

}  // namespace loom::cli
