// HostSampler: see host_sampler.h.
#include "loom/monitor/agent/host_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "loom/monitor/agent/proc_file.h"

namespace loom::monitor {
namespace {

// Counter delta per second; NaN without a previous sample or when the counter went backwards
// (wrap or reset: one unknown interval rather than a huge spike).
double Rate(double now, double prev, double dt) {
  if (!(dt > 0) || now < prev) return NAN;
  return (now - prev) / dt;
}

}  // namespace

HostSampler::HostSampler(HostSamplerOptions options) : options_(std::move(options)) {
  if (options_.clk_tck <= 0) options_.clk_tck = ::sysconf(_SC_CLK_TCK);
  if (options_.page_size <= 0) options_.page_size = ::sysconf(_SC_PAGESIZE);
}

void HostSampler::WatchPid(WatchedPid p) {
  UnwatchPid(p.pid);
  options_.pids.push_back(p);
}

void HostSampler::UnwatchPid(int pid) {
  std::erase_if(options_.pids, [pid](const WatchedPid& w) { return w.pid == pid; });
  prev_pid_cpu_.erase(pid);
}

std::vector<MetricPoint> HostSampler::Sample(double now_s) {
  double dt = last_s_ < 0 ? NAN : now_s - last_s_;
  last_s_ = now_s;
  std::vector<MetricPoint> out;
  out.reserve(64);
  SampleCpu(dt, &out);
  SampleMemory(&out);
  SampleNet(dt, &out);
  SampleSnmp(dt, &out);
  SamplePressure(&out);
  if (!options_.cgroup_dir.empty()) SampleCgroup(dt, &out);
  SamplePids(dt, &out);
  if (!nvml_) nvml_ = NvmlSource::Open(options_.nvml_library);
  nvml_->Sample(&out);
  // Availability gauges go last so each family stays contiguous.
  std::stable_partition(out.begin(), out.end(),
                        [](const MetricPoint& p) { return p.name != "source_available"; });
  return out;
}

void HostSampler::SampleCpu(double dt, std::vector<MetricPoint>* out) {
  Result<CpuTicks> cpu = ReadProcFile(Path("stat"), &buf_).ok()
                             ? ParseProcStatCpu(buf_)
                             : Result<CpuTicks>(NotFoundError(""));
  out->push_back(SourceAvailable("proc_stat", cpu.ok()));
  double busy = NAN;
  if (cpu.ok() && prev_cpu_ && std::isfinite(dt)) {
    int64_t total = cpu->Total() - prev_cpu_->Total();
    int64_t b = cpu->Busy() - prev_cpu_->Busy();
    if (total > 0 && b >= 0) busy = static_cast<double>(b) / static_cast<double>(total);
  }
  out->push_back(Gauge("host_cpu_busy_ratio",
                       "Fraction of CPU time not idle or iowait since the previous sample", busy));
  if (!cpu.ok()) {
    prev_cpu_.reset();
    return;
  }
  const double tick = 1.0 / static_cast<double>(options_.clk_tck);
  const std::pair<const char*, int64_t> modes[] = {
      {"user", cpu->user},   {"nice", cpu->nice}, {"system", cpu->system},
      {"idle", cpu->idle},   {"iowait", cpu->iowait}, {"irq", cpu->irq},
      {"softirq", cpu->softirq}, {"steal", cpu->steal}};
  for (const auto& [mode, ticks] : modes) {
    out->push_back(Counter("host_cpu_seconds_total", "CPU seconds summed over all CPUs, by mode",
                           static_cast<double>(ticks) * tick, {{"mode", mode}}));
  }
  prev_cpu_ = *cpu;
}

void HostSampler::SampleMemory(std::vector<MetricPoint>* out) {
  Result<MemInfo> mem = ReadProcFile(Path("meminfo"), &buf_).ok()
                            ? ParseMeminfo(buf_)
                            : Result<MemInfo>(NotFoundError(""));
  out->push_back(SourceAvailable("meminfo", mem.ok()));
  out->push_back(Gauge("host_memory_used_bytes", "MemTotal - MemAvailable",
                       mem.ok() ? static_cast<double>(mem->UsedBytes()) : NAN));
  out->push_back(Gauge("host_memory_available_bytes", "MemAvailable",
                       mem.ok() ? static_cast<double>(mem->available_bytes) : NAN));
}

void HostSampler::SampleNet(double dt, std::vector<MetricPoint>* out) {
  Result<std::vector<NetDevCounters>> devs =
      ReadProcFile(Path("net/dev"), &buf_).ok() ? ParseNetDev(buf_)
                                                : Result<std::vector<NetDevCounters>>(
                                                      NotFoundError(""));
  out->push_back(SourceAvailable("net_dev", devs.ok()));
  double rx_rate = NAN, tx_rate = NAN;
  std::map<std::string, NetDevCounters> now;
  std::vector<MetricPoint> per_device;
  if (devs.ok()) {
    bool rx_known = std::isfinite(dt), tx_known = rx_known;
    double rx_sum = 0, tx_sum = 0;
    for (NetDevCounters& d : *devs) {
      double drx = NAN, dtx = NAN;
      auto prev = prev_net_.find(d.device);
      if (prev != prev_net_.end()) {
        drx = Rate(static_cast<double>(d.rx_bytes), static_cast<double>(prev->second.rx_bytes), dt);
        dtx = Rate(static_cast<double>(d.tx_bytes), static_cast<double>(prev->second.tx_bytes), dt);
      }
      if (d.device != "lo") {
        // A device that appeared since the last sample has no delta yet: the sum is unknown.
        // A device that was reset (counter went backwards) makes its direction unknown too.
        rx_known &= !std::isnan(drx);
        tx_known &= !std::isnan(dtx);
        rx_sum += drx;
        tx_sum += dtx;
      }
      if (options_.per_device) {
        MetricLabels l{{"device", d.device}};
        per_device.push_back(Counter("host_net_receive_bytes_total", "Bytes received, per device",
                                     static_cast<double>(d.rx_bytes), l));
        per_device.push_back(Counter("host_net_transmit_bytes_total",
                                     "Bytes transmitted, per device",
                                     static_cast<double>(d.tx_bytes), l));
        per_device.push_back(Gauge("host_net_device_receive_bytes_per_second",
                                   "Receive rate since the previous sample, per device", drx, l));
        per_device.push_back(Gauge("host_net_device_transmit_bytes_per_second",
                                   "Transmit rate since the previous sample, per device", dtx, l));
      }
      now.emplace(d.device, std::move(d));
    }
    if (rx_known) rx_rate = rx_sum;
    if (tx_known) tx_rate = tx_sum;
  }
  out->push_back(Gauge("host_net_receive_bytes_per_second",
                       "Receive rate summed over non-loopback devices", rx_rate));
  out->push_back(Gauge("host_net_transmit_bytes_per_second",
                       "Transmit rate summed over non-loopback devices", tx_rate));
  // Keep each family contiguous: counters of all devices, then rates of all devices.
  std::stable_sort(per_device.begin(), per_device.end(),
                   [](const MetricPoint& a, const MetricPoint& b) { return a.name < b.name; });
  for (MetricPoint& p : per_device) out->push_back(std::move(p));
  prev_net_ = std::move(now);
}

void HostSampler::SampleSnmp(double dt, std::vector<MetricPoint>* out) {
  Result<int64_t> retrans = ReadProcFile(Path("net/snmp"), &buf_).ok()
                                ? ParseSnmpTcpRetransSegs(buf_)
                                : Result<int64_t>(NotFoundError(""));
  out->push_back(SourceAvailable("net_snmp", retrans.ok()));
  double rate = NAN;
  if (retrans.ok() && prev_retrans_) {
    rate = Rate(static_cast<double>(*retrans), static_cast<double>(*prev_retrans_), dt);
  }
  out->push_back(Gauge("host_tcp_retrans_segments_per_second",
                       "TCP segments retransmitted per second (RetransSegs)", rate));
  if (retrans.ok()) {
    out->push_back(Counter("host_tcp_retrans_segments_total", "TCP RetransSegs",
                           static_cast<double>(*retrans)));
    prev_retrans_ = *retrans;
  } else {
    prev_retrans_.reset();
  }
}

void HostSampler::SamplePressure(std::vector<MetricPoint>* out) {
  for (const char* resource : {"cpu", "memory", "io"}) {
    Result<double> avg10 = ReadProcFile(Path(std::string("pressure/") + resource), &buf_).ok()
                               ? ParsePressureSomeAvg10(buf_)
                               : Result<double>(NotFoundError(""));
    out->push_back(SourceAvailable(std::string("pressure_") + resource, avg10.ok()));
    out->push_back(Gauge("host_pressure_some_avg10_ratio",
                         "PSI: share of the last 10 s some task stalled on the resource",
                         avg10.ok() ? *avg10 / 100.0 : NAN, {{"resource", resource}}));
  }
}

void HostSampler::SampleCgroup(double dt, std::vector<MetricPoint>* out) {
  Result<CgroupCpuStat> st = ReadProcFile(options_.cgroup_dir + "/cpu.stat", &buf_).ok()
                                 ? ParseCgroupCpuStat(buf_)
                                 : Result<CgroupCpuStat>(NotFoundError(""));
  out->push_back(SourceAvailable("cgroup_cpu_stat", st.ok()));
  double throttled_ratio = NAN, periods_rate = NAN;
  if (st.ok() && prev_cgroup_) {
    throttled_ratio = Rate(st->throttled_seconds, prev_cgroup_->throttled_seconds, dt);
    periods_rate = Rate(static_cast<double>(st->nr_throttled),
                        static_cast<double>(prev_cgroup_->nr_throttled), dt);
  }
  out->push_back(Gauge("cgroup_cpu_throttled_ratio",
                       "Seconds throttled per second of wall time (cgroup cpu.stat)",
                       throttled_ratio));
  out->push_back(Gauge("cgroup_cpu_throttled_periods_per_second",
                       "Throttled CFS periods per second (cgroup cpu.stat)", periods_rate));
  if (st.ok()) {
    out->push_back(Counter("cgroup_cpu_throttled_periods_total", "nr_throttled (cgroup cpu.stat)",
                           static_cast<double>(st->nr_throttled)));
    out->push_back(Counter("cgroup_cpu_throttled_seconds_total",
                           "throttled_usec / throttled_time (cgroup cpu.stat)",
                           st->throttled_seconds));
    prev_cgroup_ = *st;
  } else {
    prev_cgroup_.reset();
  }
}

void HostSampler::SamplePids(double dt, std::vector<MetricPoint>* out) {
  std::vector<MetricPoint> up, cores, rss, stopped, state, cpu_total;
  for (const WatchedPid& w : options_.pids) {
    MetricLabels l;
    if (w.rank >= 0) l.emplace_back("rank", std::to_string(w.rank));
    l.emplace_back("pid", std::to_string(w.pid));
    Status read = ReadProcFile(Path(std::to_string(w.pid) + "/stat"), &buf_, 4096);
    Result<ProcStat> st = read.ok() ? ParseProcStat(buf_, options_.clk_tck, options_.page_size)
                                    : Result<ProcStat>(read);
    up.push_back(Gauge("proc_up", "1 while the watched process exists, 0 once it is gone",
                       st.ok() ? 1 : 0, l));
    double rate = NAN;
    if (st.ok()) {
      auto prev = prev_pid_cpu_.find(w.pid);
      if (prev != prev_pid_cpu_.end()) rate = Rate(st->cpu_seconds, prev->second, dt);
      prev_pid_cpu_[w.pid] = st->cpu_seconds;
      cpu_total.push_back(Counter("proc_cpu_seconds_total", "utime + stime of the watched process",
                                  st->cpu_seconds, l));
    } else {
      prev_pid_cpu_.erase(w.pid);
    }
    cores.push_back(Gauge("proc_cpu_cores", "CPU seconds per second of the watched process", rate,
                          l));
    rss.push_back(Gauge("proc_resident_memory_bytes", "RSS of the watched process",
                        st.ok() ? static_cast<double>(st->rss_bytes) : NAN, l));
    stopped.push_back(Gauge("proc_stopped",
                            "1 when the watched process is stopped (state T/t, e.g. SIGSTOP)",
                            st.ok() ? IsStoppedState(st->state) : NAN, l));
    if (st.ok()) {
      MetricLabels sl = l;
      sl.emplace_back("state", std::string(1, st->state));
      state.push_back(Gauge("proc_state", "1 for the current /proc state letter (R S D T Z ...)",
                            1, sl));
    }
  }
  for (auto* group : {&up, &cores, &cpu_total, &rss, &stopped, &state}) {
    for (MetricPoint& p : *group) out->push_back(std::move(p));
  }
}

}  // namespace loom::monitor
