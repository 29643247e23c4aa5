#include "loom/overlap/bench/bench_config.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace loom::overlap {

std::string BenchOpName(BenchOp op) {
  switch (op) {
    case BenchOp::kAgGemm:
      return "ag_gemm";
    case BenchOp::kGemmRs:
      return "gemm_rs";
    case BenchOp::kMoe:
      return "moe";
  }
  return "?";
}

Result<BenchOp> ParseBenchOp(const std::string& name) {
  if (name == "ag_gemm") return BenchOp::kAgGemm;
  if (name == "gemm_rs") return BenchOp::kGemmRs;
  if (name == "moe") return BenchOp::kMoe;
  return InvalidArgumentError("unknown op '" + name + "' (want ag_gemm, gemm_rs or moe)");
}

std::string BenchWorkload::Name() const {
  if (op == BenchOp::kMoe) {
    return "moe " + std::string(RoutingKindName(routing)) + " " + std::to_string(experts) +
           "e top" + std::to_string(top_k) + " h" + std::to_string(hidden) + " f" +
           std::to_string(ffn) + " t" + std::to_string(tokens);
  }
  return BenchOpName(op) + " " + std::to_string(m_shard) + "x" + std::to_string(k) + "x" +
         std::to_string(n_local);
}

nlohmann::json BenchWorkload::ToJson() const {
  nlohmann::json j = {{"op", BenchOpName(op)}, {"name", Name()}};
  if (op == BenchOp::kMoe) {
    j["experts"] = experts;
    j["top_k"] = top_k;
    j["hidden"] = hidden;
    j["ffn"] = ffn;
    j["tokens_per_rank"] = tokens;
    j["routing"] = std::string(RoutingKindName(routing));
  } else {
    j["m_shard"] = m_shard;
    j["k"] = k;
    j["n_local"] = n_local;
  }
  return j;
}

std::string BenchVariant::Name() const {
  if (mode != OverlapMode::kFused) return std::string(OverlapModeName(mode));
  std::string name = cross_layer ? "fused_s" : "layers_s";  // piecewise: GCC 12 -Wrestrict
  name += std::to_string(splits);
  return name;
}

nlohmann::json OverlapBenchConfig::ToJson() const {
  std::vector<std::string> op_names;
  for (BenchOp op : ops) op_names.push_back(BenchOpName(op));
  return {{"ops", op_names},
          {"ratios", ratios},
          {"splits", splits},
          {"trials", trials},
          {"warmup", warmup},
          {"world", world},
          {"quick", quick},
          {"tiny", tiny},
          {"max_steal", max_steal},
          {"calibration_reps", calibration_reps},
          {"tile_rows", tile_rows},
          {"moe_tokens", moe_tokens},
          {"calibrate_each_arm", calibrate_each_arm},
          {"hold_ratio_each_round", hold_ratio_each_round},
          {"hold_ratio_probe_reps", hold_ratio_probe_reps}};
}

Result<OverlapBenchConfig> OverlapBenchConfig::FromJson(const nlohmann::json& j) {
  OverlapBenchConfig c;
  try {
    c.ops.clear();
    for (const auto& name : j.at("ops")) {
      LOOM_ASSIGN_OR_RETURN(BenchOp op, ParseBenchOp(name.get<std::string>()));
      c.ops.push_back(op);
    }
    c.ratios = j.at("ratios").get<std::vector<double>>();
    c.splits = j.at("splits").get<std::vector<int32_t>>();
    c.trials = j.at("trials");
    c.warmup = j.at("warmup");
    c.world = j.at("world");
    c.quick = j.at("quick");
    c.tiny = j.value("tiny", false);
    c.max_steal = j.at("max_steal");
    c.calibration_reps = j.at("calibration_reps");
    c.tile_rows = j.at("tile_rows");
    c.moe_tokens = j.value("moe_tokens", int64_t{0});
    c.calibrate_each_arm = j.value("calibrate_each_arm", true);
    c.hold_ratio_each_round = j.value("hold_ratio_each_round", false);
    c.hold_ratio_probe_reps = j.value("hold_ratio_probe_reps", 0);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("bench overlap config: ") + e.what());
  }
  LOOM_RETURN_IF_ERROR(ValidateConfig(c));
  return c;
}

Status ValidateConfig(const OverlapBenchConfig& c) {
  if (c.ops.empty()) return InvalidArgumentError("bench overlap: --ops is empty");
  for (double r : c.ratios) {
    if (!(r > 0) || !std::isfinite(r)) {
      return InvalidArgumentError("bench overlap: ratio " + std::to_string(r) + " is not > 0");
    }
  }
  if (c.splits.empty()) return InvalidArgumentError("bench overlap: --splits is empty");
  for (int32_t s : c.splits) {
    if (s < 1 || s > 64) {
      return InvalidArgumentError("bench overlap: split " + std::to_string(s) + " outside [1, 64]");
    }
  }
  if (c.trials < 1) return InvalidArgumentError("bench overlap: --trials must be >= 1");
  if (c.warmup < 0) return InvalidArgumentError("bench overlap: --warmup must be >= 0");
  if (c.world < 2 || c.world > 64) {
    return InvalidArgumentError("bench overlap: --world must be in [2, 64], got " +
                                std::to_string(c.world));
  }
  if (c.calibration_reps < 1) return InvalidArgumentError("bench overlap: calibration_reps < 1");
  if (c.hold_ratio_probe_reps < 0) {
    return InvalidArgumentError("bench overlap: --hold-ratio-probe-reps < 0");
  }
  if (c.tile_rows < 1) return InvalidArgumentError("bench overlap: tile_rows < 1");
  if (c.moe_tokens < 0) return InvalidArgumentError("bench overlap: --moe-tokens < 0");
  return OkStatus();
}

std::vector<BenchWorkload> MakeWorkloads(const OverlapBenchConfig& config) {
  std::vector<BenchWorkload> out;
  for (BenchOp op : config.ops) {
    if (op == BenchOp::kMoe) {
      for (RoutingKind kind : {RoutingKind::kUniform, RoutingKind::kZipf}) {
        BenchWorkload w;
        w.op = op;
        w.experts = 8;
        w.top_k = 2;
        w.hidden = config.quick ? 512 : 1024;
        w.ffn = config.quick ? 1024 : 2048;
        w.tokens = config.quick ? 1024 : 4096;
        if (config.moe_tokens > 0) w.tokens = config.moe_tokens;
        if (config.tiny) {
          w.hidden = 128;
          w.ffn = 256;
          w.tokens = 128;
        }
        w.routing = kind;
        out.push_back(w);
      }
      continue;
    }
    std::vector<std::array<int64_t, 3>> shapes = {
        {512, 2048, 512}, {1024, 4096, 256}, {256, 2048, 1024}};
    if (config.quick) shapes = {{256, 1024, 256}};
    if (config.tiny) shapes = {{64, 256, 128}};
    for (const auto& s : shapes) {
      BenchWorkload w;
      w.op = op;
      w.m_shard = s[0];
      w.k = s[1];
      w.n_local = s[2];
      out.push_back(w);
    }
  }
  return out;
}

std::vector<BenchVariant> MakeVariants(const OverlapBenchConfig& config, BenchOp op) {
  std::vector<BenchVariant> v = {{OverlapMode::kSequential, 1}, {OverlapMode::kDecomposed, 1}};
  for (int32_t s : config.splits) v.push_back({OverlapMode::kFused, s});
  std::vector<int32_t> sorted = config.splits;
  std::sort(sorted.begin(), sorted.end());
  const int32_t middle = sorted[sorted.size() / 2];
  if (op == BenchOp::kMoe) v.push_back({OverlapMode::kFused, middle, /*cross_layer=*/false});
  v.push_back({OverlapMode::kAuto, middle});
  return v;
}

int64_t HeapBytesFor(const BenchWorkload& w, const OverlapBenchConfig& config) {
  const int64_t world = config.world;
  int64_t per_op = 0;
  switch (w.op) {
    case BenchOp::kAgGemm:
      per_op = world * w.m_shard * w.k * 4;  // gather buffer
      break;
    case BenchOp::kGemmRs:
      per_op = 2 * world * w.m_shard * w.n_local * 4;  // partial + receive slots
      break;
    case BenchOp::kMoe: {
      MoeOpShape s{.world = static_cast<int32_t>(world),
                   .num_experts = w.experts,
                   .top_k = w.top_k,
                   .tokens_per_rank = w.tokens,
                   .hidden = w.hidden,
                   .ffn = w.ffn};
      const int64_t exchange = 2 * world * (w.tokens * w.top_k * 8 + 4096);
      per_op = MaxRecvRows(s, config.tile_rows) * w.hidden * 4 +  // layer 0 receive buffer
               world * w.tokens * w.hidden * 4 +                  // layer 1 partial slots
               exchange;
      break;
    }
  }
  const int64_t ops = static_cast<int64_t>(MakeVariants(config, w.op).size()) + 1;  // + calibration
  return ops * (per_op + (1 << 16)) + per_op / 8 + (16ll << 20);
}

}  // namespace loom::overlap
