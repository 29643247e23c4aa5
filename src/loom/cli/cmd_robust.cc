// `loom robust [--machines N] [--standby K] [--observe-only] -- loom train ...` (the driver) and
// `loom robust executor --driver HOST:PORT --machine NAME` (one per machine).
#include <cstdio>

#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/robust/driver.h"
#include "loom/robust/executor.h"

namespace loom::cli {
namespace {

void RegisterExecutor(CLI::App& robust, CliContext* ctx) {
  auto* cmd = robust.add_subcommand(
      "executor", "per-machine daemon: runs the rank, heartbeats to the driver (started by the "
                  "driver, or by mpirun/srun on every host with --external)");
  auto o = std::make_shared<robust::ExecutorOptions>();
  auto heartbeat_ms = std::make_shared<int>(1000);
  cmd->add_option("--driver", o->driver, "HOST:PORT of the driver")->required();
  cmd->add_option("--machine", o->machine, "this machine's name")->required();
  cmd->add_option("--heartbeat-ms", *heartbeat_ms, "heartbeat period")->check(CLI::Range(50, 60000));
  cmd->add_option("--socket-dir", o->socket_dir, "where the app-metrics socket is created");
  cmd->callback([o, heartbeat_ms, ctx] {
    o->heartbeat = std::chrono::milliseconds(*heartbeat_ms);
    Status s = robust::RunExecutor(*o);
    if (!s.ok()) {
      std::fprintf(stderr, "loom robust executor %s: %s\n", o->machine.c_str(),
                   s.ToString().c_str());
      ctx->exit_code = kExitFailure;
    }
  });
}

}  // namespace

void RegisterRobust(CLI::App& app, CliContext* ctx) {
  auto* cmd = app.add_subcommand(
      "robust", "run a training command with fault detection, eviction and restart from the "
                "last verified checkpoint (MegaScale-style driver)");
  auto o = std::make_shared<robust::DriverOptions>();
  auto heartbeat_ms = std::make_shared<int>(1000);
  auto external = std::make_shared<bool>(false);
  cmd->add_option("--machines", o->machines, "machines (= ranks) to train on")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--standby", o->standby, "warm standby machines for replacements")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--observe-only", o->observe_only, "log decisions, never suspend, evict or restart");
  cmd->add_flag("--shrink", o->allow_shrink, "continue on fewer machines when no standby is left");
  cmd->add_flag("--external", *external,
                "do not start executors: wait for machines+standby `loom robust executor` "
                "processes (e.g. started by srun) to connect to --listen");
  cmd->add_option("--listen", o->listen, "HOST:PORT the driver listens on (port 0: any)");
  cmd->add_option("--run-dir", o->run_dir, "state directory (default runs/robust-<time>)");
  cmd->add_option("--max-restarts", o->max_restarts_without_progress,
                  "restarts in a row without progress before escalating");
  cmd->add_option("--heartbeat-ms", *heartbeat_ms, "executor heartbeat period")
      ->check(CLI::Range(50, 60000));
  cmd->add_option("--confirm", o->policy.confirm_s,
                  "seconds a stopped (state T) rank must stay stopped before acting");
  cmd->add_option("--alert-confirm", o->policy.alert_confirm_s,
                  "seconds a detector (straggler) alert must persist before acting");
  cmd->add_option("--straggler-threshold", o->straggler.threshold,
                  "NVRx score below which a machine is a straggler (default 0.75; 0: off)");
  cmd->add_option("--detector", o->detector,
                  "faulty-machine detector on the live metrics, e.g. minder or "
                  "'{\"type\":\"minder\",\"threshold\":4}' (>= 3 machines; default none)");
  cmd->add_option("--missed-heartbeat", o->policy.missed_heartbeat_s,
                  "seconds without heartbeat before a machine counts as lost");
  cmd->add_option("--progress-floor", o->policy.progress_floor_s,
                  "no-progress trigger: at least this many seconds");
  cmd->add_option("--startup-timeout", o->policy.startup_timeout_s,
                  "seconds allowed before the first step");
  cmd->add_option("command", o->command, "training command (after --)");
  RegisterExecutor(*cmd, ctx);
  cmd->callback([cmd, o, heartbeat_ms, external, ctx] {
    if (cmd->got_subcommand("executor")) return;
    if (o->command.empty()) {
      std::fprintf(stderr, "loom robust: give the training command after --, e.g. "
                           "loom robust --machines 4 -- loom train ckpt.every=20\n");
      ctx->exit_code = kExitUsage;
      return;
    }
    o->heartbeat = std::chrono::milliseconds(*heartbeat_ms);
    o->local_executors = !*external;
    o->self_exe = SelfExe();
    auto r = robust::RunDriver(*o);
    if (!r.ok()) {
      std::fprintf(stderr, "loom robust: %s\n", r.status().ToString().c_str());
      ctx->exit_code = r.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
      return;
    }
    std::printf("loom robust: %s (%d attempts, %.1f s)\n", r->message.c_str(), r->attempts,
                r->wall_s);
    for (size_t i = 0; i < r->incidents.size(); ++i) {
      const auto& inc = r->incidents[i];
      std::printf("  incident %zu: %s on %s, detected %.1f s after onset, evicted %zu, "
                  "recovered %.1f s after detection, from %s\n",
                  i, std::string(robust::TriggerName(inc.incident.kind)).c_str(),
                  inc.incident.machines.empty() ? "(nobody)" : inc.incident.machines[0].c_str(),
                  inc.detect_s, inc.evicted.size(), inc.recover_s,
                  inc.restored_from.empty() ? "step 0" : inc.restored_from.c_str());
    }
    ctx->exit_code = r->exit_code;
  });
}

}  // namespace loom::cli
