#include "loom/train/run_report.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/base/svg_chart.h"

namespace loom::train {

nlohmann::json MetricRowToJson(const MetricRow& r) {
  nlohmann::json j = {{"step", r.step},
                      {"loss", r.loss},
                      {"tokens_per_s", r.tokens_per_s},
                      {"mfu", r.mfu},
                      {"lr", r.lr},
                      {"grad_norm", r.grad_norm},
                      {"elapsed_s", r.elapsed_s},
                      {"fwd_bwd_s", r.fwd_bwd_s},
                      {"exposed_comm_s", r.exposed_comm_s},
                      {"optim_s", r.optim_s}};
  if (r.eval_loss) j["eval_loss"] = *r.eval_loss;
  return j;
}

namespace {

// A numeric field of a metrics row: missing -> `absent`; null -> NaN (nlohmann writes a NaN loss
// or grad norm as null, and a diverged run must still resume); anything else must be a number.
double Num(const nlohmann::json& j, const char* key, double absent) {
  if (!j.contains(key)) return absent;
  if (j[key].is_null()) return std::nan("");
  return j[key].get<double>();
}

}  // namespace

Result<MetricRow> MetricRowFromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("step") || !j.contains("loss")) {
    return InvalidArgumentError("metrics row needs \"step\" and \"loss\"");
  }
  MetricRow r;
  try {
    r.step = j.at("step").get<int64_t>();
    r.loss = Num(j, "loss", 0);
    r.tokens_per_s = Num(j, "tokens_per_s", 0);
    r.mfu = Num(j, "mfu", 0);
    r.lr = Num(j, "lr", 0);
    r.grad_norm = Num(j, "grad_norm", 0);
    r.elapsed_s = Num(j, "elapsed_s", 0);
    r.fwd_bwd_s = Num(j, "fwd_bwd_s", 0);
    r.exposed_comm_s = Num(j, "exposed_comm_s", 0);
    r.optim_s = Num(j, "optim_s", 0);
    if (j.contains("eval_loss")) r.eval_loss = Num(j, "eval_loss", 0);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("metrics row: ") + e.what());
  }
  return r;
}

Result<RunWriter> RunWriter::Open(const std::string& dir, int64_t resumed_from_step) {
  LOOM_RETURN_IF_ERROR(MakeDirs(dir).WithContext("run_dir"));
  RunWriter w;
  w.dir_ = dir;
  const std::string path = dir + "/metrics.jsonl";
  if (resumed_from_step <= 0) {
    // A fresh run into the same directory starts a fresh metrics file.
    std::remove(path.c_str());
    return w;
  }
  // Resumed: keep every earlier attempt's rows; the lineage up to the restored step seeds the
  // report. A missing file is fine (the checkpoint may come from another run directory).
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return w;
  // A crash mid-append can leave a torn last line: cut it so the next row starts a line of its
  // own (the row was never complete, so nothing logged is lost).
  const size_t end = text->empty() || text->back() == '\n' ? text->size() : text->rfind('\n') + 1;
  if (end != text->size()) {
    if (::truncate(path.c_str(), static_cast<off_t>(end)) != 0) {
      return ErrnoError("truncate torn last line of", path, errno);
    }
    text->resize(end);
  }
  std::istringstream lines(*text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    Result<MetricRow> row = MetricRowFromJson(j);
    if (!row.ok()) {
      return row.status().WithContext(path + ":" + std::to_string(n));
    }
    // A later attempt restarts below the rows of the one before it; keep the newest lineage.
    while (!w.rows_.empty() && w.rows_.back().step >= row->step) w.rows_.pop_back();
    if (row->step <= resumed_from_step) w.rows_.push_back(*row);
  }
  return w;
}

Status RunWriter::WriteConfig(const nlohmann::json& resolved) {
  return WriteFileAtomic(dir_ + "/config.json", resolved.dump(2) + "\n");
}

Status RunWriter::Append(const MetricRow& row) {
  rows_.push_back(row);
  return AppendLine(dir_ + "/metrics.jsonl", MetricRowToJson(row).dump());
}

Status RunWriter::WriteReport(const std::string& title,
                              const std::vector<std::pair<std::string, std::string>>& facts,
                              const std::string& sample) const {
  ChartSeries train{"train loss", "#1f77b4", {}, false};
  ChartSeries eval{"eval loss", "#d62728", {}, true};
  ChartSeries tput{"tokens/s (all ranks)", "#2ca02c", {}, false};
  ChartSeries mfu{"MFU %", "#9467bd", {}, false};
  for (const MetricRow& r : rows_) {
    train.points.push_back({static_cast<double>(r.step), r.loss});
    if (r.eval_loss) eval.points.push_back({static_cast<double>(r.step), *r.eval_loss});
    tput.points.push_back({static_cast<double>(r.step), r.tokens_per_s});
    mfu.points.push_back({static_cast<double>(r.step), 100 * r.mfu});
  }
  std::string html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
      "</title>\n<style>body{font-family:sans-serif;max-width:720px;margin:24px auto;color:#222}"
      "td{padding:2px 12px 2px 0;vertical-align:top}pre{background:#f6f6f6;padding:12px;"
      "white-space:pre-wrap}</style></head><body>\n<h1>" +
      HtmlEscape(title) + "</h1>\n<table>\n";
  for (const auto& [k, v] : facts) {
    html += "<tr><td><b>" + HtmlEscape(k) + "</b></td><td>" + HtmlEscape(v) + "</td></tr>\n";
  }
  html += "</table>\n<h2>Loss</h2>\n" +
          SvgLineChart("loss (nats per byte)", "step", "loss", {train, eval}) +
          "<h2>Throughput</h2>\n" + SvgLineChart("throughput", "step", "tokens/s", {tput}) +
          SvgLineChart("model FLOPs utilisation", "step", "MFU %", {mfu}) +
          "<h2>Sample</h2>\n<pre>" + HtmlEscape(sample) +
          "</pre>\n<p>Per-step data: <code>metrics.jsonl</code>; resolved settings: "
          "<code>config.json</code>.</p>\n</body></html>\n";
  return WriteFileAtomic(dir_ + "/report.html", html);
}

}  // namespace loom::train
