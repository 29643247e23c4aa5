#include "loom/train/train_compression.h"

#include <cstdio>
#include <numeric>

namespace loom::train {
namespace {

int64_t GroupOf(const compress::Codec* c) {
  return c != nullptr && c->spec().kind == compress::CodecKind::kInt ? c->spec().group : 1;
}

std::string Bits(const compress::Codec& c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.2f bits)", c.BitsPerElement(1 << 20));
  return buf;
}

std::string Traffic(const char* what, const compress::CollectiveStats& s) {
  if (s.calls == 0) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s %.1f MiB on the wire for %.1f MiB fp32 (%.1fx less), encode %.2f s, "
                "decode %.2f s, in collectives %.2f s",
                what, s.wire_bytes_sent / 1048576.0, s.fp32_bytes / 1048576.0,
                s.wire_bytes_sent > 0 ? static_cast<double>(s.fp32_bytes) / s.wire_bytes_sent : 0.0,
                s.encode_s, s.decode_s, s.comm_s);
  return buf;
}

}  // namespace

Result<TrainCompression> TrainCompression::FromConfig(const CompressConfig& c) {
  TrainCompression tc;
  LOOM_ASSIGN_OR_RETURN(compress::CodecSpec grad, compress::ParseCodecSpec(c.grad));
  if (grad.kind == compress::CodecKind::kPowerSgd) {
    tc.powersgd_rank = grad.rank;
  } else if (grad.kind != compress::CodecKind::kNone) {
    LOOM_ASSIGN_OR_RETURN(tc.grad, compress::MakeCodec(grad));
  }
  if (c.node_size > 1) {
    tc.node_size = c.node_size;
    LOOM_ASSIGN_OR_RETURN(compress::CodecSpec intra, compress::ParseCodecSpec(c.grad_intra));
    LOOM_ASSIGN_OR_RETURN(tc.grad_intra, compress::MakeCodec(intra));
  }
  LOOM_ASSIGN_OR_RETURN(tc.weight_spec, compress::ParseWeightSpec(c.weights));
  if (tc.weight_spec.enabled()) {
    LOOM_ASSIGN_OR_RETURN(tc.weights, compress::MakeCodec(tc.weight_spec.codec));
  }
  if (!c.plan.empty()) {
    for (const std::string& one : c.PlanCodecList()) {
      LOOM_ASSIGN_OR_RETURN(compress::CodecSpec s, compress::ParseCodecSpec(one));
      if (s.kind == compress::CodecKind::kInt) {
        tc.plan_group = std::lcm(tc.plan_group, int64_t{s.group});
      }
    }
  }
  return tc;
}

int64_t TrainCompression::pad_elements() const {
  return std::lcm(std::lcm(std::lcm(std::lcm(int64_t{16}, GroupOf(grad.get())),
                                     GroupOf(weights.get())),
                           plan_group),
                  GroupOf(grad_intra.get()));
}

std::string TrainCompression::Describe() const {
  std::string out = "grad " + (grad ? grad->spec().ToString() + Bits(*grad)
                               : powersgd_rank > 0
                                   ? "powersgd:r" + std::to_string(powersgd_rank) + " (low rank)"
                                   : "none");
  if (grad_intra != nullptr) {
    out += " across nodes, " + grad_intra->spec().ToString() + Bits(*grad_intra) +
           " within nodes of " + std::to_string(node_size) + " ranks (two-level)";
  }
  out += ", weights " + (weights ? weight_spec.ToString() + Bits(*weights) : "none");
  return out;
}

std::string DescribeTraffic(const compress::CollectiveStats& grad,
                            const compress::CollectiveStats& weights) {
  std::string g = Traffic("gradients", grad), w = Traffic("parameters", weights);
  if (g.empty() && w.empty()) return "";
  return "compressed traffic (this rank): " + g + (g.empty() || w.empty() ? "" : "; ") + w;
}

}  // namespace loom::train
