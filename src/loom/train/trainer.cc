#include "loom/train/trainer.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/base/logging.h"
#include "loom/base/thread_policy.h"
#include "loom/base/trace_sink.h"
#include "loom/monitor/app/app_reporter.h"
#include "loom/nn/byte_tokenizer.h"
#include "loom/nn/gpt.h"
#include "loom/nn/gpt_generate.h"
#include "loom/nn/gpt_init.h"
#include "loom/nn/safetensors_io.h"
#include "loom/train/dp_optimizer.h"
#include "loom/train/gemm_peak_torch.h"
#include "loom/train/grad_ready_hooks_torch.h"
#include "loom/train/grad_reducer.h"
#include "loom/train/lr_schedule.h"
#include "loom/train/train_checkpointer.h"
#include "loom/train/train_compression.h"
#include "loom/train/compression_planning.h"
#include "loom/train/mfu.h"
#include "loom/train/progress.h"
#include "loom/train/run_report.h"
#include "loom/train/text_dataset.h"
#include "loom/trace/tracer/clock_sync.h"
#include "loom/trace/tracer/tracer.h"

namespace loom::train {
namespace {

std::string DefaultRunDir() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "runs/train-%Y%m%d-%H%M%S", &tm);
  return buf;
}

// While alive, reports every successful operation of `comm` to the local metrics agent.
class CollectiveReporter : public comm::CollectiveObserver {
 public:
  CollectiveReporter(comm::Communicator& comm, monitor::AppReporter* app)
      : comm_(comm), app_(app) {
    if (app_ != nullptr) comm_.SetObserver(this);
  }
  ~CollectiveReporter() override {
    if (app_ != nullptr) comm_.SetObserver(nullptr);
  }
  void OnCollective(const char* op, int64_t bytes, int64_t seq, double seconds, bool ok) override {
    if (ok) app_->Collective(op, bytes, seq, seconds);
  }

 private:
  comm::Communicator& comm_;
  monitor::AppReporter* app_;
};

// Rank 0's choice of run directory, so every rank agrees (a timestamped default could differ).
Result<std::string> AgreeOnRunDir(const TrainConfig& cfg, comm::Communicator& comm) {
  std::string dir = cfg.run_dir.empty() ? DefaultRunDir() : cfg.run_dir;
  int64_t len = static_cast<int64_t>(dir.size());
  LOOM_RETURN_IF_ERROR(comm.Broadcast(TensorView::Of(&len, 1), 0).WithContext("run_dir"));
  dir.resize(static_cast<size_t>(len));
  LOOM_RETURN_IF_ERROR(
      comm.Broadcast(TensorView(dir.data(), DType::kU8, {len}), 0).WithContext("run_dir"));
  return dir;
}

// trace.steps: a Tracer installed as the process's trace sink while training runs. Writes
// <trace.dir>/rank<r>.trace.json at Finish(), or from the destructor when training failed
// (declare it before anything that runs threads which record, so they are joined first).
class TraceSession {
 public:
  static Result<std::unique_ptr<TraceSession>> Start(const TrainConfig& cfg,
                                                     const std::string& run_dir,
                                                     const std::string& run_id,
                                                     comm::Communicator& comm) {
    const std::string dir = cfg.trace.dir.empty() ? run_dir + "/trace" : cfg.trace.dir;
    LOOM_RETURN_IF_ERROR(MakeDirs(dir).WithContext("trace.dir"));
    trace::TracerOptions o{
        .rank = comm.rank(),
        .world_size = comm.size(),
        .start_step = cfg.trace.first_step,
        .end_step = cfg.trace.last_step,
        .every_n = cfg.trace.every,
        .capacity_per_thread = std::max<int64_t>(
            1, static_cast<int64_t>(cfg.trace.buffer_mb * (1 << 20)) / 64),
        .trace_name = "loom train rank " + std::to_string(comm.rank()),
        .run_id = run_id};
    auto s = std::unique_ptr<TraceSession>(
        new TraceSession(o, dir + "/rank" + std::to_string(comm.rank()) + ".trace.json"));
    // Collective: every rank gets the same trace config. Nothing else uses comm yet.
    LOOM_ASSIGN_OR_RETURN(trace::ClockOffset off, trace::EstimateClockOffset(comm, s->tracer_));
    s->tracer_.set_clock_offset(off);
    s->install_.emplace(&s->tracer_);
    return s;
  }
  ~TraceSession() {
    if (written_) return;
    Status s = Finish(nullptr);
    if (!s.ok()) LOOM_LOG(WARNING, "train") << "trace not written: " << s.ToString();
  }
  // Step numbers are 1-based (as in the progress lines): step `step` of the loop is step + 1.
  void SetStep(int64_t step) { tracer_.SetStep(step + 1); }
  Status Finish(std::ostream* out) {
    install_.reset();
    written_ = true;
    LOOM_RETURN_IF_ERROR(tracer_.WriteKinetoJson(path_).WithContext("trace"));
    const trace::TracerStats st = tracer_.stats();
    if (out != nullptr) {
      *out << "trace: " << path_ << " (" << st.records << " spans"
           << (st.dropped ? ", " + std::to_string(st.dropped) + " dropped: raise trace.buffer_mb"
                          : std::string())
           << "; open in ui.perfetto.dev)\n"
           << std::flush;
    }
    return OkStatus();
  }

 private:
  TraceSession(trace::TracerOptions o, std::string path)
      : tracer_(std::move(o)), path_(std::move(path)) {}
  trace::Tracer tracer_;
  std::string path_;
  std::optional<ScopedTraceSinkInstall> install_;
  bool written_ = false;
};

at::Tensor AsTensor(std::vector<int64_t>& v, int64_t b, int64_t t) {
  return at::from_blob(v.data(), {b, t}, at::TensorOptions().dtype(at::kLong));
}

// Everything one rank holds while training.
struct Run {
  Run(const TrainConfig& c, comm::Communicator& cm, const comm::WorldInfo& w, std::ostream& o)
      : cfg(c), comm(cm), world(w), out(o), leader(cm.rank() == 0) {}
  const TrainConfig& cfg;
  comm::Communicator& comm;
  const comm::WorldInfo& world;
  std::ostream& out;
  bool leader;
  int64_t accum = 1;
  int64_t seq_len = 0;
  at::ScalarType dtype = at::kFloat;
  std::unique_ptr<nn::Gpt> model;
  at::Tensor master;     // fp32 master weights (the model's own buffer in fp32)
  at::Tensor grad_fp32;  // fp32 gradients (the model's own buffer in fp32)
  std::unique_ptr<TextDataset> data;
  double peak = 0;
  double flops_per_token = 0;
};

Status SetUpThreads(const TrainConfig& cfg, const comm::WorldInfo& world, int* threads) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  *threads = cfg.threads > 0 ? static_cast<int>(cfg.threads)
                             : std::max(1, static_cast<int>(cores) / world.local_world_size);
  at::set_num_threads(*threads);
  return OkStatus();
}

Result<double> AgreeOnPeak(Run& r, int threads) {
  // One rank measures while the others wait, so the measurement has the machine to itself.
  double peak = 0;
  std::string source;
  if (r.comm.rank() == 0) {
    LOOM_ASSIGN_OR_RETURN(GemmPeak p, MeasureGemmPeak(r.dtype, threads));
    peak = p.flops;
    source = p.source;
  }
  LOOM_RETURN_IF_ERROR(r.comm.Broadcast(TensorView::Of(&peak, 1), 0).WithContext("GEMM peak"));
  if (r.leader) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "GEMM peak: %.1f GFLOP/s per rank (%s, %d thread%s, %s)\n",
                  peak / 1e9, at::toString(r.dtype), threads, threads == 1 ? "" : "s",
                  source.c_str());
    r.out << buf << MfuConvention() << "\n" << std::flush;
  }
  return peak;
}

Result<double> Evaluate(Run& r) {
  at::NoGradGuard no_grad;
  double sums[2] = {0, 0};  // loss sum, batches
  const int64_t n = r.cfg.eval_batches;
  for (int64_t i = r.comm.rank(); i < n; i += r.comm.size()) {
    TokenBatch b = r.data->ValBatch(i, n, r.cfg.micro_batch, r.seq_len);
    sums[0] += r.model->Loss(AsTensor(b.tokens, b.batch, b.seq_len),
                             AsTensor(b.targets, b.batch, b.seq_len))
                   .item<double>();
    sums[1] += 1;
  }
  LOOM_RETURN_IF_ERROR(
      r.comm.AllReduce(TensorView::Of(sums, 2), comm::ReduceOp::kSum).WithContext("eval loss"));
  return sums[0] / std::max(1.0, sums[1]);
}

void PrintRunHeader(const Run& r, const nn::FlatLayout& layout) {
  const TrainConfig& cfg = r.cfg;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "model: %lld non-embedding params (%lld total), %lld layers, d_model %lld, "
                "context %lld | %s | %d ranks x %lld micro x %lld accum = %lld seqs/step | "
                "%s, %s, %zu buckets\n",
                (long long)cfg.model.NonEmbeddingParams(), (long long)cfg.model.TotalParams(),
                (long long)cfg.model.n_layers, (long long)cfg.model.d_model, (long long)r.seq_len,
                at::toString(r.dtype), r.comm.size(), (long long)cfg.micro_batch,
                (long long)r.accum, (long long)cfg.global_batch, cfg.dp_mode.c_str(),
                cfg.overlap ? "overlapped" : "not overlapped", layout.buckets().size());
  r.out << "data: " << r.data->description() << "\n" << buf << std::flush;
}

void PrintCompressionHeader(const Run& r, const TrainCompression& c, const nn::FlatLayout& layout) {
  int64_t params = 0;
  for (const nn::ParamSlot& s : layout.slots()) params += s.spec.numel();
  const int64_t pad = layout.total_elements() - params;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "compress: %s from step %lld%s; buckets padded to multiples of %d ranks x %lld "
                "elements: %lld padding elements (%.2f%% of the parameters)\n",
                c.Describe().c_str(), (long long)r.cfg.compress.warmup_steps,
                r.cfg.compress.mode == "ps" ? ", gradients via parameter-server push_pull" : "",
                r.comm.size(),
                (long long)c.pad_elements(), (long long)pad, 100.0 * pad / params);
  r.out << buf << std::flush;
  if (c.grad != nullptr && r.cfg.compress.plan.empty() && r.cfg.compress.min_elements > 0) {
    const compress::SmallTensorBypass bypass(r.cfg.compress.min_elements);
    int64_t small = 0, small_elems = 0;
    for (const nn::Bucket& b : layout.buckets()) {
      if (bypass.WouldBypass(b.size())) ++small, small_elems += b.size();
    }
    std::snprintf(buf, sizeof buf,
                  "compress: buckets under %lld elements travel uncompressed "
                  "(compress.min_elements): %lld of %zu buckets, %lld elements\n",
                  (long long)r.cfg.compress.min_elements, (long long)small,
                  layout.buckets().size(), (long long)small_elems);
    r.out << buf << std::flush;
  }
}

// Forward and backward of every micro-batch of optimizer step `step`; returns the mean loss.
// Gradient buckets are handed to `reducer` during the last micro-step's backward.
double ForwardBackward(Run& r, GradReducer& reducer, int64_t step, float* grads,
                       const uint16_t* grad_bf16) {
  const TrainConfig& cfg = r.cfg;
  double step_loss = 0;
  for (int64_t m = 0; m < r.accum; ++m) {
    std::optional<ScopedTrace> load_span(std::in_place, TraceCategory::kDataLoader, "dataloader");
    TokenBatch b = r.data->TrainBatch(cfg.seed, step, r.comm.rank(), r.comm.size(), r.accum, m,
                                      cfg.micro_batch, r.seq_len);
    load_span.reset();
    reducer.BeginMicroStep(m == r.accum - 1);
    std::optional<ScopedTrace> fwd_span(std::in_place, TraceCategory::kForward, "forward");
    at::Tensor loss = r.model->Loss(AsTensor(b.tokens, b.batch, b.seq_len),
                                    AsTensor(b.targets, b.batch, b.seq_len));
    fwd_span.reset();
    {
      ScopedTrace bwd_span(TraceCategory::kBackward, "backward");
      (loss / static_cast<double>(r.accum)).backward();
    }
    step_loss += loss.item<double>() / r.accum;
    if (grad_bf16 != nullptr && m < r.accum - 1) {
      // Accumulate micro-steps in fp32, not in the bf16 gradient buffer.
      AccumulateBf16Into(grads, grad_bf16, r.model->layout().total_elements());
      r.model->ZeroGrads();
    }
  }
  return step_loss;
}

// Rank 0 at the end: the generated sample and report.html.
Status FinishRun(Run& r, const RunWriter& writer, TrainSummary& summary) {
  const TrainConfig& cfg = r.cfg;
  if (cfg.sample_tokens > 0) {
    auto ids = nn::Generate(*r.model, nn::ByteTokenizer::Encode(cfg.sample_prompt),
                            {.max_new_tokens = cfg.sample_tokens,
                             .temperature = cfg.sample_temperature,
                             .top_k = cfg.sample_top_k,
                             .seed = cfg.seed});
    summary.sample = cfg.sample_prompt + nn::ByteTokenizer::DecodePrintable(ids);
    r.out << "\nsample (" << cfg.sample_tokens << " bytes after \"" << cfg.sample_prompt
          << "\"):\n" << summary.sample << "\n\n";
  }
  char v[64];
  std::vector<std::pair<std::string, std::string>> facts;
  facts.push_back({"data", r.data->description()});
  facts.push_back({"model", std::to_string(cfg.model.NonEmbeddingParams()) +
                                " non-embedding parameters, " +
                                std::to_string(cfg.model.n_layers) + " layers, d_model " +
                                std::to_string(cfg.model.d_model)});
  facts.push_back({"training", std::to_string(r.comm.size()) + " ranks, " + cfg.dp_mode + ", " +
                                   at::toString(r.dtype) + ", " + std::to_string(summary.steps) +
                                   " steps of " + std::to_string(cfg.global_batch) + " x " +
                                   std::to_string(r.seq_len) + " tokens"});
  std::snprintf(v, sizeof(v), "%.4f -> %.4f (eval %.4f)", summary.first_loss, summary.final_loss,
                summary.final_eval_loss);
  facts.push_back({"loss", v});
  std::snprintf(v, sizeof(v), "%.0f tokens/s (median), MFU %.1f%%", summary.tokens_per_s,
                100 * summary.mfu);
  facts.push_back({"throughput", v});
  std::snprintf(v, sizeof(v), "%.1f GFLOP/s per rank", r.peak / 1e9);
  facts.push_back({"GEMM peak", v});
  facts.push_back({"MFU convention", MfuConvention()});
  if (!summary.compressed_traffic.empty()) {
    facts.push_back({"compression", cfg.compress.grad + " / " + cfg.compress.weights});
    r.out << summary.compressed_traffic << "\n";
    facts.push_back({"compressed traffic", summary.compressed_traffic});
  }
  LOOM_RETURN_IF_ERROR(writer.WriteReport("loom train: " + summary.run_dir, facts, summary.sample));
  r.out << "run directory: " << summary.run_dir << " (config.json, metrics.jsonl, report.html)\n"
        << std::flush;
  return OkStatus();
}

}  // namespace

Result<TrainSummary> RunTraining(const TrainConfig& cfg, comm::Communicator& comm,
                                 const comm::WorldInfo& world, CheckpointHook* hook,
                                 std::ostream& out) {
  Run r(cfg, comm, world, out);
  // Every thread of the rank so far (this one, Gloo's event loop) and every thread it starts from
  // here (the reducer's, torch's) runs without wake-up preemption while training.
  std::optional<ScopedBatchPolicy> batch_policy;
  if (cfg.sched == "batch") {
    batch_policy.emplace(ScopedBatchPolicy::Scope::kProcess);
    if (!batch_policy->ok()) {
      LOOM_LOG(WARNING, "train") << "sched=batch: " << batch_policy->status().message();
    }
  }
  // Application metrics for `loom monitor agent` when LOOM_MONITOR_SOCKET is set; never blocks.
  std::unique_ptr<monitor::AppReporter> app = monitor::AppReporter::FromEnv(comm.rank());
  CollectiveReporter collective_reporter(comm, app.get());
  auto report_phase = [&app](const char* name) {
    if (app) app->Phase(name);
  };
  r.accum = cfg.AccumulationSteps(comm.size());
  r.seq_len = cfg.model.context_length;
  r.dtype = cfg.ResolvedPrecision() == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
  int threads = 1;
  LOOM_RETURN_IF_ERROR(SetUpThreads(cfg, world, &threads));

  LOOM_ASSIGN_OR_RETURN(TextDataset data, TextDataset::Load(cfg.data_source, cfg.data_path,
                                                             cfg.val_fraction));
  if (data.train_size() < 2 * (r.seq_len + 1) || data.val_size() < r.seq_len + 2) {
    return InvalidArgumentError("data: " + data.description() +
                                " is too small for context_length " + std::to_string(r.seq_len));
  }
  r.data = std::make_unique<TextDataset>(std::move(data));

  LOOM_ASSIGN_OR_RETURN(TrainCompression compression, TrainCompression::FromConfig(cfg.compress));
  nn::LayoutOptions layout_opts{
      .bucket_elems = static_cast<int64_t>(cfg.bucket_mb * (1 << 20) / 4),
      .pad = static_cast<int64_t>(comm.size()) * compression.pad_elements()};
  r.model = std::make_unique<nn::Gpt>(cfg.model, r.dtype, layout_opts);
  const nn::FlatLayout& layout = r.model->layout();
  const int64_t n_flat = layout.total_elements();
  if (r.dtype == at::kFloat) {
    r.master = r.model->weights();
    r.grad_fp32 = r.model->grads();
  } else {
    r.master = at::empty({n_flat}, at::kFloat);
    r.grad_fp32 = at::zeros({n_flat}, at::kFloat);
  }
  float* master = r.master.data_ptr<float>();
  float* grads = r.grad_fp32.data_ptr<float>();
  nn::InitGptWeights(cfg.model, layout, cfg.seed, master);
  // Every rank initialises identically; the broadcast makes that a guarantee, not an assumption.
  LOOM_RETURN_IF_ERROR(comm.Broadcast(TensorView::Of(master, n_flat), 0).WithContext("init"));
  uint16_t* weights_bf16 =
      r.dtype == at::kBFloat16 ? reinterpret_cast<uint16_t*>(r.model->weights().data_ptr())
                               : nullptr;
  DataParallelOptimizer opt(&comm, &layout, master, grads, cfg.ResolvedDpMode(), cfg.optim,
                            weights_bf16);
  if (compression.weights != nullptr) {
    opt.EnableWeightCompression({.codec = compression.weights.get(),
                                 .difference = compression.weight_spec.difference,
                                 .seed = cfg.seed,
                                 .from_step = cfg.compress.warmup_steps});
  }
  LOOM_ASSIGN_OR_RETURN(std::string run_dir, AgreeOnRunDir(cfg, comm));
  std::unique_ptr<TraceSession> tracing;  // before the reducer: its thread records into it
  if (cfg.trace.enabled()) {
    LOOM_ASSIGN_OR_RETURN(tracing, TraceSession::Start(cfg, run_dir, world.run_id, comm));
  }
  std::unique_ptr<TrainCheckpointer> default_hook;
  if (hook == nullptr && (cfg.ckpt.every > 0 || !cfg.resume.empty())) {
    default_hook = std::make_unique<TrainCheckpointer>(cfg, run_dir, &comm,
                                                       r.leader ? &out : nullptr);
    hook = default_hook.get();
  }
  TrainState state{0, master, n_flat, &layout, &opt, &cfg};
  int64_t start_step = 0;
  if (hook != nullptr) {
    report_phase("ckpt_load");
    LOOM_ASSIGN_OR_RETURN(start_step, hook->Restore(state));
    opt.ReloadMaster();
  }
  r.model->LoadWeights(master);
  if (r.leader && !cfg.init_export.empty()) {
    LOOM_RETURN_IF_ERROR(nn::WriteSafetensors(cfg.init_export, layout, master,
                                              {{"format", "pt"}, {"producer", "loom train"}})
                             .WithContext("init.export"));
  }

  LOOM_ASSIGN_OR_RETURN(r.peak, AgreeOnPeak(r, threads));
  r.flops_per_token = FlopsPerToken(cfg.model, r.seq_len);

  std::optional<RunWriter> writer;
  if (r.leader) {
    LOOM_ASSIGN_OR_RETURN(RunWriter w, RunWriter::Open(run_dir, start_step));
    nlohmann::json resolved = TrainConfigToJson(cfg);
    resolved["run_dir"] = run_dir;
    LOOM_RETURN_IF_ERROR(w.WriteConfig(resolved));
    writer = std::move(w);
    PrintRunHeader(r, layout);
    if (compression.enabled()) PrintCompressionHeader(r, compression, layout);
  }

  const uint16_t* grad_bf16 =
      r.dtype == at::kBFloat16 ? reinterpret_cast<const uint16_t*>(r.model->grads().data_ptr())
                               : nullptr;
  GradReducer reducer(&comm, &layout, grads, grad_bf16,
                      {.mode = cfg.ResolvedDpMode(),
                       .overlap = cfg.overlap,
                       .codec = compression.grad.get(),
                       .seed = cfg.seed,
                       .compress_from_step = cfg.compress.warmup_steps,
                       .error_feedback = cfg.compress.error_feedback,
                       .powersgd_rank = compression.powersgd_rank,
                       .push_pull = cfg.compress.mode == "ps",
                       .nesterov = static_cast<float>(cfg.compress.nesterov),
                       .min_compress_elements =
                           cfg.compress.plan.empty() ? cfg.compress.min_elements : 0,
                       .node_size = cfg.compress.node_size,
                       .intra_codec = compression.grad_intra.get()});
  GradReadyHooks hooks(r.model->params(), [&reducer](int i) { reducer.OnParamReady(i); });
  BucketPlanner bucket_planner(cfg, &comm, &layout, run_dir, r.leader ? &out : nullptr);
  LOOM_RETURN_IF_ERROR(bucket_planner.Start(reducer));

  TrainSummary summary;
  summary.run_dir = run_dir;
  summary.peak_flops = r.peak;
  Progress progress(cfg.steps, start_step);
  const double tokens_per_step = static_cast<double>(cfg.global_batch * r.seq_len);
  std::vector<double> step_tps;
  double window_loss = 0, window_exposed = 0, window_fwd_bwd = 0, window_optim = 0;
  int64_t window_steps = 0;
  Stopwatch total, window;
  report_phase("train");
  for (int64_t step = start_step; step < cfg.steps; ++step) {
    if (tracing) tracing->SetStep(step);
    ScopedTrace step_span(TraceCategory::kStep, "step");  // ProfilerStep#<step + 1>
    Stopwatch step_timer;
    const double lr = LearningRate(step, cfg.steps, cfg.optim.warmup_steps, cfg.optim.lr,
                                   cfg.optim.min_lr);
    {
      at::NoGradGuard ng;
      r.grad_fp32.zero_();
      if (r.dtype != at::kFloat) r.model->ZeroGrads();
    }
    Stopwatch phase;
    reducer.SetStep(step);
    const double step_loss = ForwardBackward(r, reducer, step, grads, grad_bf16);
    const double fwd_bwd_s = phase.Seconds();
    window_fwd_bwd += fwd_bwd_s;
    {
      ScopedTrace wait_span(TraceCategory::kCompute, "wait_grad_sync");
      LOOM_RETURN_IF_ERROR(reducer.FinishStep().WithContext("step " + std::to_string(step)));
    }
    phase.Reset();
    std::optional<ScopedTrace> opt_span(std::in_place, TraceCategory::kOptimizer, "optimizer");
    LOOM_ASSIGN_OR_RETURN(auto res, opt.Step(lr, step + 1));  // also refreshes bf16 weights
    opt_span.reset();
    window_optim += phase.Seconds();
    LOOM_RETURN_IF_ERROR(bucket_planner.AfterStep(step, reducer));
    state.step = step + 1;
    const bool ckpt_due = hook != nullptr && cfg.ckpt.every > 0 &&
                          (state.step % cfg.ckpt.every == 0 || state.step == cfg.steps);
    if (ckpt_due) report_phase("ckpt_save");
    if (hook != nullptr) {
      ScopedTrace ckpt_span(TraceCategory::kCheckpoint, "checkpoint");
      LOOM_RETURN_IF_ERROR(hook->AfterStep(state));
    }
    if (ckpt_due) report_phase("train");

    const double secs = step_timer.Seconds();
    // Steps done; data wait is not measured separately; forward+backward is the compute section.
    if (app) app->Step(step + 1, secs, NAN, fwd_bwd_s);
    if (step - start_step >= 3) step_tps.push_back(tokens_per_step / secs);
    window_loss += step_loss;
    window_exposed += reducer.last_exposed_seconds();
    ++window_steps;
    const bool last = step + 1 == cfg.steps;
    const bool do_eval = last || (cfg.eval_every > 0 && (step + 1) % cfg.eval_every == 0);
    if ((step + 1) % cfg.log_every != 0 && !do_eval) continue;

    // The mean loss over ranks and the logged window.
    double lw[2] = {window_loss, static_cast<double>(window_steps)};
    LOOM_RETURN_IF_ERROR(comm.AllReduce(TensorView::Of(lw, 2), comm::ReduceOp::kSum)
                             .WithContext("loss logging"));
    MetricRow row;
    row.step = step + 1;
    row.loss = lw[0] / lw[1];
    row.tokens_per_s = tokens_per_step * window_steps / window.Seconds();
    row.mfu = Mfu(row.tokens_per_s, r.flops_per_token, comm.size(), r.peak);
    row.lr = lr;
    row.grad_norm = res.grad_norm;
    row.exposed_comm_s = window_exposed / window_steps;
    row.fwd_bwd_s = window_fwd_bwd / window_steps;
    row.optim_s = window_optim / window_steps;
    if (do_eval) {
      report_phase("eval");
      LOOM_ASSIGN_OR_RETURN(row.eval_loss, Evaluate(r));
      report_phase("train");
    }
    row.elapsed_s = total.Seconds();
    if (summary.steps == 0) summary.first_loss = row.loss;
    summary.steps = step + 1;
    summary.final_loss = row.loss;
    if (row.eval_loss) summary.final_eval_loss = *row.eval_loss;
    if (r.leader) {
      LOOM_RETURN_IF_ERROR(writer->Append(row));
      out << progress.Line(row) << std::flush;
    }
    window_loss = window_exposed = window_fwd_bwd = window_optim = 0;
    window_steps = 0;
    window.Reset();
  }

  if (tracing) {
    // A trace that cannot be written does not fail a finished training run.
    if (Status ts = tracing->Finish(&out); !ts.ok()) {
      LOOM_LOG(WARNING, "train") << "trace not written: " << ts.ToString();
    }
  }
  if (hook != nullptr) LOOM_RETURN_IF_ERROR(hook->Finish());
  if (!step_tps.empty()) {
    std::sort(step_tps.begin(), step_tps.end());
    summary.tokens_per_s = step_tps[step_tps.size() / 2];
  }
  summary.mfu = Mfu(summary.tokens_per_s, r.flops_per_token, comm.size(), r.peak);
  summary.compressed_traffic =
      DescribeTraffic(reducer.compress_stats(), opt.weight_compress_stats());
  if (std::string bypassed = reducer.bypass().Describe(); !bypassed.empty()) {
    summary.compressed_traffic += (summary.compressed_traffic.empty() ? "" : "; ") + bypassed;
  }
  if (r.leader) LOOM_RETURN_IF_ERROR(FinishRun(r, *writer, summary));
  return summary;
}

}  // namespace loom::train
