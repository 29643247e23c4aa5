#include "loom/train/dp_optimizer.h"

#include <algorithm>
#include <cmath>

#include "loom/base/convert.h"
#include "loom/train/adamw.h"

namespace loom::train {

DataParallelOptimizer::DataParallelOptimizer(comm::Communicator* comm,
                                             const nn::FlatLayout* layout, float* params,
                                             float* grads, DpMode mode, OptimConfig config,
                                             uint16_t* weights_bf16)
    : comm_(comm),
      layout_(layout),
      params_(params),
      grads_(grads),
      weights_bf16_(weights_bf16),
      mode_(mode),
      config_(config) {
  // The ranges this rank updates: its shard of every bucket (zero1) or everything.
  std::vector<std::pair<int64_t, int64_t>> owned;
  const int P = comm_->size(), r = comm_->rank();
  for (const nn::Bucket& b : layout_->buckets()) {
    if (mode_ == DpMode::kZero1) {
      int64_t shard = b.size() / P;
      owned.push_back({b.begin + shard * r, b.begin + shard * (r + 1)});
    } else {
      owned.push_back({b.begin, b.end});
    }
  }
  // Intersect with the parameters (skipping padding), splitting where weight decay changes.
  for (auto [lo, hi] : owned) {
    for (const nn::ParamSlot& s : layout_->slots()) {
      int64_t a = std::max(lo, s.offset), e = std::min(hi, s.offset + s.spec.numel());
      if (a < e) segments_.push_back({a, e - a, s.spec.decay, 0});
    }
  }
  std::sort(segments_.begin(), segments_.end(),
            [](const Segment& x, const Segment& y) { return x.begin < y.begin; });
  int64_t n = 0;
  for (Segment& s : segments_) {
    s.state = n;
    n += s.count;
  }
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

std::vector<DataParallelOptimizer::OwnedSegment> DataParallelOptimizer::owned_segments() const {
  std::vector<OwnedSegment> out;
  for (const Segment& s : segments_) out.push_back({s.begin, s.count, s.state});
  return out;
}

void DataParallelOptimizer::EnableWeightCompression(WeightCompression wc) {
  wc_ = wc;
  weight_qc_ = std::make_unique<compress::QuantizedCollectives>(
      comm_, wc.codec, compress::QuantizedCollectives::Options{.seed = wc.seed, .comm = {}});
  master_.assign(m_.size(), 0.0f);
  ReloadMaster();
}

void DataParallelOptimizer::ReloadMaster() {
  if (master_.empty()) return;
  for (const Segment& s : segments_) {
    std::copy(params_ + s.begin, params_ + s.begin + s.count, master_.data() + s.state);
  }
}

compress::CollectiveStats DataParallelOptimizer::weight_compress_stats() const {
  return weight_qc_ != nullptr ? weight_qc_->stats() : compress::CollectiveStats{};
}

Result<DataParallelOptimizer::StepResult> DataParallelOptimizer::Step(double lr, int64_t step) {
  StepResult out;
  double sq = 0;
  for (const Segment& s : segments_) sq += SumOfSquares(grads_ + s.begin, s.count);
  if (mode_ == DpMode::kZero1 && comm_->size() > 1) {
    LOOM_RETURN_IF_ERROR(
        comm_->AllReduce(TensorView::Of(&sq, 1), comm::ReduceOp::kSum).WithContext("grad norm"));
  }
  out.grad_norm = std::sqrt(sq);
  if (!std::isfinite(out.grad_norm)) {
    return DataLossError("gradient norm is " + std::to_string(out.grad_norm) + " at step " +
                         std::to_string(step) + ": the loss diverged (lower optim.lr?)");
  }
  if (config_.grad_clip > 0) {
    double coef = config_.grad_clip / (out.grad_norm + 1e-6);
    if (coef < 1) out.clip_scale = coef;
  }
  AdamWStep hp{.lr = lr,
               .beta1 = config_.beta1,
               .beta2 = config_.beta2,
               .eps = config_.eps,
               .step = step,
               .grad_scale = out.clip_scale};
  for (const Segment& s : segments_) {
    hp.weight_decay = s.decay ? config_.weight_decay : 0.0;
    float* w = master_.empty() ? params_ + s.begin : master_.data() + s.state;
    AdamWUpdate(w, grads_ + s.begin, m_.data() + s.state, v_.data() + s.state, s.count, hp);
  }
  LOOM_RETURN_IF_ERROR(GatherParameters(step));
  return out;
}

Status DataParallelOptimizer::GatherParameters(int64_t step) {
  const int P = comm_->size(), r = comm_->rank();
  const bool zero = mode_ == DpMode::kZero1 && P > 1;
  const bool compressed = weight_qc_ != nullptr && step - 1 >= wc_.from_step;
  if (!master_.empty() && !compressed) {  // warm-up: the copy takes the exact master values
    for (const Segment& s : segments_) {
      std::copy(master_.data() + s.state, master_.data() + s.state + s.count, params_ + s.begin);
    }
  }
  const std::vector<nn::Bucket>& buckets = layout_->buckets();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const nn::Bucket& b = buckets[i];
    const int64_t shard = b.size() / P;
    const int64_t lo = zero ? b.begin + shard * r : b.begin, n = zero ? shard : b.size();
    if (compressed) {
      LOOM_RETURN_IF_ERROR(GatherBucketCompressed(static_cast<int>(i), lo, shard, step));
    } else {
      LOOM_RETURN_IF_ERROR(GatherBucket(b, lo, n));
    }
  }
  return OkStatus();
}

Status DataParallelOptimizer::GatherBucket(const nn::Bucket& b, int64_t lo, int64_t n) {
  const int P = comm_->size(), r = comm_->rank();
  const bool zero = mode_ == DpMode::kZero1 && P > 1;
  const int64_t shard = b.size() / P;
  if (weights_bf16_ != nullptr) {
    ConvertF32ToBF16(params_ + lo, weights_bf16_ + lo, n);
    if (zero) {
      TensorView bucket(weights_bf16_ + b.begin, DType::kBF16, {b.size()});
      return comm_->AllGather(bucket.Slice(shard * r, shard), bucket)
          .WithContext("parameter all-gather");
    }
  } else if (zero) {
    TensorView bucket = TensorView::Of(params_ + b.begin, b.size());
    return comm_->AllGather(bucket.Slice(shard * r, shard), bucket)
        .WithContext("parameter all-gather");
  }
  return OkStatus();
}

Status DataParallelOptimizer::GatherBucketCompressed(int bucket, int64_t lo, int64_t shard,
                                                     int64_t step) {
  const nn::Bucket& b = layout_->buckets()[bucket];
  // What this rank sends for its shard: master - copy (qWD) or the master (qW); 0 on padding.
  send_.assign(static_cast<size_t>(shard), 0.0f);
  for (const Segment& s : segments_) {
    const int64_t a = std::max(lo, s.begin), e = std::min(lo + shard, s.begin + s.count);
    for (int64_t i = a; i < e; ++i) {
      const float m = master_[s.state + (i - s.begin)];
      send_[i - lo] = wc_.difference ? m - params_[i] : m;
    }
  }
  LOOM_RETURN_IF_ERROR(weight_qc_->AllGather(
      send_.data(), shard, params_ + b.begin, /*add=*/wc_.difference,
      {.step = step, .chunk = bucket, .what = "parameters of bucket " + std::to_string(bucket)}));
  if (weights_bf16_ != nullptr) ConvertF32ToBF16(params_ + b.begin, weights_bf16_ + b.begin, b.size());
  return OkStatus();
}

}  // namespace loom::train
