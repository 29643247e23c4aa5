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

double ModelVethRate(const LinkProbe& probe, const dfg::ModelSpec& spec) {
  double bytes = 0, seconds = 0;
  for (const LinkProbeOp& op : probe.ops) {
    const double b = op.wire_bytes_per_rank;
    const double segs = spec.segment_bytes > 0
                            ? std::max(1.0, std::ceil(b / static_cast<double>(spec.segment_bytes)))
                            : 1.0;
    const double rest_ns =
        spec.sync_ns + segs * spec.alpha_ns + spec.recv_ns + b * spec.recv_ns_per_byte;
    const double t_ns = op.time_us * 1e3;
    bytes += b;
    seconds += std::max(t_ns - rest_ns, 0.25 * t_ns) * 1e-9;
  }
  return seconds > 0 ? bytes / seconds : 0;
}

}  // namespace loom::trace::evaluation
