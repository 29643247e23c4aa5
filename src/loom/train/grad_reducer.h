// GradReducer: reduces gradient buckets across data-parallel ranks while backward is running.
//
// The autograd thread calls OnParamReady(p) as each parameter's gradient is accumulated (see
// grad_ready_hooks_torch.h). When every parameter of a bucket is ready, the bucket is handed to
// the reducer's communication thread, which (bf16 compute) adds the bf16 gradients into the fp32
// gradient buffer and then reduces the bucket in fp32: an all-reduce (dist.mode=allreduce) or a
// reduce-scatter into this rank's shard of the bucket (dist.mode=zero1). Buckets are launched
// strictly in index order, so every rank issues the same collectives in the same order.
// With a gradient codec (compress.grad), buckets travel quantized instead: zero1 uses the
// quantized reduce-scatter (each element quantized once by its source, summed in fp32 by its
// owner), allreduce the compressed all-reduce (reduce-scatter + server-side error feedback +
// all-gather); see compress/collectives/quantized_collectives.h. With compress.mode=ps
// (Options::push_pull) compressed buckets are all-reduced by BytePS-style push_pull through
// parameter-server shards instead (compress/collectives/push_pull.h). With PowerSGD, each bucket is
// all-reduced as rank-r factors of its matrices (both modes; zero1 then uses its shard). A non-finite gradient fails the
// step on every rank with the bucket's name.
// With compress.node_size > 1 (Options::node_size) compressed buckets take SDP4Bit's two-level
// route (compress/collectives/two_level_collectives.h). Compressed buckets below
// Options::min_compress_elements travel uncompressed and are counted in bypass().
//
//   reducer.BeginMicroStep(/*last=*/true);
//   loss.backward();                       // hooks launch buckets as they fill
//   LOOM_RETURN_IF_ERROR(reducer.FinishStep());
//
// Thread-safety: BeginMicroStep/OnParamReady/FinishStep from the training thread (autograd runs
// CPU work on the thread that called backward). While a step is in flight the communicator
// belongs to the reducer's thread; the caller may use it again after FinishStep returns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/clock.h"
#include "loom/base/mutex.h"
#include "loom/base/thread_pool.h"
#include "loom/comm/communicator.h"
#include "loom/compress/collectives/powersgd.h"
#include "loom/compress/collectives/push_pull.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/collectives/small_tensor_bypass.h"
#include "loom/compress/collectives/two_level_collectives.h"
#include "loom/compress/decorators/nesterov.h"
#include "loom/nn/param_layout.h"
#include "loom/train/train_config.h"

namespace loom::train {

// dst[i] += bf16 src[i] (fp32 accumulation of bf16 gradients).
void AccumulateBf16Into(float* dst, const uint16_t* src, int64_t n);

class GradReducer {
 public:
  struct Options {
    DpMode mode = DpMode::kZero1;
    bool overlap = true;  // false: reduce every bucket after backward (for ablations)
    uint32_t tag = 1;
    const compress::Codec* codec = nullptr;  // nullptr: full-precision collectives
    uint64_t seed = 0;                       // keys stochastic rounding
    int64_t compress_from_step = 0;          // compress.warmup_steps
    bool error_feedback = false;             // worker-side, per bucket
    int powersgd_rank = 0;                   // > 0: PowerSGD all-reduce (instead of `codec`)
    bool push_pull = false;  // compress.mode=ps: compressed buckets through compress::PushPull
    float nesterov = 0;      // compress.nesterov: momentum mu applied before compression; 0: off
    // compress.min_elements: compressed buckets smaller than this travel uncompressed, counted in
    // bypass() (compress/collectives/small_tensor_bypass.h); 0: off. Not applied to PowerSGD.
    int64_t min_compress_elements = 0;
    // compress.node_size > 1: compressed buckets take the two-level route (intra-node
    // `intra_codec`, inter-node the bucket's codec; compress/collectives/two_level_collectives.h).
    int node_size = 1;
    const compress::Codec* intra_codec = nullptr;  // compress.grad_intra
  };

  // `grad_fp32` holds layout->total_elements() floats; `grad_bf16` is the model's bf16 gradient
  // buffer when computing in bf16 (nullptr in fp32).
  GradReducer(comm::Communicator* comm, const nn::FlatLayout* layout, float* grad_fp32,
              const uint16_t* grad_bf16, Options options);
  ~GradReducer();

  // Per-bucket codecs (a compression plan; nullptr = full precision), replacing Options::codec.
  // Call between steps. The codecs must outlive the reducer.
  void SetBucketCodecs(const std::vector<const compress::Codec*>& codecs);

  // The optimizer step (0-based) about to be computed: keys stochastic rounding and warm-up.
  void SetStep(int64_t step) { step_ = step; }
  // Buckets sent uncompressed because they were below Options::min_compress_elements.
  const compress::SmallTensorBypass& bypass() const { return bypass_; }
  // Compressed-traffic counters (zero when no codec is configured).
  compress::CollectiveStats compress_stats() const;

  // Starts a micro-step. Buckets are reduced only in the last micro-step of an optimizer step;
  // earlier ones just accumulate.
  void BeginMicroStep(bool last);
  void OnParamReady(int param);
  // Launches buckets not yet launched, waits for all, returns the first error. Also records how
  // long it had to wait (the communication not hidden behind backward).
  Status FinishStep();
  double last_exposed_seconds() const { return last_exposed_s_; }
  // Profile of the last step (for the compression planner): seconds from the start of the last
  // micro-step (its forward) until each bucket was ready to reduce (-1: launched by FinishStep,
  // i.e. not during backward), and until FinishStep was called (the end of backward).
  const std::vector<double>& last_ready_seconds() const { return ready_s_; }
  double last_backward_end_seconds() const { return backward_end_s_; }
  int64_t buckets_launched_during_backward() const { return launched_early_; }

 private:
  void LaunchReadyBuckets();
  void Launch(int bucket);
  Status ReduceBucket(int bucket);
  std::string BucketName(int bucket) const;

  comm::Communicator* comm_;
  const nn::FlatLayout* layout_;
  float* grad_;
  const uint16_t* grad_bf16_;
  Options options_;
  compress::SmallTensorBypass bypass_;
  Result<compress::TwoLevelCollectives*> TwoLevelFor(const compress::Codec* inter);
  std::vector<std::unique_ptr<compress::TwoLevelCollectives>> two_level_owned_;  // one per codec
  compress::QuantizedCollectives* QcFor(const compress::Codec* codec);
  std::vector<std::unique_ptr<compress::QuantizedCollectives>> qc_owned_;  // one per codec
  std::vector<compress::QuantizedCollectives*> bucket_qc_;  // per bucket; nullptr: uncompressed
  std::vector<std::unique_ptr<compress::PowerSgd>> powersgd_;  // per bucket
  std::vector<std::unique_ptr<compress::NesterovMomentum>> nesterov_;  // per bucket
  compress::PushPull* PushPullFor(const compress::Codec* codec);
  std::vector<std::unique_ptr<compress::PushPull>> push_pull_owned_;  // one per codec (mode ps)
  int64_t step_ = 0;
  Stopwatch micro_step_clock_;
  std::vector<double> ready_s_;
  double backward_end_s_ = 0;
  ThreadPool pool_;
  bool last_micro_ = false;
  std::vector<int> ready_count_;
  int next_launch_ = 0;
  int64_t launched_early_ = 0;
  double last_exposed_s_ = 0;

  Mutex mu_;
  CondVar done_cv_;
  int in_flight_ LOOM_GUARDED_BY(mu_) = 0;
  Status first_error_ LOOM_GUARDED_BY(mu_);
};

}  // namespace loom::train
