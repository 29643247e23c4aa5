#include "loom/compress/collectives/summable_allreduce.h"

#include <cstring>
#include <string>

#include "loom/base/clock.h"

namespace loom::compress {
namespace {

DType PayloadType(CodecKind kind) {
  switch (kind) {
    case CodecKind::kFp16:
      return DType::kF16;
    case CodecKind::kBf16:
      return DType::kBF16;
    default:
      return DType::kF32;
  }
}

}  // namespace

Result<std::unique_ptr<SummableAllReduce>> SummableAllReduce::Create(comm::Communicator* comm,
                                                                     const Codec* codec,
                                                                     Options options) {
  if (codec == nullptr || !codec->Summable()) {
    return InvalidArgumentError(
        "summable all-reduce needs a codec whose encodings add element-wise (none, fp16, bf16), "
        "not '" +
        (codec == nullptr ? std::string("null") : codec->spec().ToString()) + "'");
  }
  return std::unique_ptr<SummableAllReduce>(new SummableAllReduce(comm, codec, options));
}

Status SummableAllReduce::AllReduce(float* buf, int64_t n, comm::ReduceOp op,
                                    const CollectiveCall& call) {
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError("summable all-reduce supports sum and avg");
  }
  const DType dtype = PayloadType(codec_->spec().kind);
  const int64_t bytes = codec_->MaxEncodedBytes(n);
  wire_.resize(static_cast<size_t>(bytes));
  Stopwatch sw;
  Status local = codec_->Encode(buf, n, wire_.data(), {.step = call.step, .chunk = call.chunk})
                     .status()
                     .WithContext("summable all-reduce of " + call.what);
  if (!local.ok()) {
    // Poison the sum with NaN bytes (all-ones is NaN in fp32, fp16 and bf16): every rank then
    // sees a non-finite result.
    std::memset(wire_.data() + kHeaderBytes, 0xFF, static_cast<size_t>(bytes - kHeaderBytes));
  }
  stats_.encode_s += sw.Seconds();
  sw.Reset();
  TensorView payload = TensorView::Flat(wire_.data() + kHeaderBytes, dtype, n);
  LOOM_RETURN_IF_ERROR(comm_->AllReduce(payload, comm::ReduceOp::kSum, options_.comm)
                           .WithContext("summable all-reduce of " + call.what));
  stats_.comm_s += sw.Seconds();
  sw.Reset();
  if (local.ok()) local = codec_->Decode(wire_.data(), bytes, n, buf);
  stats_.decode_s += sw.Seconds();
  ++stats_.calls;
  const int P = comm_->size();
  // A ring all-reduce sends 2 (P - 1) / P of the buffer.
  stats_.wire_bytes_sent += 2 * (P - 1) * (bytes - kHeaderBytes) / P;
  stats_.fp32_bytes += 2 * (P - 1) * n * static_cast<int64_t>(sizeof(float)) / P;
  LOOM_RETURN_IF_ERROR(local);
  if (int64_t bad = FirstNonFinite(buf, n); bad >= 0) {
    return FailedPreconditionError("summable all-reduce of " + call.what +
                                   ": non-finite sum at element " + std::to_string(bad) +
                                   " (a rank sent NaN/Inf, or the sum overflowed " +
                                   codec_->spec().ToString() + ")");
  }
  if (op == comm::ReduceOp::kAvg) {
    const float inv = 1.0f / static_cast<float>(P);
    for (int64_t i = 0; i < n; ++i) buf[i] *= inv;
  }
  return OkStatus();
}

}  // namespace loom::compress
