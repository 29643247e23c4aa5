// MetricsAgent: see metrics_agent.h.
#include "loom/monitor/agent/metrics_agent.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cmath>

#include "loom/base/clock.h"
#include "loom/base/logging.h"
#include "loom/monitor/agent/prometheus_text.h"

namespace loom::monitor {
namespace {

double MonoSeconds() { return static_cast<double>(NowNanos()) * 1e-9; }
int64_t WallMs() { return WallNanos() / 1000000; }

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

}  // namespace

Result<std::unique_ptr<MetricsAgent>> MetricsAgent::Create(MetricsAgentOptions options) {
  if (options.interval_ms < kMinIntervalMs) {
    return InvalidArgumentError("--interval-ms " + std::to_string(options.interval_ms) +
                                ": must be >= " + std::to_string(kMinIntervalMs));
  }
  if (options.machine.empty()) options.machine = HostName();
  std::unique_ptr<MetricsAgent> agent(new MetricsAgent(options));
  if (!options.socket_path.empty()) {
    Result<std::unique_ptr<AppReceiver>> rx = AppReceiver::Bind(options.socket_path);
    if (!rx.ok()) return rx.status().WithContext("--socket");
    agent->receiver_ = std::move(rx).value();
  }
  return agent;
}

MetricsAgent::MetricsAgent(MetricsAgentOptions options)
    : options_(std::move(options)), host_(options_.host) {}

void MetricsAgent::DrainApp() {
  if (!receiver_) return;
  std::vector<AppMessage> msgs = receiver_->Drain();
  if (msgs.empty()) return;
  MutexLock lock(&mu_);
  for (const AppMessage& m : msgs) ranks_[m.rank].Apply(m);
}

std::vector<MetricPoint> MetricsAgent::AppPoints(int64_t now_wall_ms) const {
  std::vector<MetricPoint> out;
  out.push_back(Gauge("app_channel_available",
                      "1 when the agent listens for application metrics on its socket",
                      receiver_ ? 1 : 0));
  if (!receiver_) return out;
  out.push_back(Counter("app_messages_received_total", "Datagrams received from ranks",
                        static_cast<double>(receiver_->received())));
  out.push_back(Counter("app_messages_malformed_total", "Datagrams dropped as malformed",
                        static_cast<double>(receiver_->malformed())));
  std::map<int, RankAppState> ranks = RankStates();
  std::vector<std::vector<MetricPoint>> fam(11);
  for (const auto& [rank, s] : ranks) {
    MetricLabels l{{"rank", std::to_string(rank)}};
    fam[0].push_back(Gauge("app_step", "Last step the rank reported (NaN: none yet)",
                           s.step < 0 ? NAN : static_cast<double>(s.step), l));
    fam[1].push_back(Gauge("app_step_time_seconds", "Duration of the rank's last step",
                           s.last_step_time_s, l));
    fam[2].push_back(Gauge("app_data_wait_seconds",
                           "Data-loader wait in the rank's last step (NaN: unknown)",
                           s.last_data_wait_s, l));
    fam[3].push_back(Gauge("app_last_collective_seq",
                           "Sequence number of the rank's last finished collective",
                           s.last_coll_seq < 0 ? NAN : static_cast<double>(s.last_coll_seq), l));
    fam[4].push_back(Gauge("app_last_collective_duration_seconds",
                           "Duration of the rank's last collective", s.last_coll_duration_s, l));
    fam[5].push_back(Counter("app_collective_bytes_total", "Payload bytes of finished collectives",
                             static_cast<double>(s.coll_bytes_total), l));
    fam[6].push_back(Counter("app_collectives_total", "Finished collectives",
                             static_cast<double>(s.coll_count), l));
    fam[7].push_back(Counter("app_collective_seconds_total", "Time spent in collectives",
                             s.coll_seconds_total, l));
    fam[8].push_back(Gauge("app_last_update_age_seconds",
                           "Seconds since the rank's newest message (sender wall clock)",
                           s.last_update_ms > 0 ? (now_wall_ms - s.last_update_ms) * 1e-3 : NAN,
                           l));
    if (!s.phase.empty()) {
      MetricLabels pl = l;
      pl.emplace_back("phase", s.phase);
      fam[9].push_back(Gauge("app_phase", "1 for the rank's current phase", 1, pl));
    }
    if (!s.last_coll_op.empty()) {
      MetricLabels ol = l;
      ol.emplace_back("op", s.last_coll_op);
      fam[10].push_back(Gauge("app_last_collective_op", "1 for the rank's last collective op", 1,
                              ol));
    }
  }
  for (auto& f : fam) {
    for (MetricPoint& p : f) out.push_back(std::move(p));
  }
  return out;
}

std::vector<MetricPoint> MetricsAgent::SelfPoints(double sample_seconds) const {
  std::vector<MetricPoint> out;
  Result<ProcStat> self = ReadProcStat(static_cast<int>(::getpid()));
  if (self.ok()) {
    out.push_back(Counter("agent_cpu_seconds_total", "utime + stime of the agent process itself",
                          self->cpu_seconds));
  }
  out.push_back(Gauge("agent_resident_memory_bytes", "RSS of the agent process itself",
                      self.ok() ? static_cast<double>(self->rss_bytes) : NAN));
  out.push_back(Gauge("agent_sample_duration_seconds", "Time the previous sample took",
                      sample_seconds));
  out.push_back(Gauge("agent_interval_seconds", "Configured sampling period",
                      options_.interval_ms * 1e-3));
  return out;
}

void MetricsAgent::SampleOnce() {
  const double start = MonoSeconds();
  DrainApp();
  std::vector<MetricPoint> points = host_.Sample(start);
  for (MetricPoint& p : AppPoints(WallMs())) points.push_back(std::move(p));
  for (MetricPoint& p : SelfPoints(last_sample_seconds_)) points.push_back(std::move(p));
  Result<std::string> text = RenderPrometheusText(points, {{"machine", options_.machine}});
  if (!text.ok()) {
    LOOM_LOG(ERROR, "monitor") << "metrics agent: " << text.status();
    return;
  }
  last_sample_seconds_ = MonoSeconds() - start;
  MutexLock lock(&mu_);
  text_ = std::move(text).value();
  ++samples_;
}

void MetricsAgent::Run(const std::function<bool()>& should_stop, double duration_s) {
  const double interval = options_.interval_ms * 1e-3;
  const double start = MonoSeconds();
  double next = start;
  while (!should_stop()) {
    double now = MonoSeconds();
    if (duration_s > 0 && now - start >= duration_s) break;
    if (now >= next) {
      SampleOnce();
      next += interval;
      if (next < now) next = now + interval;  // fell behind (suspended): do not burst
      continue;
    }
    // Sleep until the next sample, waking for app messages and at least every 200 ms to check
    // the stop flag.
    int timeout_ms = static_cast<int>(std::ceil(std::min(next - now, 0.2) * 1000));
    if (duration_s > 0) {
      timeout_ms = std::min(timeout_ms,
                            static_cast<int>(std::ceil((start + duration_s - now) * 1000)));
    }
    if (receiver_) {
      pollfd p{receiver_->fd(), POLLIN, 0};
      if (::poll(&p, 1, std::max(timeout_ms, 1)) > 0) DrainApp();
    } else {
      ::usleep(static_cast<useconds_t>(std::max(timeout_ms, 1)) * 1000);
    }
  }
}

std::string MetricsAgent::Text() const {
  MutexLock lock(&mu_);
  return text_;
}

std::map<int, RankAppState> MetricsAgent::RankStates() const {
  MutexLock lock(&mu_);
  return ranks_;
}

int64_t MetricsAgent::samples() const {
  MutexLock lock(&mu_);
  return samples_;
}

}  // namespace loom::monitor
