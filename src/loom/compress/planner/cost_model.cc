#include "loom/compress/planner/cost_model.h"

#include <cmath>
#include <set>

#include "loom/compress/codec.h"
#include "loom/compress/codec_spec.h"

namespace loom::compress::planner {
namespace {

bool NonNegativeFinite(double x) { return std::isfinite(x) && x >= 0; }

Status CheckLinear(const LinearCost& c, const std::string& what) {
  if (!NonNegativeFinite(c.a_s) || !NonNegativeFinite(c.b_s)) {
    return InvalidArgumentError(what + ": a_s and b_s must be finite and >= 0 (got " +
                                std::to_string(c.a_s) + ", " + std::to_string(c.b_s) + ")");
  }
  return OkStatus();
}

}  // namespace

Result<LinearCost> FitLinear(std::span<const std::pair<double, double>> samples) {
  double sn = 0, ss = 0, snn = 0, sns = 0;
  for (const auto& [n, s] : samples) {
    if (!NonNegativeFinite(n) || !NonNegativeFinite(s)) {
      return InvalidArgumentError("FitLinear: samples must be finite and >= 0");
    }
    sn += n;
    ss += s;
    snn += n * n;
    sns += n * s;
  }
  const double k = static_cast<double>(samples.size());
  const double det = k * snn - sn * sn;
  // det is k^2 times the variance of n: zero when all n are equal.
  if (samples.size() < 2 || !(det > 1e-12 * k * snn)) {
    return InvalidArgumentError("FitLinear: need samples at two or more distinct sizes (got " +
                                std::to_string(samples.size()) + " samples)");
  }
  LinearCost c{(snn * ss - sn * sns) / det, (k * sns - sn * ss) / det};
  if (c.a_s < 0) c = {0, sns / snn};  // through the origin
  if (c.b_s < 0) c = {ss / k, 0};     // constant
  return c;
}

bool CodecCost::is_none() const {
  Result<CodecSpec> s = ParseCodecSpec(spec);
  return s.ok() && s->kind == CodecKind::kNone;
}

Result<CodecCost> CodecCostFor(std::string_view spec, LinearCost encode, LinearCost decode,
                               double powersgd_bits_per_element) {
  LOOM_ASSIGN_OR_RETURN(CodecSpec parsed, ParseCodecSpec(spec));
  CodecCost c;
  c.spec = std::string(spec);
  c.encode = encode;
  c.decode = decode;
  if (parsed.kind == CodecKind::kPowerSgd) {
    if (!(powersgd_bits_per_element > 0)) {
      return InvalidArgumentError("CodecCostFor('" + c.spec +
                                  "'): PowerSGD needs its bits per element given explicitly");
    }
    c.bits_per_element = powersgd_bits_per_element;
    c.summable = true;  // the P and Q factors are all-reduced in fp32
    c.error_feedback = true;
    return c;
  }
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(parsed));
  c.bits_per_element = codec->BitsPerElement(int64_t{1} << 20);
  c.header_bytes = parsed.kind == CodecKind::kNone ? 0 : kHeaderBytes;
  c.summable = codec->Summable();
  c.error_feedback = parsed.kind == CodecKind::kSign || parsed.kind == CodecKind::kTopK ||
                     parsed.kind == CodecKind::kRandK;
  return c;
}

Status CostModel::Validate() const {
  if (world_size < 1) {
    return InvalidArgumentError("cost model: world_size must be >= 1, got " +
                                std::to_string(world_size));
  }
  if (links.size() != 1) {
    return UnimplementedError(
        "cost model: exactly one link level (the data-parallel link) is "
        "simulated so far, got " +
        std::to_string(links.size()));
  }
  for (const LinkModel& l : links) {
    if (!NonNegativeFinite(l.alpha_s) || !NonNegativeFinite(l.beta_s_per_byte)) {
      return InvalidArgumentError("cost model: link '" + l.name +
                                  "': alpha_s and beta_s_per_byte must be finite and >= 0");
    }
  }
  std::set<std::string> seen;
  bool has_none = false;
  for (const CodecCost& c : codecs) {
    Result<CodecSpec> parsed = ParseCodecSpec(c.spec);
    if (!parsed.ok()) return parsed.status().WithContext("cost model: codec '" + c.spec + "'");
    if (!seen.insert(parsed->ToString()).second) {
      return InvalidArgumentError("cost model: codec '" + c.spec + "' is listed twice");
    }
    has_none |= parsed->kind == CodecKind::kNone;
    const std::string what = "cost model: codec '" + c.spec + "'";
    LOOM_RETURN_IF_ERROR(CheckLinear(c.encode, what + " encode"));
    LOOM_RETURN_IF_ERROR(CheckLinear(c.decode, what + " decode"));
    if (!(c.bits_per_element > 0) || !std::isfinite(c.bits_per_element) || c.header_bytes < 0) {
      return InvalidArgumentError(what + ": bits_per_element must be > 0 and header_bytes >= 0");
    }
  }
  if (!has_none) return InvalidArgumentError("cost model: the codec list must include \"none\"");
  return OkStatus();
}

int CostModel::Find(std::string_view spec) const {
  Result<CodecSpec> want = ParseCodecSpec(spec);
  if (!want.ok()) return -1;
  for (size_t i = 0; i < codecs.size(); ++i) {
    Result<CodecSpec> have = ParseCodecSpec(codecs[i].spec);
    if (have.ok() && *have == *want) return static_cast<int>(i);
  }
  return -1;
}

double CostModel::LinkSeconds(const CodecCost& c, double n) const {
  if (world_size <= 1) return 0;
  const double p = world_size;
  const LinkModel& link = links.front();
  const double bytes = c.WireBytes(n);
  if (collective == GradCollective::kReduceScatter) return link.Seconds((p - 1) / p * bytes);
  double s = 2 * link.alpha_s + link.beta_s_per_byte * 2 * (p - 1) / p * bytes;
  if (!c.summable) s += (p - 1) * c.DecodeSeconds(n / p) + c.EncodeSeconds(n / p);
  return s;
}

double CostModel::FinalDecodeSeconds(const CodecCost& c, double n) const {
  if (world_size <= 1 || c.is_none()) return 0;
  const double p = world_size;
  if (collective == GradCollective::kAllReduce) return c.DecodeSeconds(n);
  return c.summable ? c.DecodeSeconds(n / p) : (p - 1) * c.DecodeSeconds(n / p);
}

}  // namespace loom::compress::planner
