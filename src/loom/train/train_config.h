// TrainConfig: every setting of `loom train`, as JSON with defaults for every key.
//
// Sources, in order: the defaults below, an optional JSON file (--config), then dotted
// `key=value` overrides. Unknown keys, wrong types and inconsistent values are errors that name
// the key. The resolved config is printed once at start and written to the run directory.
//
//   LOOM_ASSIGN_OR_RETURN(TrainConfig cfg, ResolveTrainConfig(file_json, {"steps=50"}, world));
//
// Thread-safety: value type.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"
#include "loom/nn/gpt_config.h"

namespace loom::train {

enum class Precision { kFp32, kBf16 };
enum class DpMode { kZero1, kAllReduce };

struct OptimConfig {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 20;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // max global L2 norm; 0 disables clipping
};

// Checkpointing (src/loom/ckpt): every `every` steps (0: never), into `dir` (empty:
// <run_dir>/ckpt), keeping the newest `keep` steps (0: all), written in the background (`async`).
// `load` on resume: "independent" (each rank reads what it needs) or "cooperative" (each byte
// read once by one rank and exchanged: less storage traffic, more network traffic).
// `persist_dir`: a second tier; each checkpoint commits to `dir` first (put it on /dev/shm for
// restarts in seconds after a process crash) and then to `persist_dir`, from the same buffer.
struct CkptConfig {
  int64_t every = 0;
  std::string dir;
  std::string persist_dir;
  int64_t keep = 3;
  bool async = true;
  std::string load = "independent";
};

// Compressed communication (src/loom/compress). `grad`: codec of the gradient reduce-scatter
// (dist.mode=zero1) or all-reduce (dist.mode=allreduce, with server-side error feedback), e.g.
// int4:g128:hadamard; "none" keeps the full-precision collectives. `weights` (zero1 only): the
// parameter all-gather, e.g. qwd4:g2048 (see compress/weight_spec.h). The first `warmup_steps`
// steps run uncompressed. `error_feedback`: worker-side error feedback on the gradients.
// `plan`: "" (off), "auto" (after the warm-up steps, measure codecs, link and the backward
// profile, and let the ByteComp/Espresso planner choose a codec per bucket among `plan_codecs`;
// the plan goes to <run_dir>/compress_plan.json) or a plan file; needs grad=none.
struct CompressConfig {
  std::string grad = "none";
  std::string weights = "none";
  int64_t warmup_steps = 0;
  bool error_feedback = false;
  std::string plan;
  std::string plan_codecs = "fp16,int8:g128,int4:g128:hadamard";
  // How compressed gradient buckets travel: "auto" (default: as dist.mode says — zero1's quantized
  // reduce-scatter, allreduce's compressed all-reduce), "zero" / "allreduce" (the same, checked
  // against dist.mode), or "ps": BytePS-style push_pull through parameter-server shards, one per
  // rank on its own thread (compress/collectives/push_pull.h); every rank gets the whole averaged
  // bucket (with dist.mode=zero1 it then uses its shard). Needs a gradient codec (compress.grad
  // or compress.plan), not PowerSGD.
  std::string mode = "auto";
  // Nesterov momentum mu applied to each rank's gradient buckets before compression (BytePS-
  // Compress's worker-side decorator, compress/decorators/nesterov.h): m = mu m + g, send
  // g + mu m. 0 (default): off. In [0, 1); needs a gradient codec; the optimizer's own momentum
  // still runs (AdamW's beta1), so this is an ablation rather than a BytePS replica.
  double nesterov = 0;
  // Compressed buckets with fewer elements travel uncompressed, counted and reported in the run
  // summary (compress/collectives/small_tensor_bypass.h says why 65536); 0: compress all. Not
  // applied to compress.plan (the planner decides per bucket) nor PowerSGD.
  int64_t min_elements = 65536;
  // SDP4Bit's two-level gradient quantization (TLq): > 1 groups `node_size` consecutive ranks
  // into a node; compressed buckets are reduced inside the node with `grad_intra` first, then
  // across nodes with compress.grad (compress/collectives/two_level_collectives.h). Must divide
  // the world size; 1 (default): one level.
  int node_size = 1;
  std::string grad_intra = "int8:g128";

  std::vector<std::string> PlanCodecList() const;  // plan_codecs split at commas
};

// Tracing (src/loom/trace/tracer). `steps`: "A-B" (inclusive) or "N", in the 1-based step
// numbers of the progress lines and metrics.jsonl; "" (default) traces nothing and costs one
// atomic load per span. Each rank writes <dir>/rank<r>.trace.json (Kineto JSON: open it in
// ui.perfetto.dev) when training ends or fails; `dir` empty: <run_dir>/trace. `every`: trace
// every n-th step of the window. `buffer_mb`: record buffer per thread (64-byte records); spans
// beyond it are dropped and counted in the trace ("loom.dropped").
struct TraceConfig {
  std::string steps;
  std::string dir;
  int64_t every = 1;
  double buffer_mb = 16;
  // Derived from `steps` by ResolveTrainConfig: first and last traced step (0, -1: off).
  int64_t first_step = 0;
  int64_t last_step = -1;
  bool enabled() const { return !steps.empty(); }
};

struct TrainConfig {
  std::string run_dir;  // empty: runs/<timestamp>
  uint64_t seed = 1234;
  int64_t steps = 200;
  std::string precision = "auto";  // auto | bf16 | fp32
  int64_t threads = 0;             // compute threads per rank; 0: cores / local ranks
  // Scheduling policy of the rank's threads while it trains: "batch" (SCHED_BATCH: no wake-up
  // preemption between the compute and communication threads; base/thread_policy.h) or "normal".
  std::string sched = "batch";
  nn::GptConfig model;
  std::string data_source = "bible";  // bible | file
  std::string data_path;              // for data.source=file
  double val_fraction = 0.05;
  int64_t global_batch = 16;  // sequences per optimizer step, all ranks together
  int64_t micro_batch = 8;    // sequences per forward/backward on one rank
  OptimConfig optim;
  std::string dp_mode = "zero1";  // zero1 | allreduce
  double bucket_mb = 4.0;
  bool overlap = true;            // reduce buckets while backward runs
  int64_t eval_every = 50;
  int64_t eval_batches = 4;
  int64_t log_every = 10;
  int64_t sample_tokens = 200;
  std::string sample_prompt = "And God said";
  double sample_temperature = 0.8;
  int64_t sample_top_k = 40;
  std::string init_export;  // write the initial weights here (safetensors) before training
  CkptConfig ckpt;
  CompressConfig compress;
  TraceConfig trace;
  // Resume from this checkpoint (a checkpoint root or one step directory): weights, optimizer
  // state and step; any world size and dist.mode. "auto": the newest committed step in ckpt.dir
  // or ckpt.persist_dir, or a fresh start when there is none (for restart loops).
  std::string resume;

  // Derived.
  Precision ResolvedPrecision() const;
  DpMode ResolvedDpMode() const;
  int64_t AccumulationSteps(int world_size) const {
    return global_batch / (micro_batch * world_size);
  }
};

nlohmann::json TrainConfigDefaults();
nlohmann::json TrainConfigToJson(const TrainConfig& c);
// Defaults <- file (may be null) <- overrides, then validated for `world_size` ranks.
Result<TrainConfig> ResolveTrainConfig(const nlohmann::json* file,
                                       const std::vector<std::string>& overrides,
                                       int world_size);
// True when this CPU runs bf16 GEMMs natively (AVX512-BF16 or AMX), which makes bf16 the
// default precision.
bool CpuHasFastBf16();

}  // namespace loom::train
