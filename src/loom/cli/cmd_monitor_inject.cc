// `loom monitor inject`: applies one fault to a real process or link, holds it for --duration
// seconds (Ctrl-C / SIGTERM revert early; a target process that dies ends it early), reverts it
// and prints the ground-truth record (also appended to --log FILE.jsonl).
//
//   loom monitor inject --fault stop --pid 4242 --duration 20 --log injections.jsonl
//   loom monitor inject --fault cpu_quota --pid 4242 --cpu-fraction 0.3 --duration 60
//   loom monitor inject --fault mem_limit --pid 4242 --mem 256MiB --duration 30
//   loom monitor inject --fault tbf --dev lva42 --netns loom-a-42 --rate 10mbit --duration 30
//   loom monitor inject --fault drop --dev lva42 --netns loom-a-42 --drop 0.05 --duration 30
//   loom monitor inject --fault flap --dev lva42 --netns loom-a-42 --duration 5
//   loom monitor inject --fault kill --pid 4242          # --duration is 0 for kill
//   loom monitor inject --cleanup [--netns NS]   # what SIGKILLed injectors left (stale_cleanup.h)
//
// Exit codes: 0 applied and reverted; 1 the fault could not be applied or reverted (missing pid,
// device or namespace, no permission, ...); 2 bad flags (the message names the flag).
#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "loom/base/clock.h"
#include "loom/cli/commands.h"
#include "loom/cli/parse_bytes.h"
#include "loom/monitor/inject/fault_injector.h"
#include "loom/monitor/inject/process_target.h"
#include "loom/monitor/inject/stale_cleanup.h"

namespace loom::cli {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void OnStopSignal(int sig) { g_stop_signal = sig; }

// Installs handlers for SIGINT/SIGTERM/SIGHUP that only record the signal, and restores the
// previous ones when it goes out of scope.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~StopSignals() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

struct InjectArgs {
  monitor::FaultSpec spec;
  std::string mem;
  bool duration_given = false;
  bool cleanup = false;
};

bool IsPidFault(const std::string& type) {
  return type == "stop" || type == "freeze" || type == "kill" || type == "cpu_quota" ||
         type == "mem_limit";
}

int RunCleanup(const std::string& netns) {
  auto report = monitor::CleanupStaleInjections(netns);
  if (!report.ok()) {
    std::fprintf(stderr, "loom monitor inject --cleanup: %s\n", report.status().ToString().c_str());
    return kExitFailure;
  }
  for (const std::string& r : report->removed) std::printf("removed %s\n", r.c_str());
  for (const std::string& l : report->live) std::printf("kept (injector running) %s\n", l.c_str());
  for (const std::string& e : report->errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  std::printf("loom monitor inject --cleanup: %zu removed, %zu kept, %zu errors\n",
              report->removed.size(), report->live.size(), report->errors.size());
  return report->errors.empty() ? 0 : kExitFailure;
}

int Run(InjectArgs a) {
  monitor::FaultSpec& spec = a.spec;
  if (a.cleanup) {
    if (!spec.type.empty() || spec.pid != 0 || !spec.dev.empty() || a.duration_given ||
        spec.cpu_fraction != 0 || !a.mem.empty() || !spec.rate.empty() || spec.drop_fraction != 0 ||
        !spec.log_path.empty()) {
      std::fprintf(stderr, "loom monitor inject: --cleanup takes only --netns\n");
      return kExitUsage;
    }
    return RunCleanup(spec.netns);
  }
  if (spec.type.empty()) {
    std::fprintf(stderr, "loom monitor inject: --fault is required (or --cleanup)\n");
    return kExitUsage;
  }
  if (!a.mem.empty()) {
    auto bytes = ParseBytes(a.mem);
    if (!bytes.ok()) {
      std::fprintf(stderr, "loom monitor inject: --mem: %s\n", bytes.status().message().c_str());
      return kExitUsage;
    }
    spec.mem_bytes = *bytes;
  }
  if (!a.duration_given) spec.duration_s = spec.type == "kill" ? 0 : 10;
  if (Status s = monitor::ValidateFaultSpec(spec); !s.ok()) {
    std::fprintf(stderr, "loom monitor inject: %s\n", s.message().c_str());
    return kExitUsage;
  }

  StopSignals signals;  // before Inject: a Ctrl-C right after applying must still revert
  g_stop_signal = 0;
  auto inj = monitor::Inject(spec);
  if (!inj.ok()) {
    std::fprintf(stderr, "loom monitor inject: %s\n", inj.status().ToString().c_str());
    return inj.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const std::string target = IsPidFault(spec.type)
                                 ? "pid " + std::to_string(spec.pid)
                                 : "dev " + spec.dev + (spec.netns.empty() ? "" : "@" + spec.netns);
  std::fprintf(stderr, "loom monitor inject: %s on %s applied at onset_ms=%lld; holding %.3g s\n",
               spec.type.c_str(), target.c_str(), static_cast<long long>((*inj)->onset_ms()),
               spec.duration_s);

  const Deadline end =
      SteadyClock::now() + std::chrono::microseconds(static_cast<int64_t>(spec.duration_s * 1e6));
  const bool watch_target = IsPidFault(spec.type) && spec.type != "kill";
  while (SteadyClock::now() < end && g_stop_signal == 0) {
    if (watch_target && !monitor::ProcessAlive(spec.pid)) {
      std::fprintf(stderr, "loom monitor inject: pid %d exited during the fault; ending it\n",
                   spec.pid);
      break;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(std::chrono::milliseconds(20), TimeLeft(end)));
  }
  if (g_stop_signal != 0) {
    std::fprintf(stderr, "loom monitor inject: signal %d, reverting early\n",
                 static_cast<int>(g_stop_signal));
  }
  Status reverted = (*inj)->Revert();
  std::printf("%s\n", (*inj)->RecordJson().c_str());
  std::fflush(stdout);
  if (!reverted.ok()) {
    std::fprintf(stderr, "loom monitor inject: revert: %s\n", reverted.ToString().c_str());
    return kExitFailure;
  }
  return 0;
}

}  // namespace

void RegisterMonitorInject(CLI::App& monitor, CliContext* ctx) {
  auto* cmd = monitor.add_subcommand(
      "inject",
      "apply one fault (stop, freeze, kill, cpu_quota, mem_limit, tbf, drop, flap) to "
      "a process or link for a while, revert it, log the ground truth");
  auto a = std::make_shared<InjectArgs>();
  cmd->add_option("--fault", a->spec.type,
                  "stop | freeze | kill | cpu_quota | mem_limit | tbf | drop | flap");
  cmd->add_option("--pid", a->spec.pid,
                  "target process (stop, freeze, kill, cpu_quota, mem_limit)");
  cmd->add_option("--dev", a->spec.dev, "target network device (tbf, drop, flap)");
  cmd->add_option("--netns", a->spec.netns, "named network namespace holding --dev");
  cmd->add_option_function<double>(
      "--duration",
      [a](double d) {
        a->spec.duration_s = d;
        a->duration_given = true;
      },
      "seconds to hold the fault (default 10; 0 for kill)");
  cmd->add_option("--cpu-fraction", a->spec.cpu_fraction, "cpu_quota: share of one core, e.g. 0.3");
  cmd->add_option("--mem", a->mem, "mem_limit: memory.limit_in_bytes, e.g. 256MiB");
  cmd->add_option("--rate", a->spec.rate, "tbf: tc rate, e.g. 10mbit");
  cmd->add_option("--drop", a->spec.drop_fraction, "drop: packet drop probability, e.g. 0.05");
  cmd->add_option("--log", a->spec.log_path, "append the ground-truth record to this JSONL file");
  cmd->add_flag("--cleanup", a->cleanup,
                "instead of injecting: remove cgroups / nft tables (in --netns) left by injectors "
                "that were killed without reverting");
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a); });
}

}  // namespace loom::cli
