#include "loom/train/grad_reducer.h"

#include <bit>
#include <cstring>

#include "loom/base/clock.h"
#include "loom/base/convert.h"

namespace loom::train {

__attribute__((target_clones("avx512f", "avx2", "default"))) void AccumulateBf16Into(
    float* __restrict dst, const uint16_t* __restrict src, int64_t n) {
  // Through fp32 chunks: the bf16 -> fp32 conversion vectorises only as integer lanes.
  constexpr int64_t kChunk = 1024;
  float buf[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = n - b < kChunk ? n - b : kChunk;
    ConvertBF16ToF32(src + b, buf, m);
    for (int64_t i = 0; i < m; ++i) dst[b + i] += buf[i];
  }
}

GradReducer::GradReducer(comm::Communicator* comm, const nn::FlatLayout* layout, float* grad_fp32,
                         const uint16_t* grad_bf16, Options options)
    : comm_(comm),
      layout_(layout),
      grad_(grad_fp32),
      grad_bf16_(grad_bf16),
      options_(options),
      bypass_(options.min_compress_elements),
      pool_({.num_threads = 1, .name = "grad-reduce"}),
      ready_count_(layout->buckets().size(), 0) {
  bucket_qc_.assign(layout_->buckets().size(), nullptr);
  if (options_.codec != nullptr) {
    SetBucketCodecs(std::vector<const compress::Codec*>(layout_->buckets().size(), options_.codec));
  }
  if (options_.powersgd_rank > 0) {
    for (const nn::Bucket& b : layout_->buckets()) {
      std::vector<compress::LowRankMatrix> matrices;
      for (int p : b.params) {
        const nn::ParamSlot& s = layout_->slots()[p];
        if (s.spec.shape.size() < 2) continue;
        const int64_t rows = s.spec.shape[0];
        matrices.push_back({s.offset - b.begin, rows, s.spec.numel() / rows});
      }
      powersgd_.push_back(std::make_unique<compress::PowerSgd>(
          comm_, b.size(), std::move(matrices),
          compress::PowerSgd::Options{.rank = options_.powersgd_rank,
                                      .seed = options_.seed,
                                      .comm = {.tag = options_.tag}}));
    }
  }
  if (options_.nesterov > 0) {
    for (const nn::Bucket& b : layout_->buckets()) {
      nesterov_.push_back(
          std::make_unique<compress::NesterovMomentum>(options_.nesterov, b.size()));
    }
  }
  pool_.Start();
}

GradReducer::~GradReducer() { pool_.Stop(); }

void GradReducer::BeginMicroStep(bool last) {
  last_micro_ = last;
  if (last) {
    micro_step_clock_.Reset();
    ready_s_.assign(layout_->buckets().size(), -1.0);
  }
  std::fill(ready_count_.begin(), ready_count_.end(), 0);
  next_launch_ = 0;
  launched_early_ = 0;
}

void GradReducer::OnParamReady(int param) {
  if (!last_micro_ || !options_.overlap) return;
  int b = layout_->slots()[param].bucket;
  if (++ready_count_[b] == static_cast<int>(layout_->buckets()[b].params.size())) {
    LaunchReadyBuckets();
  }
}

void GradReducer::LaunchReadyBuckets() {
  const int n = static_cast<int>(layout_->buckets().size());
  while (next_launch_ < n &&
         ready_count_[next_launch_] == static_cast<int>(layout_->buckets()[next_launch_].params.size())) {
    ++launched_early_;
    ready_s_[next_launch_] = micro_step_clock_.Seconds();
    Launch(next_launch_++);
  }
}

void GradReducer::Launch(int bucket) {
  {
    MutexLock lock(&mu_);
    ++in_flight_;
  }
  pool_.Schedule([this, bucket] {
    Status s;
    {
      MutexLock lock(&mu_);
      s = first_error_;
    }
    // After a failure the communicator is broken; skip the work but keep the accounting.
    if (s.ok()) s = ReduceBucket(bucket);
    {
      MutexLock lock(&mu_);
      if (!s.ok() && first_error_.ok()) first_error_ = s;
      --in_flight_;
    }
    done_cv_.NotifyAll();
  });
}

Status GradReducer::ReduceBucket(int bucket) {
  const nn::Bucket& b = layout_->buckets()[bucket];
  float* g = grad_ + b.begin;
  if (grad_bf16_ != nullptr) AccumulateBf16Into(g, grad_bf16_ + b.begin, b.size());
  const int64_t shard = b.size() / comm_->size();
  compress::QuantizedCollectives* qc = bucket_qc_[bucket];
  if ((!powersgd_.empty() || qc != nullptr) && step_ >= options_.compress_from_step &&
      (!powersgd_.empty() || !bypass_.Bypass(b.size()))) {
    const compress::CollectiveCall call{.step = step_, .chunk = bucket, .what = BucketName(bucket)};
    if (!nesterov_.empty()) nesterov_[bucket]->Apply(g);  // worker side, before encoding
    if (!powersgd_.empty()) return powersgd_[bucket]->AllReduce(g, call);
    if (options_.push_pull) {
      return PushPullFor(&qc->codec())->AllReduce(g, b.size(), comm::ReduceOp::kAvg, call);
    }
    if (options_.node_size > 1) {
      LOOM_ASSIGN_OR_RETURN(compress::TwoLevelCollectives * tl, TwoLevelFor(&qc->codec()));
      if (options_.mode == DpMode::kAllReduce) {
        return tl->AllReduce(g, b.size(), comm::ReduceOp::kAvg, call);
      }
      return tl->ReduceScatter(g, shard, g + shard * comm_->rank(), comm::ReduceOp::kAvg, call);
    }
    if (options_.mode == DpMode::kAllReduce) {
      return qc->AllReduce(g, b.size(), comm::ReduceOp::kAvg, call);
    }
    return qc->ReduceScatter(g, shard, g + shard * comm_->rank(), comm::ReduceOp::kAvg, call);
  }
  TensorView view = TensorView::Of(g, b.size());
  comm::CommOptions opts{.tag = options_.tag};
  if (options_.mode == DpMode::kAllReduce) {
    return comm_->AllReduce(view, comm::ReduceOp::kAvg, opts);
  }
  return comm_->ReduceScatter(view, view.Slice(shard * comm_->rank(), shard),
                              comm::ReduceOp::kAvg, opts);
}

compress::QuantizedCollectives* GradReducer::QcFor(const compress::Codec* codec) {
  if (codec == nullptr) return nullptr;
  for (const auto& q : qc_owned_) {
    if (&q->codec() == codec) return q.get();
  }
  qc_owned_.push_back(std::make_unique<compress::QuantizedCollectives>(
      comm_, codec,
      compress::QuantizedCollectives::Options{.seed = options_.seed,
                                              .worker_error_feedback = options_.error_feedback,
                                              .server_error_feedback = true,
                                              .comm = {.tag = options_.tag}}));
  return qc_owned_.back().get();
}

compress::PushPull* GradReducer::PushPullFor(const compress::Codec* codec) {
  for (const auto& p : push_pull_owned_) {
    if (&p->codec() == codec) return p.get();
  }
  // All instances share the tag: they are used one call at a time from this reducer's thread.
  push_pull_owned_.push_back(std::make_unique<compress::PushPull>(
      comm_, codec,
      compress::PushPull::Options{.seed = options_.seed,
                                  .worker_error_feedback = options_.error_feedback,
                                  .server_error_feedback = true,
                                  .comm = {.tag = options_.tag}}));
  return push_pull_owned_.back().get();
}

Result<compress::TwoLevelCollectives*> GradReducer::TwoLevelFor(const compress::Codec* inter) {
  for (const auto& t : two_level_owned_) {
    if (&t->inter_codec() == inter) return t.get();
  }
  LOOM_ASSIGN_OR_RETURN(
      std::unique_ptr<compress::TwoLevelCollectives> tl,
      compress::TwoLevelCollectives::Create(
          comm_, options_.intra_codec != nullptr ? options_.intra_codec : inter, inter,
          {.node_size = options_.node_size,
           .seed = options_.seed,
           .worker_error_feedback = options_.error_feedback,
           .server_error_feedback = true,
           .comm = {.tag = options_.tag}}));
  two_level_owned_.push_back(std::move(tl));
  return two_level_owned_.back().get();
}

void GradReducer::SetBucketCodecs(const std::vector<const compress::Codec*>& codecs) {
  for (size_t i = 0; i < bucket_qc_.size() && i < codecs.size(); ++i) bucket_qc_[i] = QcFor(codecs[i]);
}

std::string GradReducer::BucketName(int bucket) const {
  const nn::Bucket& b = layout_->buckets()[bucket];
  std::string name = "gradient bucket " + std::to_string(bucket);
  if (!b.params.empty()) {
    name += " (" + layout_->slots()[b.params.front()].spec.name;
    if (b.params.size() > 1) name += " .. " + layout_->slots()[b.params.back()].spec.name;
    name += ")";
  }
  return name;
}

compress::CollectiveStats GradReducer::compress_stats() const {
  compress::CollectiveStats sum;
  for (const auto& q : qc_owned_) sum += q->stats();
  for (const auto& p : powersgd_) sum += p->stats();
  for (const auto& p : push_pull_owned_) sum += p->stats();
  for (const auto& t : two_level_owned_) sum += t->stats();
  return sum;
}

Status GradReducer::FinishStep() {
  Stopwatch sw;
  backward_end_s_ = micro_step_clock_.Seconds();
  const int n = static_cast<int>(layout_->buckets().size());
  while (next_launch_ < n) Launch(next_launch_++);
  MutexLock lock(&mu_);
  // Each collective has its own timeout, so this wait ends; the deadline is a backstop.
  Deadline backstop = SteadyClock::now() + std::chrono::hours(24);
  done_cv_.WaitUntil(&mu_, backstop, [&]() LOOM_REQUIRES(mu_) { return in_flight_ == 0; });
  last_exposed_s_ = sw.Seconds();
  Status s = first_error_;
  first_error_ = OkStatus();
  return s;
}

}  // namespace loom::train
