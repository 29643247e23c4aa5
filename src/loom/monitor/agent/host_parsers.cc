// Host pseudo-file parsers: see host_parsers.h.
#include "loom/monitor/agent/host_parsers.h"

#include <charconv>
#include <cstdlib>

namespace loom::monitor {
namespace {

std::string_view NextLine(std::string_view text, size_t* pos) {
  if (*pos >= text.size()) return {};  // past the end (e.g. a header line without its values)
  size_t end = text.find('\n', *pos);
  if (end == std::string_view::npos) end = text.size();
  std::string_view line = text.substr(*pos, end - *pos);
  *pos = end + 1;
  return line;
}

// Splits on runs of spaces/tabs.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ToInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

Status FieldError(std::string_view file, std::string_view field, std::string_view what) {
  return InvalidArgumentError(std::string(file) + ": field '" + std::string(field) + "' " +
                              std::string(what));
}

}  // namespace

Result<CpuTicks> ParseProcStatCpu(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> f = Fields(NextLine(text, &pos));
    if (f.empty() || f[0] != "cpu") continue;
    static constexpr const char* kNames[] = {"user", "nice",    "system", "idle",
                                             "iowait", "irq", "softirq", "steal"};
    int64_t v[8] = {};
    // Kernels before 2.6.11 have fewer columns; require the first four.
    if (f.size() < 5) return FieldError("/proc/stat", "cpu", "has fewer than 4 columns");
    for (size_t i = 0; i < 8 && i + 1 < f.size(); ++i) {
      if (!ToInt(f[i + 1], &v[i]) || v[i] < 0) {
        return FieldError("/proc/stat", std::string("cpu ") + kNames[i], "is not a count");
      }
    }
    return CpuTicks{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  }
  return FieldError("/proc/stat", "cpu", "is missing");
}

Result<MemInfo> ParseMeminfo(std::string_view text) {
  MemInfo m;
  bool have_total = false, have_avail = false;
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> f = Fields(NextLine(text, &pos));
    if (f.size() < 2) continue;
    int64_t* dst = nullptr;
    if (f[0] == "MemTotal:") {
      dst = &m.total_bytes;
      have_total = true;
    } else if (f[0] == "MemAvailable:") {
      dst = &m.available_bytes;
      have_avail = true;
    } else {
      continue;
    }
    int64_t kb = 0;
    if (!ToInt(f[1], &kb) || kb < 0 || (f.size() > 2 && f[2] != "kB")) {
      return FieldError("/proc/meminfo", f[0].substr(0, f[0].size() - 1), "is not 'N kB'");
    }
    *dst = kb * 1024;
  }
  if (!have_total) return FieldError("/proc/meminfo", "MemTotal", "is missing");
  if (!have_avail) return FieldError("/proc/meminfo", "MemAvailable", "is missing");
  return m;
}

Result<std::vector<NetDevCounters>> ParseNetDev(std::string_view text) {
  std::vector<NetDevCounters> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    std::string_view line = NextLine(text, &pos);
    ++line_no;
    if (line_no <= 2) continue;  // two header lines
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      if (Fields(line).empty()) continue;
      return FieldError("/proc/net/dev", "line " + std::to_string(line_no), "has no ':'");
    }
    NetDevCounters c;
    std::vector<std::string_view> name = Fields(line.substr(0, colon));
    if (name.size() != 1) {
      return FieldError("/proc/net/dev", "line " + std::to_string(line_no), "has no device name");
    }
    c.device = std::string(name[0]);
    std::vector<std::string_view> f = Fields(line.substr(colon + 1));
    if (f.size() < 16) return FieldError("/proc/net/dev", c.device, "has fewer than 16 columns");
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
    int64_t* dst[] = {&c.rx_bytes, &c.rx_packets, &c.rx_drop, &c.tx_bytes, &c.tx_packets,
                      &c.tx_drop};
    const int col[] = {0, 1, 3, 8, 9, 11};
    for (int k = 0; k < 6; ++k) {
      if (!ToInt(f[col[k]], dst[k])) {
        return FieldError("/proc/net/dev", c.device + " column " + std::to_string(col[k]),
                          "is not a count");
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<int64_t> ParseSnmpTcpRetransSegs(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> header = Fields(NextLine(text, &pos));
    if (header.empty() || header[0] != "Tcp:") continue;
    std::vector<std::string_view> values = Fields(NextLine(text, &pos));
    if (values.size() != header.size() || values[0] != "Tcp:") {
      return FieldError("/proc/net/snmp", "Tcp", "value line does not match its header");
    }
    for (size_t i = 1; i < header.size(); ++i) {
      if (header[i] != "RetransSegs") continue;
      int64_t v = 0;
      if (!ToInt(values[i], &v)) return FieldError("/proc/net/snmp", "RetransSegs", "not a count");
      return v;
    }
    return FieldError("/proc/net/snmp", "RetransSegs", "is missing");
  }
  return FieldError("/proc/net/snmp", "Tcp", "is missing");
}

Result<double> ParsePressureSomeAvg10(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> f = Fields(NextLine(text, &pos));
    if (f.empty() || f[0] != "some") continue;
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].substr(0, 6) != "avg10=") continue;
      std::string v(f[i].substr(6));
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || d < 0 || d > 100) {
        return FieldError("pressure", "some avg10", "is not a percentage: '" + v + "'");
      }
      return d;
    }
    return FieldError("pressure", "some avg10", "is missing");
  }
  return FieldError("pressure", "some", "is missing");
}

Result<CgroupCpuStat> ParseCgroupCpuStat(std::string_view text) {
  CgroupCpuStat s;
  bool have_throttled = false, have_time = false;
  size_t pos = 0;
  while (pos < text.size()) {
    std::vector<std::string_view> f = Fields(NextLine(text, &pos));
    if (f.size() != 2) continue;
    int64_t v = 0;
    if (!ToInt(f[1], &v) || v < 0) return FieldError("cpu.stat", f[0], "is not a count");
    if (f[0] == "nr_periods") {
      s.nr_periods = v;
    } else if (f[0] == "nr_throttled") {
      s.nr_throttled = v;
      have_throttled = true;
    } else if (f[0] == "throttled_usec") {
      s.throttled_seconds = static_cast<double>(v) * 1e-6;
      have_time = true;
    } else if (f[0] == "throttled_time") {
      s.throttled_seconds = static_cast<double>(v) * 1e-9;
      have_time = true;
    } else if (f[0] == "usage_usec") {
      s.usage_seconds = static_cast<double>(v) * 1e-6;
    }
  }
  if (!have_throttled) return FieldError("cpu.stat", "nr_throttled", "is missing");
  if (!have_time) return FieldError("cpu.stat", "throttled_usec/throttled_time", "is missing");
  return s;
}

}  // namespace loom::monitor
