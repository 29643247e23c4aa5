#include "loom/trace/evaluation/link_probe.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace loom::trace::evaluation {

Result<LinkProbe> ReadLinkProbe(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("link probe: cannot open '" + path + "'");
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") ||
      !doc["results"].is_array()) {
    return DataLossError("link probe: '" + path +
                         "' is not a `loom bench collectives --json` document");
  }
  std::vector<LinkProbeOp> rows;
  int64_t largest = 0;
  for (const nlohmann::json& row : doc["results"]) {
    const std::string op = row.value("op", "");
    if (op != "reduce_scatter" && op != "allgather") continue;
    if (!row.contains("arms") || !row["arms"].contains("loom")) continue;
    const nlohmann::json& arm = row["arms"]["loom"];
    LinkProbeOp r;
    r.op = op;
    r.bytes = row.value("bytes", int64_t{0});
    r.wire_bytes_per_rank = arm.value("wire_bytes_per_rank", 0.0);
    r.time_us = arm.value("time_us_median", 0.0);
    if (!(r.time_us > 0) || !(r.wire_bytes_per_rank > 0)) {
      return InvalidArgumentError("link probe: '" + path + "': " + op + " at " +
                                  std::to_string(r.bytes) +
                                  " bytes has no positive time or wire bytes");
    }
    largest = std::max(largest, r.bytes);
    rows.push_back(r);
  }
  LinkProbe p;
  p.all_ops = rows;
  double wire = 0, seconds = 0;
  for (const LinkProbeOp& r : rows) {
    if (r.bytes != largest) continue;
    p.ops.push_back(r);
    wire += r.wire_bytes_per_rank;
    seconds += r.time_us * 1e-6;
  }
  if (p.ops.empty()) {
    return DataLossError("link probe: '" + path +
                         "' has no reduce_scatter or allgather row with loom's arm");
  }
  p.goodput_bytes_per_s = wire / seconds;
  return p;
}

namespace {

// Pipelined segments of one ring step of `bytes`, as the replay splits it.
double Segments(double bytes, const dfg::ModelSpec& spec) {
  return spec.segment_bytes > 0
             ? std::max(1.0, std::ceil(bytes / static_cast<double>(spec.segment_bytes)))
             : 1.0;
}

// The model's cost of one ring step that is neither α nor the wire: setup and reduction.
double FixedNs(double bytes, const dfg::ModelSpec& spec) {
  return spec.sync_ns + spec.recv_ns + bytes * spec.recv_ns_per_byte;
}

}  // namespace

VethLinkFit FitVethLink(const LinkProbe& probe, const dfg::ModelSpec& spec) {
  VethLinkFit fit;
  std::vector<int64_t> sizes;
  for (const LinkProbeOp& op : probe.all_ops) sizes.push_back(op.bytes);
  std::sort(sizes.begin(), sizes.end());
  fit.sizes = static_cast<int>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
  fit.bytes_per_s = ModelVethRate(probe, spec);
  if (fit.sizes < 2) return fit;
  // Normal equations of y = s·α + b·c (c = 1/β in ns per byte).
  double ss = 0, sb = 0, bb = 0, sy = 0, by = 0;
  for (const LinkProbeOp& op : probe.all_ops) {
    const double b = op.wire_bytes_per_rank, s = Segments(b, spec);
    const double y = op.time_us * 1e3 - FixedNs(b, spec);
    ss += s * s;
    sb += s * b;
    bb += b * b;
    sy += s * y;
    by += b * y;
  }
  const double det = ss * bb - sb * sb;
  double alpha = det > 0 ? (sy * bb - by * sb) / det : -1;
  double c = det > 0 ? (ss * by - sb * sy) / det : 0;
  if (!(alpha >= 0)) {  // a negative (or unidentified) latency: all of it is the wire
    alpha = 0;
    c = by / bb;
  }
  if (!(c > 0) || !std::isfinite(c) || !std::isfinite(alpha)) return fit;
  fit.alpha_ns = alpha;
  fit.bytes_per_s = 1e9 / c;
  return fit;
}

double ModelVethRate(const LinkProbe& probe, const dfg::ModelSpec& spec) {
  double bytes = 0, seconds = 0;
  for (const LinkProbeOp& op : probe.ops) {
    const double b = op.wire_bytes_per_rank;
    const double rest_ns = FixedNs(b, spec) + Segments(b, spec) * spec.alpha_ns;
    const double t_ns = op.time_us * 1e3;
    bytes += b;
    seconds += std::max(t_ns - rest_ns, 0.25 * t_ns) * 1e-9;
  }
  return seconds > 0 ? bytes / seconds : 0;
}

}  // namespace loom::trace::evaluation
