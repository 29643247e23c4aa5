#include "loom/train/train_config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"
#include "loom/compress/codec_spec.h"
#include "loom/compress/weight_spec.h"

namespace loom::train {
using nlohmann::json;

bool CpuHasFastBf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
}

Precision TrainConfig::ResolvedPrecision() const {
  if (precision == "fp32") return Precision::kFp32;
  if (precision == "bf16") return Precision::kBf16;
  return CpuHasFastBf16() ? Precision::kBf16 : Precision::kFp32;
}

std::vector<std::string> CompressConfig::PlanCodecList() const {
  std::vector<std::string> out;
  for (size_t at = 0; at <= plan_codecs.size();) {
    size_t comma = std::min(plan_codecs.find(',', at), plan_codecs.size());
    if (comma > at) out.push_back(plan_codecs.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

DpMode TrainConfig::ResolvedDpMode() const {
  return dp_mode == "allreduce" ? DpMode::kAllReduce : DpMode::kZero1;
}

json TrainConfigToJson(const TrainConfig& c) {
  return {
      {"run_dir", c.run_dir},
      {"seed", c.seed},
      {"steps", c.steps},
      {"precision", c.precision},
      {"threads", c.threads},
      {"sched", c.sched},
      {"model", nn::GptConfigToJson(c.model)},
      {"data", {{"source", c.data_source}, {"path", c.data_path}, {"val_fraction", c.val_fraction}}},
      {"batch", {{"global", c.global_batch}, {"micro", c.micro_batch}}},
      {"optim",
       {{"lr", c.optim.lr},
        {"min_lr", c.optim.min_lr},
        {"warmup_steps", c.optim.warmup_steps},
        {"weight_decay", c.optim.weight_decay},
        {"beta1", c.optim.beta1},
        {"beta2", c.optim.beta2},
        {"eps", c.optim.eps},
        {"grad_clip", c.optim.grad_clip}}},
      {"dist", {{"mode", c.dp_mode}, {"bucket_mb", c.bucket_mb}, {"overlap", c.overlap}}},
      {"eval", {{"every", c.eval_every}, {"batches", c.eval_batches}}},
      {"log", {{"every", c.log_every}}},
      {"sample",
       {{"tokens", c.sample_tokens},
        {"prompt", c.sample_prompt},
        {"temperature", c.sample_temperature},
        {"top_k", c.sample_top_k}}},
      {"init", {{"export", c.init_export}}},
      {"ckpt",
       {{"every", c.ckpt.every}, {"dir", c.ckpt.dir}, {"persist_dir", c.ckpt.persist_dir},
        {"keep", c.ckpt.keep},
        {"async", c.ckpt.async}, {"load", c.ckpt.load}}},
      {"compress",
       {{"grad", c.compress.grad}, {"weights", c.compress.weights},
        {"warmup_steps", c.compress.warmup_steps}, {"error_feedback", c.compress.error_feedback},
        {"plan", c.compress.plan}, {"plan_codecs", c.compress.plan_codecs},
        {"mode", c.compress.mode}, {"nesterov", c.compress.nesterov},
        {"min_elements", c.compress.min_elements}, {"node_size", c.compress.node_size},
        {"grad_intra", c.compress.grad_intra}}},
      {"trace",
       {{"steps", c.trace.steps}, {"dir", c.trace.dir}, {"every", c.trace.every},
        {"buffer_mb", c.trace.buffer_mb}}},
      {"resume", c.resume},
  };
}

json TrainConfigDefaults() { return TrainConfigToJson(TrainConfig{}); }

namespace {

Status Check(bool ok, const std::string& key, const std::string& why) {
  return ok ? OkStatus() : InvalidArgumentError("config key '" + key + "': " + why);
}

Status OneOf(const std::string& value, std::initializer_list<const char*> allowed,
             const std::string& key) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return OkStatus();
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return InvalidArgumentError("config key '" + key + "': '" + value + "' is not one of " + list);
}

// "A-B" or "N" (1-based, inclusive) into t->first_step / t->last_step.
Status ParseTraceSteps(TraceConfig* t) {
  if (t->steps.empty()) return OkStatus();
  auto bad = [&] {
    return InvalidArgumentError("config key 'trace.steps': '" + t->steps +
                                "' is not a step range like 20-40 or a step like 5 (steps count "
                                "from 1)");
  };
  const size_t dash = t->steps.find('-');
  const std::string a = t->steps.substr(0, dash);
  const std::string b = dash == std::string::npos ? a : t->steps.substr(dash + 1);
  auto parse = [](const std::string& s, int64_t* v) {
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    *v = std::stoll(s);
    return true;
  };
  if (!parse(a, &t->first_step) || !parse(b, &t->last_step)) return bad();
  if (t->first_step < 1 || t->last_step < t->first_step) return bad();
  return OkStatus();
}

Status Validate(const TrainConfig& c, int world) {
  LOOM_RETURN_IF_ERROR(c.model.Validate());
  LOOM_RETURN_IF_ERROR(Check(c.steps >= 1, "steps", "must be >= 1"));
  LOOM_RETURN_IF_ERROR(OneOf(c.precision, {"auto", "bf16", "fp32"}, "precision"));
  LOOM_RETURN_IF_ERROR(Check(c.threads >= 0, "threads", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(OneOf(c.sched, {"batch", "normal"}, "sched"));
  LOOM_RETURN_IF_ERROR(OneOf(c.data_source, {"bible", "file"}, "data.source"));
  LOOM_RETURN_IF_ERROR(Check(c.data_source != "file" || !c.data_path.empty(), "data.path",
                             "must name a text file when data.source=file"));
  LOOM_RETURN_IF_ERROR(Check(c.val_fraction > 0 && c.val_fraction < 0.5, "data.val_fraction",
                             "must be in (0, 0.5)"));
  LOOM_RETURN_IF_ERROR(Check(c.micro_batch >= 1, "batch.micro", "must be >= 1"));
  LOOM_RETURN_IF_ERROR(Check(c.global_batch >= 1, "batch.global", "must be >= 1"));
  if (c.global_batch % (c.micro_batch * world) != 0) {
    return InvalidArgumentError(
        "config key 'batch.global': " + std::to_string(c.global_batch) +
        " sequences cannot be split over " + std::to_string(world) + " ranks x batch.micro " +
        std::to_string(c.micro_batch) + " (it must be a multiple of " +
        std::to_string(c.micro_batch * world) + ")");
  }
  LOOM_RETURN_IF_ERROR(Check(c.optim.lr > 0, "optim.lr", "must be > 0"));
  LOOM_RETURN_IF_ERROR(
      Check(c.optim.min_lr >= 0 && c.optim.min_lr <= c.optim.lr, "optim.min_lr", "must be in [0, lr]"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.warmup_steps >= 0, "optim.warmup_steps", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.beta1 >= 0 && c.optim.beta1 < 1, "optim.beta1", "must be in [0, 1)"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.beta2 >= 0 && c.optim.beta2 < 1, "optim.beta2", "must be in [0, 1)"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.eps > 0, "optim.eps", "must be > 0"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.weight_decay >= 0, "optim.weight_decay", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(Check(c.optim.grad_clip >= 0, "optim.grad_clip", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(OneOf(c.dp_mode, {"zero1", "allreduce"}, "dist.mode"));
  LOOM_RETURN_IF_ERROR(Check(c.bucket_mb > 0, "dist.bucket_mb", "must be > 0"));
  LOOM_RETURN_IF_ERROR(Check(c.eval_every >= 0, "eval.every", "must be >= 0 (0 disables eval)"));
  LOOM_RETURN_IF_ERROR(Check(c.eval_batches >= 1, "eval.batches", "must be >= 1"));
  LOOM_RETURN_IF_ERROR(Check(c.log_every >= 1, "log.every", "must be >= 1"));
  LOOM_RETURN_IF_ERROR(Check(c.sample_tokens >= 0, "sample.tokens", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(Check(!c.sample_prompt.empty(), "sample.prompt", "must not be empty"));
  LOOM_RETURN_IF_ERROR(Check(c.trace.every >= 1, "trace.every", "must be >= 1"));
  LOOM_RETURN_IF_ERROR(Check(c.trace.buffer_mb > 0, "trace.buffer_mb", "must be > 0"));
  LOOM_RETURN_IF_ERROR(Check(c.ckpt.every >= 0, "ckpt.every", "must be >= 0 (0: no checkpoints)"));
  LOOM_RETURN_IF_ERROR(Check(c.ckpt.keep >= 0, "ckpt.keep", "must be >= 0 (0: keep all)"));
  LOOM_RETURN_IF_ERROR(OneOf(c.ckpt.load, {"independent", "cooperative"}, "ckpt.load"));
  if (Result<compress::CodecSpec> g = compress::ParseCodecSpec(c.compress.grad); !g.ok()) {
    return InvalidArgumentError("config key 'compress.grad': " + std::string(g.status().message()));
  }
  Result<compress::WeightSpec> w = compress::ParseWeightSpec(c.compress.weights);
  if (!w.ok()) {
    return InvalidArgumentError("config key 'compress.weights': " +
                                std::string(w.status().message()));
  }
  LOOM_RETURN_IF_ERROR(Check(!w->enabled() || c.dp_mode == "zero1", "compress.weights",
                             "compresses ZeRO's parameter all-gather: it needs dist.mode=zero1"));
  LOOM_RETURN_IF_ERROR(
      Check(c.compress.warmup_steps >= 0, "compress.warmup_steps", "must be >= 0"));
  LOOM_RETURN_IF_ERROR(Check(c.compress.nesterov >= 0 && c.compress.nesterov < 1,
                             "compress.nesterov", "must be in [0, 1) (0: off)"));
  LOOM_RETURN_IF_ERROR(Check(c.compress.nesterov == 0 || c.compress.grad != "none" ||
                                 !c.compress.plan.empty(),
                             "compress.nesterov",
                             "applies momentum before compression: set compress.grad"));
  LOOM_RETURN_IF_ERROR(OneOf(c.compress.mode, {"auto", "zero", "allreduce", "ps"}, "compress.mode"));
  LOOM_RETURN_IF_ERROR(Check(c.compress.min_elements >= 0, "compress.min_elements",
                             "must be >= 0 (0: compress every bucket)"));
  LOOM_RETURN_IF_ERROR(Check(c.compress.node_size >= 1 && world % c.compress.node_size == 0,
                             "compress.node_size",
                             "must divide the world size " + std::to_string(world)));
  if (Result<compress::CodecSpec> gi = compress::ParseCodecSpec(c.compress.grad_intra); !gi.ok()) {
    return InvalidArgumentError("config key 'compress.grad_intra': " +
                                std::string(gi.status().message()));
  } else {
    LOOM_RETURN_IF_ERROR(Check(gi->kind != compress::CodecKind::kPowerSgd &&
                                   gi->kind != compress::CodecKind::kNone,
                               "compress.grad_intra", "must be an element codec, e.g. int8:g128"));
  }
  if (c.compress.node_size > 1) {
    LOOM_RETURN_IF_ERROR(Check((c.compress.grad != "none" || !c.compress.plan.empty()) &&
                                   c.compress.grad.rfind("powersgd", 0) != 0 &&
                                   c.compress.mode != "ps",
                               "compress.node_size",
                               "two-level quantization needs an element codec in compress.grad "
                               "(or compress.plan), not PowerSGD nor compress.mode=ps"));
  }
  LOOM_RETURN_IF_ERROR(Check(c.compress.mode != "zero" || c.dp_mode == "zero1", "compress.mode",
                             "zero is ZeRO's quantized reduce-scatter: it needs dist.mode=zero1"));
  LOOM_RETURN_IF_ERROR(Check(c.compress.mode != "allreduce" || c.dp_mode == "allreduce",
                             "compress.mode", "allreduce needs dist.mode=allreduce"));
  if (c.compress.mode == "ps") {
    LOOM_RETURN_IF_ERROR(Check(c.compress.grad != "none" || !c.compress.plan.empty(),
                               "compress.mode",
                               "ps sends compressed gradient buckets through parameter-server "
                               "shards: set compress.grad (or compress.plan)"));
    LOOM_RETURN_IF_ERROR(Check(c.compress.grad.rfind("powersgd", 0) != 0, "compress.mode",
                               "ps needs an element codec; PowerSGD has its own all-reduce"));
  }
  if (!c.compress.plan.empty()) {
    LOOM_RETURN_IF_ERROR(Check(c.compress.grad == "none", "compress.plan",
                               "chooses the gradient codecs itself: leave compress.grad=none"));
    LOOM_RETURN_IF_ERROR(Check(c.compress.plan != "auto" || c.compress.warmup_steps >= 2,
                               "compress.plan",
                               "auto profiles the warm-up steps: set compress.warmup_steps >= 2"));
    for (const std::string& one : c.compress.PlanCodecList()) {
      Result<compress::CodecSpec> spec = compress::ParseCodecSpec(one);
      if (!spec.ok()) {
        return InvalidArgumentError("config key 'compress.plan_codecs': " +
                                    std::string(spec.status().message()));
      }
      LOOM_RETURN_IF_ERROR(Check(spec->kind != compress::CodecKind::kPowerSgd,
                                 "compress.plan_codecs", "the planner picks element codecs, not '" +
                                 one + "'"));
    }
  }
  return OkStatus();
}

}  // namespace

Result<TrainConfig> ResolveTrainConfig(const json* file, const std::vector<std::string>& overrides,
                                       int world_size) {
  json j = TrainConfigDefaults();
  if (file != nullptr) LOOM_RETURN_IF_ERROR(MergeStrict(&j, *file, "config file"));
  for (const std::string& o : overrides) LOOM_RETURN_IF_ERROR(ApplyOverride(&j, o));
  TrainConfig c;
  try {
    c.run_dir = j["run_dir"];
    c.seed = j["seed"];
    c.steps = j["steps"];
    c.precision = j["precision"];
    c.threads = j["threads"];
    c.sched = j["sched"];
    LOOM_ASSIGN_OR_RETURN(c.model, nn::GptConfigFromJson(j["model"]));
    c.data_source = j["data"]["source"];
    c.data_path = j["data"]["path"];
    c.val_fraction = j["data"]["val_fraction"];
    c.global_batch = j["batch"]["global"];
    c.micro_batch = j["batch"]["micro"];
    const json& o = j["optim"];
    c.optim = {o["lr"], o["min_lr"], o["warmup_steps"], o["weight_decay"],
               o["beta1"], o["beta2"], o["eps"], o["grad_clip"]};
    c.dp_mode = j["dist"]["mode"];
    c.bucket_mb = j["dist"]["bucket_mb"];
    c.overlap = j["dist"]["overlap"];
    c.eval_every = j["eval"]["every"];
    c.eval_batches = j["eval"]["batches"];
    c.log_every = j["log"]["every"];
    c.sample_tokens = j["sample"]["tokens"];
    c.sample_prompt = j["sample"]["prompt"];
    c.sample_temperature = j["sample"]["temperature"];
    c.sample_top_k = j["sample"]["top_k"];
    c.init_export = j["init"]["export"];
    c.ckpt.every = j["ckpt"]["every"];
    c.ckpt.dir = j["ckpt"]["dir"];
    c.ckpt.persist_dir = j["ckpt"]["persist_dir"];
    c.ckpt.keep = j["ckpt"]["keep"];
    c.ckpt.async = j["ckpt"]["async"];
    c.ckpt.load = j["ckpt"]["load"];
    c.compress.grad = j["compress"]["grad"];
    c.compress.weights = j["compress"]["weights"];
    c.compress.warmup_steps = j["compress"]["warmup_steps"];
    c.compress.error_feedback = j["compress"]["error_feedback"];
    c.compress.plan = j["compress"]["plan"];
    c.compress.plan_codecs = j["compress"]["plan_codecs"];
    c.compress.mode = j["compress"]["mode"];
    c.compress.nesterov = j["compress"]["nesterov"];
    c.compress.min_elements = j["compress"]["min_elements"];
    c.compress.node_size = j["compress"]["node_size"];
    c.compress.grad_intra = j["compress"]["grad_intra"];
    c.trace.steps = j["trace"]["steps"];
    c.trace.dir = j["trace"]["dir"];
    c.trace.every = j["trace"]["every"];
    c.trace.buffer_mb = j["trace"]["buffer_mb"];
    c.resume = j["resume"];
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("config: ") + e.what());
  }
  LOOM_RETURN_IF_ERROR(ParseTraceSteps(&c.trace));
  LOOM_RETURN_IF_ERROR(Validate(c, world_size));
  return c;
}

}  // namespace loom::train
