// MetricPoint: one labelled sample the agent exposes (a gauge or a counter), the common currency
// between the samplers and the Prometheus text renderer.
//
//   std::vector<MetricPoint> out;
//   out.push_back(Gauge("host_cpu_busy_ratio", "CPU busy fraction", busy));
//   out.push_back(Counter("host_net_receive_bytes_total", "...", rx, {{"device", "eth0"}}));
//
// A value of NaN means "unavailable" (never a silent zero); a source that is missing also gets
// `loom_source_available{source="..."} 0`.
// Thread-safety: value types.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom::monitor {

enum class MetricType { kGauge, kCounter };

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricPoint {
  std::string name;  // without the "loom_" prefix; counters end in "_total"
  MetricType type = MetricType::kGauge;
  std::string help;
  MetricLabels labels;
  double value = 0;
};

inline MetricPoint Gauge(std::string name, std::string help, double value,
                         MetricLabels labels = {}) {
  return {std::move(name), MetricType::kGauge, std::move(help), std::move(labels), value};
}
inline MetricPoint Counter(std::string name, std::string help, double value,
                           MetricLabels labels = {}) {
  return {std::move(name), MetricType::kCounter, std::move(help), std::move(labels), value};
}

// `source_available{source=...}`: 1 when the agent could read the source, 0 when it is missing.
inline MetricPoint SourceAvailable(const std::string& source, bool ok) {
  return Gauge("source_available", "1 when the agent could read the source, 0 when it is missing",
               ok ? 1 : 0, {{"source", source}});
}

}  // namespace loom::monitor
