#include "loom/trace/evaluation/config_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

namespace loom::trace::evaluation {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Result<double> ParseLinkRate(const std::string& rate) {
  if (rate == "unshaped") return 0.0;
  std::smatch m;
  if (!std::regex_match(rate, m, std::regex(R"(([0-9]*\.?[0-9]+)(k|m|g)bit)"))) {
    return InvalidArgumentError("link rate '" + rate +
                                "' is not 'unshaped' or a tc rate like 10mbit, 1gbit, 500kbit");
  }
  const double v = std::stod(m[1]);
  const double unit = m[2] == "k" ? 1e3 : m[2] == "m" ? 1e6 : 1e9;
  if (!(v > 0)) return InvalidArgumentError("link rate '" + rate + "' must be > 0");
  return v * unit;
}

std::string EvalConfig::Name() const {
  return rate + "/b" + Num(bucket_mb) + "/" + (overlap ? "ov" : "seq") + "/" + codec;
}

Result<std::string> TrainCodecSpec(const std::string& codec) {
  if (codec == "none" || codec == "fp16") return codec;
  if (codec == "int4" || codec == "int8") return codec + ":g128";
  return InvalidArgumentError("codec '" + codec + "' is not none, fp16, int8 or int4");
}

Result<std::vector<std::string>> TrainKeys(const EvalConfig& c) {
  if (!(c.bucket_mb > 0)) {
    return InvalidArgumentError("configuration " + c.Name() + ": bucket size must be > 0 MiB");
  }
  LOOM_ASSIGN_OR_RETURN(std::string spec, TrainCodecSpec(c.codec));
  std::vector<std::string> keys{"dist.bucket_mb=" + Num(c.bucket_mb),
                                std::string("dist.overlap=") + (c.overlap ? "true" : "false"),
                                "compress.grad=" + spec};
  if (c.codec != "none") {
    keys.push_back("compress.min_elements=" + std::to_string(kGridCompressMinElements));
  }
  return keys;
}

EvalConfig BaseConfig() { return {"200mbit", 0.25, true, "none"}; }

std::vector<EvalConfig> ReplayGrid(bool quick) {
  const EvalConfig base = BaseConfig();
  if (quick) {
    return {base,
            {"1gbit", 0.25, true, "none"},
            {"50mbit", 4, false, "none"},
            {"200mbit", 0.25, true, "int4"}};
  }
  std::vector<EvalConfig> grid = {base};
  auto add = [&](const EvalConfig& c) {
    if (!(c == base)) grid.push_back(c);
  };
  for (const char* rate : {"200mbit", "50mbit", "10mbit"}) {
    for (double bucket : {0.25, 4.0}) {
      for (bool overlap : {true, false}) {
        for (const char* codec : {"none", "int4"}) add({rate, bucket, overlap, codec});
      }
    }
  }
  for (const char* rate : {"1gbit", "unshaped"}) {
    add({rate, 0.25, true, "none"});
    add({rate, 4, false, "none"});
    add({rate, 0.25, true, "int4"});
  }
  return grid;
}

Result<double> BandwidthScale(const EvalConfig& target, const EvalConfig& base,
                              const BandwidthModel& bw) {
  LOOM_ASSIGN_OR_RETURN(double target_bps, ParseLinkRate(target.rate));
  LOOM_ASSIGN_OR_RETURN(double base_bps, ParseLinkRate(base.rate));
  if (base_bps == 0) {
    // Unshaped base: its bandwidth is what the trace measured.
    if (!(bw.base_fitted_bytes_per_s > 0)) {
      return InvalidArgumentError(
          "bandwidth what-if: the unshaped base trace has no identified link bandwidth (beta)");
    }
    base_bps = 8 * bw.base_fitted_bytes_per_s;
    if (target_bps == 0) return 1.0;
    return std::min(target_bps * kTcpGoodput, base_bps) / base_bps;
  }
  if (target_bps == 0) target_bps = std::max(bw.unshaped_bits_per_s, base_bps);
  return target_bps / base_bps;
}

Result<double> BandwidthCap(const EvalConfig& target, const EvalConfig& base,
                            const BandwidthModel& bw) {
  LOOM_ASSIGN_OR_RETURN(double target_bps, ParseLinkRate(target.rate));
  LOOM_ASSIGN_OR_RETURN(double base_bps, ParseLinkRate(base.rate));
  if (base_bps == 0 || target_bps == base_bps) return 0.0;
  const double unshaped = bw.unshaped_bits_per_s / 8;
  if (target_bps == 0) return unshaped;
  return std::min(target_bps / 8 * kTcpGoodput, unshaped);
}

Result<std::optional<whatif::LinkShape>> TargetLinkShape(const EvalConfig& target,
                                                         const EvalConfig& base,
                                                         const BandwidthModel& bw) {
  LOOM_ASSIGN_OR_RETURN(double target_bps, ParseLinkRate(target.rate));
  LOOM_ASSIGN_OR_RETURN(double base_bps, ParseLinkRate(base.rate));
  if (!(bw.tbf_burst_bytes > 0) || base_bps == 0 || target_bps == base_bps) {
    return std::optional<whatif::LinkShape>();
  }
  const double veth = bw.unshaped_bits_per_s / 8;
  if (target_bps == 0) {
    return std::optional<whatif::LinkShape>(whatif::LinkShape{veth, 0, 0, bw.unshaped_alpha_ns});
  }
  const double rate = target_bps / 8 * kTcpGoodput;
  if (!(veth > rate)) return std::optional<whatif::LinkShape>(whatif::LinkShape{veth, 0, 0});
  return std::optional<whatif::LinkShape>(
      whatif::LinkShape{rate, bw.tbf_burst_bytes * kTcpGoodput, veth});
}

Result<whatif::WhatIf> ToWhatIf(const EvalConfig& target, const EvalConfig& base,
                                const BandwidthModel& bw, const std::string& codecs_json) {
  if (base.codec != "none") {
    return UnimplementedError("what-if from a compressed base (" + base.Name() +
                              ") is not supported: profile an uncompressed base");
  }
  LOOM_RETURN_IF_ERROR(TrainKeys(target).status());
  whatif::WhatIf w;
  LOOM_ASSIGN_OR_RETURN(w.bandwidth_scale, BandwidthScale(target, base, bw));
  LOOM_ASSIGN_OR_RETURN(w.link_shape, TargetLinkShape(target, base, bw));
  if (w.link_shape) {
    w.bandwidth_scale = 1;  // the shape replaces the scaled fits
  } else {
    LOOM_ASSIGN_OR_RETURN(w.bandwidth_cap_bytes_per_s, BandwidthCap(target, base, bw));
  }
  if (target.bucket_mb != base.bucket_mb) {
    w.bucket_bytes = static_cast<int64_t>(std::llround(target.bucket_mb * 1048576.0));
  }
  if (target.overlap != base.overlap) w.overlap = target.overlap;
  if (target.codec != "none") {
    if (!codecs_json.empty()) {
      LOOM_ASSIGN_OR_RETURN(w.compression, whatif::CodecFromBenchJson(codecs_json, target.codec));
    } else {
      LOOM_ASSIGN_OR_RETURN(w.compression, whatif::DefaultCodec(target.codec));
    }
    w.compress_min_elements = kGridCompressMinElements;
  }
  return w;
}

}  // namespace loom::trace::evaluation
