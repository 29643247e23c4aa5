// Prometheus text format 0.0.4 rendering: see prometheus_text.h.
#include "loom/monitor/agent/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <map>

namespace loom::monitor {
namespace {

void AppendValue(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    // Integers (counters, bytes) in plain digits; others in the shortest round-trip form.
    const bool integral = v == std::floor(v) && std::fabs(v) < 1e15;
    auto [end, ec] = integral ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                              : std::to_chars(buf, buf + sizeof(buf), v);
    out->append(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  }
}

void AppendLabels(const MetricLabels& common, const MetricLabels& own, std::string* out) {
  if (common.empty() && own.empty()) return;
  *out += '{';
  bool first = true;
  for (const MetricLabels* set : {&common, &own}) {
    for (const auto& [k, v] : *set) {
      if (!first) *out += ',';
      first = false;
      *out += k;
      *out += "=\"";
      *out += EscapeLabelValue(v);
      *out += '"';
    }
  }
  *out += '}';
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

Result<std::string> RenderPrometheusText(const std::vector<MetricPoint>& points,
                                         const MetricLabels& common_labels,
                                         std::string_view prefix) {
  // Family order = first appearance; points of a family keep their order.
  std::vector<std::vector<const MetricPoint*>> families;
  std::map<std::string_view, size_t> index;
  for (const MetricPoint& p : points) {
    if (!IsValidMetricName(p.name)) {
      return InvalidArgumentError("metric name '" + p.name + "' is not [a-zA-Z_][a-zA-Z0-9_]*");
    }
    for (const auto& [k, v] : p.labels) {
      if (!IsValidMetricName(k) || k.substr(0, 2) == "__") {
        return InvalidArgumentError("metric '" + p.name + "': label name '" + k + "' is invalid");
      }
    }
    auto [it, inserted] = index.emplace(p.name, families.size());
    if (inserted) {
      families.push_back({&p});
      continue;
    }
    const MetricPoint& first = *families[it->second].front();
    if (first.type != p.type || first.help != p.help) {
      return InvalidArgumentError("metric '" + p.name + "': points disagree on TYPE or HELP");
    }
    families[it->second].push_back(&p);
  }
  std::string out;
  out.reserve(points.size() * 96);
  for (const auto& family : families) {
    const MetricPoint& head = *family.front();
    std::string name = std::string(prefix) + head.name;
    out += "# HELP " + name + " " + EscapeHelp(head.help) + "\n";
    out += "# TYPE " + name + (head.type == MetricType::kCounter ? " counter\n" : " gauge\n");
    for (const MetricPoint* p : family) {
      out += name;
      AppendLabels(common_labels, p->labels, &out);
      out += ' ';
      AppendValue(p->value, &out);
      out += '\n';
    }
  }
  return out;
}

}  // namespace loom::monitor
