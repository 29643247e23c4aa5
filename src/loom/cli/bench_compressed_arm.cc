#include "loom/cli/bench_compressed_arm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "loom/base/philox.h"

namespace loom::cli {
namespace {

// The range of the result this rank holds: all of it (all-reduce) or block `rank`.
std::pair<size_t, size_t> ResultPart(BenchOp op, int rank, int world, size_t count) {
  if (op == BenchOp::kReduceScatter) {
    const size_t block = count / static_cast<size_t>(world);
    return {block * static_cast<size_t>(rank), block};
  }
  return {0, count};
}

}  // namespace

std::string_view CodecPartOf(std::string_view spec) {
  for (std::string_view p : {kPushPullPrefix, kTwoLevelPrefix, kRingPrefix, kSummablePrefix}) {
    if (spec.starts_with(p)) return spec.substr(p.size());
  }
  return spec;
}

bool AllReduceOnlySpec(std::string_view spec) {
  return IsPushPullSpec(spec) || spec.starts_with(kRingPrefix) || spec.starts_with(kSummablePrefix);
}

void GaussianInput(uint64_t stream, size_t first, size_t n, float* out) {
  // NextNormal consumes two 32-bit words, so element i starts in 128-bit block i / 2.
  PhiloxStream rng(kBenchInputSeed, stream, first / 2);
  if (first % 2 == 1) (void)rng.NextNormal();
  for (size_t i = 0; i < n; ++i) out[i] = rng.NextNormal();
}

GaussianWorkload::GaussianWorkload(BenchOp op, int rank, int world, size_t count) : input_(count) {
  GaussianInput(static_cast<uint64_t>(rank), 0, count, input_.data());
  const auto [first, n] = ResultPart(op, rank, world, count);
  reference_.assign(n, 0.0);
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> x(std::min(n, kChunk));
  for (int j = 0; j < world; ++j) {
    for (size_t at = 0; at < n; at += kChunk) {
      const size_t len = std::min(kChunk, n - at);
      GaussianInput(static_cast<uint64_t>(j), first + at, len, x.data());
      for (size_t i = 0; i < len; ++i) reference_[at + i] += static_cast<double>(x[i]);
    }
  }
}

void GaussianWorkload::ErrorTerms(const float* out, double* err_sq, double* ref_sq) const {
  double e = 0, r = 0;
  for (size_t i = 0; i < reference_.size(); ++i) {
    const double d = static_cast<double>(out[i]) - reference_[i];
    e += d * d;
    r += reference_[i] * reference_[i];
  }
  *err_sq = e;
  *ref_sq = r;
}

CompressedArm::CompressedArm(comm::Communicator* c, BenchOp op, const std::string& spec,
                             const compress::Codec* codec, const GaussianWorkload* workload,
                             float* in, float* out, size_t count)
    : BenchArm("loom_" + spec),
      c_(c),
      op_(op),
      workload_(workload),
      in_(in),
      out_(out),
      count_(count),
      qc_(c, codec, {.seed = 1, .server_error_feedback = op == BenchOp::kAllReduce, .comm = {}}) {
  if (IsPushPullSpec(spec)) {
    ps_ = std::make_unique<compress::PushPull>(c, codec, compress::PushPull::Options{.seed = 1, .comm = {}});
  } else if (spec.starts_with(kTwoLevelPrefix)) {
    intra_ = std::move(*compress::MakeCodec(*compress::ParseCodecSpec("int8:g128")));
    auto tl = compress::TwoLevelCollectives::Create(
        c, intra_.get(), codec,
        {.node_size = kBenchNodeSize,
         .seed = 1,
         .server_error_feedback = op == BenchOp::kAllReduce,
         .comm = {}});
    if (tl.ok()) {
      tl_ = std::move(*tl);
    } else {
      setup_ = tl.status();
    }
  } else if (spec.starts_with(kRingPrefix)) {
    ring_ = std::make_unique<compress::RequantizingRingAllReduce>(
        c, codec, compress::RequantizingRingAllReduce::Options{.seed = 1, .comm = {}});
  } else if (spec.starts_with(kSummablePrefix)) {
    auto sum = compress::SummableAllReduce::Create(c, codec, {});
    if (sum.ok()) {
      sum_ = std::move(*sum);
    } else {
      setup_ = sum.status();
    }
  }
}

compress::CollectiveStats CompressedArm::stats() const {
  if (ps_) return ps_->stats();
  if (tl_) return tl_->stats();
  if (ring_) return ring_->stats();
  if (sum_) return sum_->stats();
  return qc_.stats();
}

void CompressedArm::Fill() {
  float* dst = op_ == BenchOp::kAllReduce ? out_ : in_;
  std::memcpy(dst, workload_->input().data(), count_ * sizeof(float));
}

Status CompressedArm::Call(comm::ReduceOp op) {
  const compress::CollectiveCall call{.step = step_++, .chunk = 0, .what = "the bench buffer"};
  const int64_t n = static_cast<int64_t>(count_);
  LOOM_RETURN_IF_ERROR(setup_);
  switch (op_) {
    case BenchOp::kAllReduce:
      if (tl_) return tl_->AllReduce(out_, n, op, call);
      if (ring_) return ring_->AllReduce(out_, n, op, call);
      if (sum_) return sum_->AllReduce(out_, n, op, call);
      return ps_ ? ps_->AllReduce(out_, n, op, call) : qc_.AllReduce(out_, n, op, call);
    case BenchOp::kReduceScatter:
      if (tl_) return tl_->ReduceScatter(in_, n / c_->size(), out_, op, call);
      return qc_.ReduceScatter(in_, n / c_->size(), out_, op, call);
    case BenchOp::kAllGather:
      break;
  }
  return InvalidArgumentError("compressed arms run all-reduce and reduce-scatter only");
}

Status CompressedArm::Run() {
  // kAvg keeps repeated in-place all-reduces at the inputs' magnitude (see the header).
  return Call(op_ == BenchOp::kAllReduce ? comm::ReduceOp::kAvg : comm::ReduceOp::kSum);
}

Result<double> CompressedArm::MeasureError() {
  Fill();
  LOOM_RETURN_IF_ERROR(Call(comm::ReduceOp::kSum));
  double terms[2];
  workload_->ErrorTerms(out_, &terms[0], &terms[1]);
  LOOM_RETURN_IF_ERROR(c_->AllReduce(TensorView::Of(terms, 2), comm::ReduceOp::kSum));
  return terms[1] > 0 ? std::sqrt(terms[0] / terms[1]) : 0.0;
}

double CompressedArm::WireBytesPerCall() const {
  return step_ ? static_cast<double>(stats().wire_bytes_sent) / static_cast<double>(step_)
               : 0.0;
}

double CompressedArm::Fp32WireBytesPerCall() const {
  return step_ ? static_cast<double>(stats().fp32_bytes) / static_cast<double>(step_) : 0.0;
}

}  // namespace loom::cli
