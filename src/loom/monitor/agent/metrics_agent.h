// MetricsAgent: the per-machine metrics agent behind `loom monitor agent`. Every interval it
// samples the host (HostSampler), folds the application metrics the local ranks push over the
// Unix datagram socket (AppReceiver -> RankAppState per rank), and renders one Prometheus text
// snapshot that MetricsHttpServer serves on GET /metrics.
//
//   MetricsAgentOptions o;
//   o.machine = "m0"; o.socket_path = "/tmp/loom-monitor.sock"; o.host.pids = {{pid, 0}};
//   LOOM_ASSIGN_OR_RETURN(auto agent, MetricsAgent::Create(o));
//   MetricsHttpServer http({.port = 9400}, [&] { return agent->Text(); });
//   LOOM_RETURN_IF_ERROR(http.Start());
//   agent->Run([] { return g_stop.load(); }, /*duration_s=*/0);
//
// The robust executor can embed it instead: call SampleOnce()/DrainApp() from its own loop and
// read RankStates() for heartbeats.
// Thread-safety: Run/SampleOnce/DrainApp from one thread; Text() and RankStates() from any thread
// (they copy a snapshot under the agent's mutex).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "loom/base/mutex.h"
#include "loom/base/status.h"
#include "loom/monitor/agent/host_sampler.h"
#include "loom/monitor/app/app_receiver.h"
#include "loom/monitor/app/rank_app_state.h"

namespace loom::monitor {

struct MetricsAgentOptions {
  std::string machine;       // the machine label; empty: the host name
  int interval_ms = 1000;    // sampling period, >= 100
  std::string socket_path;   // app-metrics socket to bind; empty: no application metrics
  HostSamplerOptions host;   // sources, watched PIDs, cgroup
};

class MetricsAgent {
 public:
  static constexpr int kMinIntervalMs = 100;

  // Validates the options and binds the app socket; errors name the flag or path.
  static Result<std::unique_ptr<MetricsAgent>> Create(MetricsAgentOptions options);

  // Samples the host, drains pending app messages and publishes a new snapshot.
  void SampleOnce();
  // Drains pending app messages into the per-rank state (without publishing).
  void DrainApp();
  // Samples every interval until `should_stop()` is true or `duration_s` (> 0) has elapsed;
  // app messages are drained as they arrive in between.
  void Run(const std::function<bool()>& should_stop, double duration_s);

  std::string Text() const;                       // the latest Prometheus exposition
  std::map<int, RankAppState> RankStates() const;  // latest per-rank app state
  int64_t samples() const;
  const MetricsAgentOptions& options() const { return options_; }
  HostSampler& host_sampler() { return host_; }

 private:
  explicit MetricsAgent(MetricsAgentOptions options);
  std::vector<MetricPoint> AppPoints(int64_t now_wall_ms) const;
  std::vector<MetricPoint> SelfPoints(double sample_seconds) const;

  MetricsAgentOptions options_;
  HostSampler host_;
  std::unique_ptr<AppReceiver> receiver_;
  mutable Mutex mu_;
  std::map<int, RankAppState> ranks_ LOOM_GUARDED_BY(mu_);
  std::string text_ LOOM_GUARDED_BY(mu_);
  int64_t samples_ LOOM_GUARDED_BY(mu_) = 0;
  double last_sample_seconds_ = 0;
};

}  // namespace loom::monitor
