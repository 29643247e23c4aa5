// HostSampler: reads the host sources of the metrics agent once per call and turns them into
// MetricPoints, computing rates from the deltas to the previous call:
//   /proc/stat (CPU busy fraction, CPU seconds by mode), /proc/meminfo (used, available),
//   /proc/net/dev (rx/tx bytes per second summed over non-loopback interfaces, plus per device),
//   /proc/net/snmp (TCP RetransSegs per second), /proc/pressure/{cpu,memory,io} (some avg10),
//   cgroup cpu.stat (throttled periods and time), per watched PID /proc/<pid>/stat
//   (CPU cores used, RSS, state; stopped=1 for 'T'), and GPUs through NVML when it loads.
// A source that cannot be read gives `source_available{source=...} 0` and NaN gauges, never 0.
// Rates are NaN on the first sample (no delta yet).
//
//   HostSampler sampler({.proc_root = "/proc", .pids = {{1234, 0}}});
//   std::vector<MetricPoint> points = sampler.Sample(MonotonicSeconds());
//
// Thread-safety: not thread-safe; one sampling thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/monitor/agent/host_parsers.h"
#include "loom/monitor/agent/metric_point.h"
#include "loom/monitor/agent/nvml_source.h"
#include "loom/monitor/agent/proc_stat.h"

namespace loom::monitor {

struct WatchedPid {
  int pid = 0;
  int rank = -1;  // -1: no rank label
};

struct HostSamplerOptions {
  std::string proc_root = "/proc";  // tests point this at a directory of synthetic files
  std::string cgroup_dir;           // directory holding cpu.stat; empty: no cgroup metrics
  std::vector<WatchedPid> pids;
  bool per_device = true;  // also export per-interface net rates and counters
  long clk_tck = 0;        // 0: sysconf(_SC_CLK_TCK)
  long page_size = 0;      // 0: sysconf(_SC_PAGESIZE)
  // NVML (GPU gauges, nvml_source.h), dlopened at the first Sample; empty: no GPU source at all.
  // Without the library the agent reports source_available{source="nvml"} 0.
  std::string nvml_library = "libnvidia-ml.so.1";
};

class HostSampler {
 public:
  explicit HostSampler(HostSamplerOptions options);

  // Reads every source; `now_s` is a monotonic time in seconds used for the rates.
  std::vector<MetricPoint> Sample(double now_s);

  // Adds/removes a watched PID (the robust executor learns ranks' PIDs after start).
  void WatchPid(WatchedPid p);
  void UnwatchPid(int pid);

 private:
  void SampleCpu(double dt, std::vector<MetricPoint>* out);
  void SampleMemory(std::vector<MetricPoint>* out);
  void SampleNet(double dt, std::vector<MetricPoint>* out);
  void SampleSnmp(double dt, std::vector<MetricPoint>* out);
  void SamplePressure(std::vector<MetricPoint>* out);
  void SampleCgroup(double dt, std::vector<MetricPoint>* out);
  void SamplePids(double dt, std::vector<MetricPoint>* out);
  std::string Path(const std::string& rel) const { return options_.proc_root + "/" + rel; }

  HostSamplerOptions options_;
  std::string buf_;  // reused read buffer
  double last_s_ = -1;
  std::optional<CpuTicks> prev_cpu_;
  std::map<std::string, NetDevCounters> prev_net_;
  std::optional<int64_t> prev_retrans_;
  std::optional<CgroupCpuStat> prev_cgroup_;
  std::map<int, double> prev_pid_cpu_;  // pid -> cpu seconds at the last sample
  std::optional<NvmlSource> nvml_;      // opened at the first Sample
};

}  // namespace loom::monitor
