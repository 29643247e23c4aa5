// Prometheus text exposition format 0.0.4 for the metrics agent's GET /metrics.
//
//   std::string body = RenderPrometheusText(points, {{"machine", "m0"}});
//   // # HELP loom_host_cpu_busy_ratio CPU busy fraction ...
//   // # TYPE loom_host_cpu_busy_ratio gauge
//   // loom_host_cpu_busy_ratio{machine="m0"} 0.25
//
// Points with the same name form one family (HELP/TYPE written once, families in order of first
// appearance); `common_labels` come first on every line. NaN renders as "NaN". Checked by
// `promtool check metrics` in the tests.
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/agent/metric_point.h"

namespace loom::monitor {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Escapes a label value (\\, \", \n) or HELP text (\\, \n) as the format requires.
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);
// [a-zA-Z_][a-zA-Z0-9_]* (the colon is reserved for recording rules).
bool IsValidMetricName(std::string_view name);

// Families whose points disagree on type or help, or invalid names, are an InvalidArgument
// error naming the metric (a programming error in a sampler; the agent logs it).
Result<std::string> RenderPrometheusText(const std::vector<MetricPoint>& points,
                                         const MetricLabels& common_labels,
                                         std::string_view prefix = "loom_");

}  // namespace loom::monitor
