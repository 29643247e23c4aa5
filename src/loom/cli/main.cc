// loom: the command-line front end. One thin subcommand per module; see `loom --help`.
#include <cstdio>

#include "loom/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"loom: distributed training toolkit and runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("loom 0.1.0"));
  loom::cli::CliContext ctx;
  ctx.argv.assign(argv, argv + argc);
  loom::cli::RegisterLaunch(app, &ctx);
  loom::cli::RegisterTrain(app, &ctx);
  loom::cli::RegisterEnv(app, &ctx);
  loom::cli::RegisterCkpt(app, &ctx);
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: loom side by side with its peers");
  bench->require_subcommand(1);
  loom::cli::RegisterBenchCollectives(*bench, &ctx);
  loom::cli::RegisterBenchTrain(*bench, &ctx);
  loom::cli::RegisterBenchCkpt(*bench, &ctx);
  loom::cli::RegisterBenchCodecs(*bench, &ctx);
  loom::cli::RegisterBenchConvergence(*bench, &ctx);
  loom::cli::RegisterBenchOverlap(*bench, &ctx);
  loom::cli::RegisterBenchOverlapPeer(*bench, &ctx);
  loom::cli::RegisterBenchReplay(*bench, &ctx);
  CLI::App* monitor = app.add_subcommand("monitor", "metrics agent, faulty-machine detection, fault injection");
  monitor->require_subcommand(1);
  loom::cli::RegisterMonitorAgent(*monitor, &ctx);
  loom::cli::RegisterMonitorSimulate(*monitor, &ctx);
  loom::cli::RegisterMonitorDetect(*monitor, &ctx);
  loom::cli::RegisterMonitorReport(*monitor, &ctx);
  loom::cli::RegisterMonitorDenoiser(*monitor, &ctx);
  loom::cli::RegisterMonitorInject(*monitor, &ctx);
  loom::cli::RegisterRobust(app, &ctx);
  CLI::App* trace = app.add_subcommand("trace", "profiling: replay and what-if of traced runs");
  trace->require_subcommand(1);
  loom::cli::RegisterTrace(*trace, &ctx);
  loom::cli::RegisterTraceOptimize(*trace, &ctx);
#ifdef LOOM_HAVE_COSTMODEL_CLI  // needs libxgboost-dev and libtorch
  loom::cli::RegisterTraceCostmodel(*trace, &ctx);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : loom::cli::kExitUsage;
  }
  std::fflush(stdout);
  return ctx.exit_code;
}
