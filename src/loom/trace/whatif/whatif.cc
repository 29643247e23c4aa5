#include "loom/trace/whatif/whatif.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"

namespace loom::trace::whatif {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Bytes(int64_t b) {
  if (b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

std::string WhatIf::Describe() const {
  std::vector<std::string> parts;
  if (world_size > 0) parts.push_back("world " + std::to_string(world_size) + " (extrapolated)");
  if (bucket_bytes > 0) parts.push_back("bucket " + Bytes(bucket_bytes));
  if (compression) {
    parts.push_back("compress " + compression->name + " ratio " + Num(compression->ratio) +
                    (compress_buckets.empty()
                         ? ""
                         : " on " + std::to_string(compress_buckets.size()) + " bucket(s)") +
                    (compress_min_elements > 0
                         ? " (buckets under " + std::to_string(compress_min_elements) +
                               " elements uncompressed)"
                         : ""));
  }
  if (bandwidth_scale != 1.0) parts.push_back("bandwidth x" + Num(bandwidth_scale));
  if (bandwidth_cap_bytes_per_s > 0) {
    parts.push_back("links at most " + Num(bandwidth_cap_bytes_per_s / 1e6) + " MB/s");
  }
  if (link_shape) {
    parts.push_back(link_shape->burst_bytes > 0
                        ? "links tbf " + Num(link_shape->rate_bytes_per_s / 1e6) + " MB/s burst " +
                              Bytes(static_cast<int64_t>(link_shape->burst_bytes)) + " at " +
                              Num(link_shape->line_bytes_per_s / 1e6) + " MB/s"
                        : "links " + Num(link_shape->rate_bytes_per_s / 1e6) + " MB/s");
    if (link_shape->alpha_ns >= 0) {
      parts.push_back("link latency " + Num(link_shape->alpha_ns / 1e3) + " us");
    }
  }
  if (overlap) parts.push_back(std::string("overlap ") + (*overlap ? "on" : "off"));
  for (const auto& [r, f] : stragglers)
    parts.push_back("straggler rank " + std::to_string(r) + " x" + Num(f));
  if (parts.empty()) return "no change";
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

Status ScaleBandwidth(dfg::ModelSpec* spec, double k) {
  if (!(k > 0) || !std::isfinite(k)) {
    return InvalidArgumentError("what-if bandwidth: factor " + Num(k) + " must be > 0");
  }
  spec->ns_per_byte /= k;
  for (dfg::RankModel& m : spec->ranks) {
    if (m.egress_ns_per_byte > 0) m.egress_ns_per_byte /= k;
  }
  return OkStatus();
}

Status CapBandwidth(dfg::ModelSpec* spec, double bytes_per_s) {
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s)) {
    return InvalidArgumentError("what-if bandwidth cap: " + Num(bytes_per_s) +
                                " B/s must be > 0");
  }
  const double floor_ns = 1e9 / bytes_per_s;
  auto cap = [floor_ns](double& ns_per_byte) {
    if (ns_per_byte > 0) ns_per_byte = std::max(ns_per_byte, floor_ns);
  };
  cap(spec->ns_per_byte);
  cap(spec->line_ns_per_byte);
  for (dfg::RankModel& m : spec->ranks) {
    cap(m.egress_ns_per_byte);
    cap(m.egress_line_ns_per_byte);
  }
  return OkStatus();
}

Status ShapeLinks(dfg::ModelSpec* spec, const LinkShape& shape) {
  if (spec->topology != dfg::LinkTopology::kPerSender) {
    return FailedPreconditionError("what-if link shape: token buckets need per-sender links");
  }
  if (!(shape.rate_bytes_per_s > 0) || !std::isfinite(shape.rate_bytes_per_s)) {
    return InvalidArgumentError("what-if link shape: rate " + Num(shape.rate_bytes_per_s) +
                                " B/s must be > 0");
  }
  const bool bucket = shape.burst_bytes > 0;
  if (bucket && !(shape.line_bytes_per_s > shape.rate_bytes_per_s)) {
    return InvalidArgumentError("what-if link shape: line rate " +
                                Num(shape.line_bytes_per_s) + " B/s must exceed the token rate " +
                                Num(shape.rate_bytes_per_s) + " B/s");
  }
  spec->ns_per_byte = 1e9 / shape.rate_bytes_per_s;
  spec->burst_bytes = bucket ? shape.burst_bytes : 0;
  spec->line_ns_per_byte = bucket ? 1e9 / shape.line_bytes_per_s : 0;
  if (shape.alpha_ns >= 0) spec->alpha_ns = shape.alpha_ns;
  for (dfg::RankModel& m : spec->ranks) {
    if (shape.alpha_ns >= 0) m.egress_alpha_ns = -1;
    m.egress_ns_per_byte = -1;
    m.egress_burst_bytes = -1;
    m.egress_line_ns_per_byte = -1;
  }
  return OkStatus();
}

Status ApplyLinkWhatIf(dfg::ModelSpec* spec, const WhatIf& w) {
  if (w.bandwidth_scale != 1.0) LOOM_RETURN_IF_ERROR(ScaleBandwidth(spec, w.bandwidth_scale));
  if (w.bandwidth_cap_bytes_per_s > 0) {
    LOOM_RETURN_IF_ERROR(CapBandwidth(spec, w.bandwidth_cap_bytes_per_s));
  }
  if (w.link_shape) LOOM_RETURN_IF_ERROR(ShapeLinks(spec, *w.link_shape));
  return OkStatus();
}

void RegroupPerBucketGathers(dfg::ModelSpec* spec, const std::vector<int>& old_bucket_begin) {
  if (spec->bucket_begin == old_bucket_begin) return;  // keep the measured per-collective costs
  const int old_buckets = static_cast<int>(old_bucket_begin.size());
  std::vector<dfg::UpdateCollective>& updates = spec->update_collectives;
  const int total = static_cast<int>(updates.size());
  int first = 0;
  while (first < total && updates[first].kind != dfg::CollectiveKind::kAllGather) ++first;
  const int last = first + old_buckets;  // one past the run
  if (old_buckets <= 0 || last > total) return;
  double update_bytes = 0, grad_bytes = 0;
  for (int u = 0; u < total; ++u) {
    const bool in_run = u >= first && u < last;
    if (in_run != (updates[u].kind == dfg::CollectiveKind::kAllGather)) return;
    if (in_run) update_bytes += static_cast<double>(updates[u].bytes);
  }
  for (const dfg::GradientPiece& g : spec->grads) grad_bytes += static_cast<double>(g.bytes);
  if (!(grad_bytes > 0)) return;
  const int n = spec->num_buckets();
  std::vector<dfg::UpdateCollective> regrouped(updates.begin(), updates.begin() + first);
  for (int b = 0; b < n; ++b) {
    const int end = b + 1 < n ? spec->bucket_begin[b + 1] : static_cast<int>(spec->grads.size());
    double bytes = 0;
    for (int i = spec->bucket_begin[b]; i < end; ++i) {
      bytes += static_cast<double>(spec->grads[i].bytes);
    }
    regrouped.push_back({std::llround(bytes * update_bytes / grad_bytes),
                         dfg::CollectiveKind::kAllGather});
  }
  regrouped.insert(regrouped.end(), updates.begin() + last, updates.end());
  updates = std::move(regrouped);
  // Per-collective measurements: kept outside the run; the run's mean Sync, no finish time. A
  // vector that does not have one entry per old collective is dropped (Sync falls back to the
  // spec's sync_ns, finish to 0) rather than shifted onto the wrong collectives.
  auto rebuild = [&](std::vector<double>& v, bool mean) {
    if (static_cast<int>(v.size()) != total) {
      v.clear();
      return;
    }
    double sum = 0;
    for (int u = first; u < last; ++u) sum += v[u];
    std::vector<double> out(v.begin(), v.begin() + first);
    out.insert(out.end(), n, mean ? sum / old_buckets : 0.0);
    out.insert(out.end(), v.begin() + last, v.end());
    v = std::move(out);
  };
  for (dfg::RankModel& m : spec->ranks) {
    rebuild(m.update_sync_ns, true);
    rebuild(m.update_finish_ns, false);
  }
}

Status RegroupBuckets(dfg::ModelSpec* spec, int64_t max_bytes) {
  if (max_bytes <= 0) return InvalidArgumentError("what-if bucket: size must be > 0 bytes");
  if (!spec->bucket_codec.empty()) {
    for (const dfg::CodecModel& c : spec->bucket_codec) {
      if (c.name != spec->bucket_codec[0].name || c.ratio != spec->bucket_codec[0].ratio) {
        return FailedPreconditionError(
            "what-if bucket: cannot regroup buckets that use different codecs");
      }
    }
  }
  const dfg::CodecModel codec =
      spec->bucket_codec.empty() ? dfg::CodecModel{} : spec->bucket_codec[0];
  const std::vector<int> old_bucket_begin = spec->bucket_begin;
  spec->bucket_begin = dfg::BucketsByBytes(spec->grads, max_bytes);
  for (dfg::RankModel& m : spec->ranks) {  // new buckets: the spec's Sync, no finish time
    m.bucket_sync_ns.clear();
    m.bucket_finish_ns.clear();
  }
  RegroupPerBucketGathers(spec, old_bucket_begin);
  if (!spec->bucket_codec.empty()) spec->bucket_codec.assign(spec->num_buckets(), codec);
  return OkStatus();
}

void SetOverlap(dfg::ModelSpec* spec, bool on) { spec->overlap = on; }

Status SetStraggler(dfg::ModelSpec* spec, int rank, double ratio) {
  if (rank < 0 || rank >= spec->world_size) {
    return InvalidArgumentError("what-if straggler: rank " + std::to_string(rank) +
                                " is not in 0.." + std::to_string(spec->world_size - 1));
  }
  if (!(ratio > 0) || !std::isfinite(ratio)) {
    return InvalidArgumentError("what-if straggler: ratio " + Num(ratio) + " must be > 0");
  }
  spec->ranks[rank].compute_ratio *= ratio;
  return OkStatus();
}

Status SetWorldSize(dfg::ModelSpec* spec, int world) {
  if (world < 1 || world > 4096) {
    return InvalidArgumentError("what-if world: " + std::to_string(world) +
                                " ranks is not in 1..4096");
  }
  std::vector<dfg::RankModel> ranks;
  for (int r = 0; r < world; ++r) ranks.push_back(spec->ranks[r % spec->world_size]);
  spec->ranks = std::move(ranks);
  spec->world_size = world;
  return OkStatus();
}

Status SetCompression(dfg::ModelSpec* spec, const dfg::CodecModel& codec,
                      const std::vector<int>& buckets) {
  if (!(codec.ratio > 0)) return InvalidArgumentError("what-if compress: ratio must be > 0");
  if (spec->bucket_codec.empty()) spec->bucket_codec.assign(spec->num_buckets(), dfg::CodecModel{});
  if (buckets.empty()) {
    spec->bucket_codec.assign(spec->num_buckets(), codec);
    return OkStatus();
  }
  for (int b : buckets) {
    if (b < 0 || b >= spec->num_buckets()) {
      return InvalidArgumentError("what-if compress: bucket " + std::to_string(b) +
                                  " is not in 0.." + std::to_string(spec->num_buckets() - 1));
    }
    spec->bucket_codec[b] = codec;
  }
  return OkStatus();
}

int ExemptSmallBuckets(dfg::ModelSpec* spec, int64_t min_elements) {
  if (min_elements <= 0 || spec->bucket_codec.empty()) return 0;
  int exempted = 0;
  for (int b = 0; b < spec->num_buckets(); ++b) {
    const int end = b + 1 < spec->num_buckets() ? spec->bucket_begin[b + 1]
                                                : static_cast<int>(spec->grads.size());
    int64_t bytes = 0;
    for (int g = spec->bucket_begin[b]; g < end; ++g) bytes += spec->grads[g].bytes;
    if (bytes / 4 >= min_elements || !spec->bucket_codec[b].enabled()) continue;
    spec->bucket_codec[b] = dfg::CodecModel{};
    ++exempted;
  }
  return exempted;
}

Result<dfg::ModelSpec> ApplyWhatIf(const dfg::ModelSpec& base, const WhatIf& w) {
  dfg::ModelSpec s = base;
  if (w.world_size > 0) LOOM_RETURN_IF_ERROR(SetWorldSize(&s, w.world_size));
  if (w.bucket_bytes > 0) LOOM_RETURN_IF_ERROR(RegroupBuckets(&s, w.bucket_bytes));
  if (w.compression) {
    LOOM_RETURN_IF_ERROR(SetCompression(&s, *w.compression, w.compress_buckets));
    ExemptSmallBuckets(&s, w.compress_min_elements);
  }
  LOOM_RETURN_IF_ERROR(ApplyLinkWhatIf(&s, w));
  if (w.overlap) SetOverlap(&s, *w.overlap);
  for (const auto& [r, f] : w.stragglers) LOOM_RETURN_IF_ERROR(SetStraggler(&s, r, f));
  LOOM_RETURN_IF_ERROR(s.Validate());
  return s;
}

Status ScaleBandwidth(dfg::Graph* g, double k) {
  if (!(k > 0) || !std::isfinite(k)) {
    return InvalidArgumentError("what-if bandwidth: factor " + Num(k) + " must be > 0");
  }
  for (dfg::Link& l : g->mutable_links()) l.ns_per_byte /= k;
  return g->Finalize();
}

Status DisableOverlap(dfg::Graph* g) {
  const int ranks = g->num_ranks();
  for (int r = 0; r < ranks; ++r) {
    const std::vector<int> bw = g->NodesOf(dfg::NodeKind::kBackward, r);
    if (bw.empty()) continue;
    // The last backward node: the one no other backward node of the rank follows.
    int last = bw.back();
    for (int v : bw) {
      bool has_bw_succ = false;
      for (int e : g->out_edges()[v]) {
        has_bw_succ |= g->nodes()[g->edges()[e].to].kind == dfg::NodeKind::kBackward;
      }
      if (!has_bw_succ) last = v;
    }
    for (int s : g->NodesOf(dfg::NodeKind::kSync, r)) {
      double gap = 0;
      for (int e : g->in_edges()[s]) {
        if (g->nodes()[g->edges()[e].from].kind == dfg::NodeKind::kBackward) {
          gap = std::max(gap, g->edges()[e].gap_ns);
        }
      }
      g->AddEdge(last, s, gap);
    }
  }
  return g->Finalize();
}

Status SetStraggler(dfg::Graph* g, int rank, double ratio) {
  if (rank < 0 || rank >= g->num_ranks() || !(ratio > 0)) {
    return InvalidArgumentError("what-if straggler: rank " + std::to_string(rank) + " ratio " +
                                Num(ratio) + " is not valid for " + std::to_string(g->num_ranks()) +
                                " ranks");
  }
  for (dfg::Node& n : g->mutable_nodes()) {
    const bool on_comm = n.device >= 0 && g->devices()[n.device].is_comm;
    if (n.rank == rank && dfg::IsCompute(n.kind) && !on_comm) n.ratio *= ratio;
  }
  return g->Finalize();
}

Result<WhatIfResult> RunWhatIf(const dfg::ModelSpec& base, const WhatIf& w,
                               const replay::ReplayOptions& options) {
  WhatIfResult r;
  LOOM_ASSIGN_OR_RETURN(r.spec, ApplyWhatIf(base, w));
  LOOM_ASSIGN_OR_RETURN(r.base_graph, dfg::BuildGraph(base));
  LOOM_ASSIGN_OR_RETURN(r.graph, dfg::BuildGraph(r.spec));
  LOOM_ASSIGN_OR_RETURN(r.base, replay::Replay(r.base_graph, options));
  LOOM_ASSIGN_OR_RETURN(r.predicted, replay::Replay(r.graph, options));
  r.base_analytical = replay::Analytical(base);
  r.analytical = replay::Analytical(r.spec);
  return r;
}

Result<dfg::CodecModel> DefaultCodec(const std::string& name, double ratio) {
  dfg::CodecModel c;
  c.name = name;
  if (name == "none") {
    c.ratio = 1;
  } else if (name == "fp16" || name == "bf16") {
    c = {name, 0.5, 1000, 0.25, 1000, 0.25};
  } else if (name == "int8") {
    c = {name, 8.25 / 32, 2000, 0.5, 2000, 0.25};
  } else if (name == "int4") {
    c = {name, 4.25 / 32, 2000, 0.5, 2000, 0.25};
  } else {
    return InvalidArgumentError("what-if compress: unknown codec '" + name +
                                "' (known: none, fp16, bf16, int8, int4)");
  }
  if (ratio > 0) c.ratio = ratio;
  return c;
}

Result<dfg::CodecModel> CodecFromBenchJson(const std::string& path, const std::string& name,
                                           double ratio) {
  LOOM_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    return InvalidArgumentError(path +
                                ": not a `loom bench codecs --json` file (no results array)");
  }
  // Least squares t = a + b·n over the codec's rows, for encode and decode.
  double sn = 0, snn = 0, se = 0, sne = 0, sd = 0, snd = 0, bits = 0;
  int rows = 0;
  try {
    for (const auto& row : doc["results"]) {
      const std::string codec = row.at("codec").get<std::string>();
      if (codec.rfind(name, 0) != 0) continue;
      const double n = row.at("elements").get<double>();
      const double enc = 4 * n / row.at("encode_gbs").get<double>();  // ns
      const double dec = 4 * n / row.at("decode_gbs").get<double>();
      if (!std::isfinite(enc) || !std::isfinite(dec) || n <= 0) continue;
      sn += n;
      snn += n * n;
      se += enc;
      sne += n * enc;
      sd += dec;
      snd += n * dec;
      bits += row.at("bits_per_element").get<double>();
      ++rows;
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(path + ": malformed codec row: " + e.what());
  }
  if (rows == 0) return NotFoundError(path + ": no codec row named '" + name + "*'");
  dfg::CodecModel c;
  c.name = name;
  c.ratio = ratio > 0 ? ratio : bits / rows / 32.0;
  const double det = rows * snn - sn * sn;
  auto fit = [&](double st, double snt, double* a, double* b) {
    if (rows >= 2 && det > 0) {
      *b = std::max(0.0, (rows * snt - sn * st) / det);
      *a = std::max(0.0, (st - *b * sn) / rows);
    } else {
      *a = 0;
      *b = st / sn;
    }
  };
  fit(se, sne, &c.encode_a_ns, &c.encode_ns_per_elem);
  fit(sd, snd, &c.decode_a_ns, &c.decode_ns_per_elem);
  return c;
}

}  // namespace loom::trace::whatif
