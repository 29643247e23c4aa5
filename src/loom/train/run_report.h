// The run directory of `loom train`: resolved config, metrics.jsonl (one JSON object per logged
// step: step, loss, tokens_per_s, mfu, lr, grad_norm, elapsed_s, and eval_loss on eval steps) and
// report.html (loss and throughput curves as inline SVG, run facts, the generated sample).
// A run resumed from a checkpoint appends to metrics.jsonl, so the rows of every attempt stay
// (in order; `elapsed_s` restarts with each attempt and `step` drops back to the restored step).
// Thread-safety: one writer (rank 0).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"

namespace loom::train {

struct MetricRow {
  int64_t step = 0;
  double loss = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double lr = 0;
  double grad_norm = 0;
  double elapsed_s = 0;
  double fwd_bwd_s = 0;       // forward + backward per step (window mean)
  double exposed_comm_s = 0;  // gradient-reduction time not hidden behind backward
  double optim_s = 0;         // optimizer step incl. parameter all-gather and bf16 refresh
  std::optional<double> eval_loss;
};

nlohmann::json MetricRowToJson(const MetricRow& r);
// The inverse of MetricRowToJson; missing optional fields read as 0, null (a NaN written by
// nlohmann) as NaN.
Result<MetricRow> MetricRowFromJson(const nlohmann::json& j);

class RunWriter {
 public:
  // Creates `dir` (and parents). Fails if it cannot. `resumed_from_step` 0: a fresh
  // metrics.jsonl. > 0 (the run continues a checkpoint of that step): earlier attempts' rows
  // stay in metrics.jsonl, and those up to that step seed the report's curves. An unreadable
  // earlier row is an error naming the line (never silently dropped).
  static Result<RunWriter> Open(const std::string& dir, int64_t resumed_from_step = 0);
  const std::string& dir() const { return dir_; }

  Status WriteConfig(const nlohmann::json& resolved);
  // Appends to metrics.jsonl (flushed line by line, so a crash keeps every logged step).
  Status Append(const MetricRow& row);
  // Writes report.html atomically; `facts` are (label, value) lines shown above the charts.
  Status WriteReport(const std::string& title,
                     const std::vector<std::pair<std::string, std::string>>& facts,
                     const std::string& sample) const;
  const std::vector<MetricRow>& rows() const { return rows_; }

 private:
  std::string dir_;
  std::vector<MetricRow> rows_;
};

}  // namespace loom::train
