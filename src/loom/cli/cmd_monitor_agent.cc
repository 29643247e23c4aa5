// `loom monitor agent`: the per-machine metrics agent. Samples host sources every --interval-ms,
// receives application metrics from the local ranks on a Unix datagram socket (the trainer sends
// them when LOOM_MONITOR_SOCKET names it), and serves Prometheus text on GET /metrics.
//
//   loom monitor agent --listen 127.0.0.1:9400 --socket /tmp/loom-mon.sock --pid 0=4242 &
//   LOOM_MONITOR_SOCKET=/tmp/loom-mon.sock loom train --nproc 2 ...
//   curl -s 127.0.0.1:9400/metrics | promtool check metrics
//
// Stops on SIGINT/SIGTERM or after --duration seconds.
#include <signal.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/cli/commands.h"
#include "loom/monitor/agent/http_server.h"
#include "loom/monitor/agent/metrics_agent.h"

namespace loom::cli {
namespace {

volatile std::sig_atomic_t g_agent_stop = 0;
void OnAgentStop(int) { g_agent_stop = 1; }

struct AgentArgs {
  std::string listen = "127.0.0.1:9400";
  int interval_ms = 1000;
  std::string machine;
  std::string socket;
  std::vector<std::string> pids;
  std::string cgroup;
  std::string nvml = "libnvidia-ml.so.1";
  double duration_s = 0;
  bool print = false;
};

// "PID" or "RANK=PID".
Result<monitor::WatchedPid> ParseWatchedPid(const std::string& text) {
  monitor::WatchedPid w;
  size_t eq = text.find('=');
  try {
    size_t used = 0;
    if (eq == std::string::npos) {
      w.pid = std::stoi(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } else {
      w.rank = std::stoi(text.substr(0, eq), &used);
      if (used != eq) throw std::invalid_argument(text);
      std::string pid = text.substr(eq + 1);
      w.pid = std::stoi(pid, &used);
      if (used != pid.size()) throw std::invalid_argument(text);
    }
  } catch (const std::exception&) {
    return InvalidArgumentError("--pid '" + text + "': expected PID or RANK=PID");
  }
  if (w.pid <= 0 || (eq != std::string::npos && w.rank < 0)) {
    return InvalidArgumentError("--pid '" + text + "': PID must be > 0 and RANK >= 0");
  }
  return w;
}

int Run(const AgentArgs& a) {
  auto usage = [](const Status& s) {
    std::fprintf(stderr, "loom monitor agent: %s\n", s.ToString().c_str());
    return kExitUsage;
  };
  monitor::MetricsAgentOptions o;
  o.machine = a.machine;
  o.interval_ms = a.interval_ms;
  o.socket_path = a.socket;
  o.host.cgroup_dir = a.cgroup;
  o.host.nvml_library = a.nvml == "off" ? "" : a.nvml;
  for (const std::string& p : a.pids) {
    Result<monitor::WatchedPid> w = ParseWatchedPid(p);
    if (!w.ok()) return usage(w.status());
    o.host.pids.push_back(*w);
  }
  std::unique_ptr<monitor::MetricsHttpServer> http;
  Result<std::unique_ptr<monitor::MetricsAgent>> agent = monitor::MetricsAgent::Create(o);
  if (!agent.ok()) return usage(agent.status());
  if (a.listen != "off") {
    Result<monitor::HttpServerOptions> ho = monitor::ParseListenAddress(a.listen);
    if (!ho.ok()) return usage(ho.status());
    monitor::MetricsAgent* raw = agent->get();
    http = std::make_unique<monitor::MetricsHttpServer>(*ho, [raw] { return raw->Text(); });
    (*agent)->SampleOnce();  // the first scrape already has data
    if (Status s = http->Start(); !s.ok()) {
      std::fprintf(stderr, "loom monitor agent: %s\n", s.ToString().c_str());
      return kExitFailure;
    }
  }
  std::fprintf(stderr,
               "loom monitor agent: machine %s, every %d ms%s%s%s, %zu watched pid(s)\n",
               (*agent)->options().machine.c_str(), a.interval_ms,
               http ? (", http://" + a.listen.substr(0, a.listen.rfind(':') + 1) +
                       std::to_string(http->port()) + "/metrics")
                          .c_str()
                    : "",
               a.socket.empty() ? "" : ", app socket ", a.socket.c_str(), o.host.pids.size());
  g_agent_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = OnAgentStop;
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  (*agent)->Run([] { return g_agent_stop != 0; }, a.duration_s);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (http) http->Stop();
  if (a.print) {
    (*agent)->SampleOnce();
    std::fputs((*agent)->Text().c_str(), stdout);
  }
  std::fprintf(stderr, "loom monitor agent: stopped after %lld samples\n",
               static_cast<long long>((*agent)->samples()));
  return 0;
}

}  // namespace

void RegisterMonitorAgent(CLI::App& monitor, CliContext* ctx) {
  auto* cmd = monitor.add_subcommand("agent", "per-machine metrics agent (Prometheus /metrics)");
  auto a = std::make_shared<AgentArgs>();
  cmd->add_option("--listen", a->listen, "HOST:PORT for GET /metrics, or 'off'")
      ->capture_default_str();
  cmd->add_option("--interval-ms", a->interval_ms, "sampling period in ms (>= 100)")
      ->capture_default_str();
  cmd->add_option("--machine", a->machine, "machine label (default: host name)");
  cmd->add_option("--socket", a->socket,
                  "Unix datagram socket for application metrics (ranks get it as "
                  "LOOM_MONITOR_SOCKET)");
  cmd->add_option("--pid", a->pids, "process to watch: PID or RANK=PID (repeatable)");
  cmd->add_option("--cgroup", a->cgroup, "cgroup directory whose cpu.stat to sample");
  cmd->add_option("--nvml", a->nvml,
                  "NVML library to dlopen for GPU gauges, or 'off' (default libnvidia-ml.so.1; "
                  "missing: source_available{source=\"nvml\"} 0)");
  cmd->add_option("--duration", a->duration_s, "stop after this many seconds (0: until a signal)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--print", a->print, "print the final exposition to stdout on exit");
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a); });
}

}  // namespace loom::cli
