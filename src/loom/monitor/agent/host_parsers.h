// Parsers for the host pseudo-files the metrics agent samples. Each takes the file's text (so
// tests feed synthetic /proc-format strings) and returns raw counters; rates are computed by
// HostSampler from two samples. Malformed text is an InvalidArgument error naming the file and
// the field.
//
//   LOOM_ASSIGN_OR_RETURN(CpuTicks cpu, ParseProcStatCpu(text));   // /proc/stat
//
// Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

// The aggregate "cpu" line of /proc/stat in USER_HZ ticks. guest/guest_nice are already inside
// user/nice and are not added again.
struct CpuTicks {
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  int64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  int64_t Busy() const { return Total() - idle - iowait; }
};
Result<CpuTicks> ParseProcStatCpu(std::string_view text);

// /proc/meminfo, in bytes.
struct MemInfo {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
  int64_t UsedBytes() const { return total_bytes - available_bytes; }
};
Result<MemInfo> ParseMeminfo(std::string_view text);

// One interface of /proc/net/dev.
struct NetDevCounters {
  std::string device;
  int64_t rx_bytes = 0, rx_packets = 0, rx_drop = 0;
  int64_t tx_bytes = 0, tx_packets = 0, tx_drop = 0;
};
Result<std::vector<NetDevCounters>> ParseNetDev(std::string_view text);

// TCP RetransSegs from /proc/net/snmp (the "Tcp:" header line names the columns).
Result<int64_t> ParseSnmpTcpRetransSegs(std::string_view text);

// The "some avg10=" value (percent of wall time) of a /proc/pressure/{cpu,memory,io} file.
Result<double> ParsePressureSomeAvg10(std::string_view text);

// cgroup cpu.stat: v2 has nr_throttled and throttled_usec; v1 has nr_throttled and
// throttled_time (ns). usage_usec is v2 only (-1 when absent).
struct CgroupCpuStat {
  int64_t nr_periods = 0;
  int64_t nr_throttled = 0;
  double throttled_seconds = 0;
  double usage_seconds = -1;
};
Result<CgroupCpuStat> ParseCgroupCpuStat(std::string_view text);

}  // namespace loom::monitor
