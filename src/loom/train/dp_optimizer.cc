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
      if (a < e) segments_.push_back({a, e - a, s.spec.decay});
    }
  }
  std::sort(segments_.begin(), segments_.end(),
            [](const Segment& x, const Segment& y) { return x.begin < y.begin; });
  int64_t n = 0;
  for (const Segment& s : segments_) n += s.count;
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

std::vector<DataParallelOptimizer::OwnedSegment> DataParallelOptimizer::owned_segments() const {
  std::vector<OwnedSegment> out;
  int64_t at = 0;
  for (const Segment& s : segments_) {
    out.push_back({s.begin, s.count, at});
    at += s.count;
  }
  return out;
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
  int64_t state = 0;
  for (const Segment& s : segments_) {
    hp.weight_decay = s.decay ? config_.weight_decay : 0.0;
    AdamWUpdate(params_ + s.begin, grads_ + s.begin, m_.data() + state, v_.data() + state,
                s.count, hp);
    state += s.count;
  }
  LOOM_RETURN_IF_ERROR(GatherParameters());
  return out;
}

Status DataParallelOptimizer::GatherParameters() {
  const int P = comm_->size(), r = comm_->rank();
  const bool zero = mode_ == DpMode::kZero1 && P > 1;
  for (const nn::Bucket& b : layout_->buckets()) {
    const int64_t shard = b.size() / P;
    const int64_t lo = zero ? b.begin + shard * r : b.begin, n = zero ? shard : b.size();
    if (weights_bf16_ != nullptr) {
      ConvertF32ToBF16(params_ + lo, weights_bf16_ + lo, n);
      if (zero) {
        TensorView bucket(weights_bf16_ + b.begin, DType::kBF16, {b.size()});
        LOOM_RETURN_IF_ERROR(comm_->AllGather(bucket.Slice(shard * r, shard), bucket)
                                 .WithContext("parameter all-gather"));
      }
    } else if (zero) {
      TensorView bucket = TensorView::Of(params_ + b.begin, b.size());
      LOOM_RETURN_IF_ERROR(comm_->AllGather(bucket.Slice(shard * r, shard), bucket)
                               .WithContext("parameter all-gather"));
    }
  }
  return OkStatus();
}

}  // namespace loom::train
