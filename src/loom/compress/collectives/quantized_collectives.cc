#include "loom/compress/collectives/quantized_collectives.h"

#include <algorithm>
#include <cstring>

#include "loom/base/clock.h"

namespace loom::compress {
namespace {

constexpr uint32_t kErrorMagic = 0x4543514C;  // "LQCE": the sender could not encode its data
constexpr int64_t kSpecBytes = 64;

// An error block: magic, then the sender's message (NUL-terminated, truncated to the block).
void WriteErrorBlock(char* dst, int64_t block_bytes, const std::string& message) {
  std::memset(dst, 0, static_cast<size_t>(block_bytes));
  std::memcpy(dst, &kErrorMagic, 4);
  const int64_t room = block_bytes - 8 - 1;
  std::memcpy(dst + 8, message.data(),
              static_cast<size_t>(std::min<int64_t>(room, static_cast<int64_t>(message.size()))));
}

bool IsErrorBlock(const char* src) {
  uint32_t magic;
  std::memcpy(&magic, src, 4);
  return magic == kErrorMagic;
}

Status CheckOp(comm::ReduceOp op) {
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError(std::string("compressed reductions support sum and avg, not ") +
                                std::string(comm::ReduceOpName(op)));
  }
  return OkStatus();
}

}  // namespace

int64_t PaddedCount(int64_t n, int world, const CodecSpec& spec) {
  const int64_t unit = static_cast<int64_t>(world) * (spec.kind == CodecKind::kInt ? spec.group : 1);
  return (n + unit - 1) / unit * unit;
}

QuantizedCollectives::QuantizedCollectives(comm::Communicator* comm, const Codec* codec,
                                           Options options)
    : comm_(comm), codec_(codec), options_(options) {}

QuantizedCollectives::~QuantizedCollectives() = default;

Status QuantizedCollectives::CheckSpecsAgree() {
  if (specs_checked_) return OkStatus();
  const int P = comm_->size();
  std::vector<char> mine(kSpecBytes, 0), all(static_cast<size_t>(P * kSpecBytes));
  const std::string spec = codec_->spec().ToString();
  std::memcpy(mine.data(), spec.data(), std::min<size_t>(spec.size(), kSpecBytes - 1));
  LOOM_RETURN_IF_ERROR(comm_->AllGather(TensorView::Flat(mine.data(), DType::kU8, kSpecBytes),
                                        TensorView::Flat(all.data(), DType::kU8, P * kSpecBytes),
                                        options_.comm)
                           .WithContext("codec agreement"));
  for (int j = 0; j < P; ++j) {
    const std::string theirs(all.data() + j * kSpecBytes);
    if (theirs != spec) {
      return FailedPreconditionError("codec mismatch: rank " + std::to_string(j) + " uses '" +
                                     theirs + "', rank " + std::to_string(comm_->rank()) +
                                     " uses '" + spec + "' (give every rank the same compress.* settings)");
    }
  }
  specs_checked_ = true;
  return OkStatus();
}

StepContext QuantizedCollectives::Ctx(const CollectiveCall& call, int64_t block) const {
  return StepContext{.seed = options_.seed,
                     .step = call.step,
                     .rank = comm_->rank(),
                     .chunk = call.chunk * (int64_t{1} << 20) + block};
}

ErrorFeedback* QuantizedCollectives::Residual(ResidualTable& table, int64_t chunk, int block,
                                              int64_t count) {
  std::unique_ptr<ErrorFeedback>& ef = table[{chunk, block}];
  if (ef == nullptr || static_cast<int64_t>(ef->residual().size()) != count) {
    ef = std::make_unique<ErrorFeedback>(codec_, count);
  }
  return ef.get();
}

Status QuantizedCollectives::EncodeBlock(const float* src, int64_t count, char* dst,
                                         int64_t block_bytes, const StepContext& ctx,
                                         ErrorFeedback* ef) {
  Result<int64_t> bytes =
      ef != nullptr ? ef->Encode(src, dst, ctx) : codec_->Encode(src, count, dst, ctx);
  if (bytes.ok() && *bytes != block_bytes) {
    bytes = InternalError("codec '" + codec_->spec().ToString() + "' wrote " +
                          std::to_string(*bytes) + " bytes for a " + std::to_string(block_bytes) +
                          "-byte block");
  }
  if (!bytes.ok()) {
    WriteErrorBlock(dst, block_bytes, bytes.status().message());
    return bytes.status();
  }
  return OkStatus();
}

Status QuantizedCollectives::DecodeBlock(const char* src, int64_t block_bytes, int64_t count,
                                         float* out, bool add, int from,
                                         const CollectiveCall& call) {
  if (IsErrorBlock(src)) {
    return FailedPreconditionError("rank " + std::to_string(from) + " could not encode " +
                                   call.what + ": " + std::string(src + 8));
  }
  Status s = add ? codec_->DecodeAdd(src, block_bytes, count, out)
                 : codec_->Decode(src, block_bytes, count, out);
  return s.WithContext("block from rank " + std::to_string(from) + " of " + call.what);
}

Status QuantizedCollectives::ReduceScatter(const float* in, int64_t count, float* out,
                                           comm::ReduceOp op, const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckOp(op));
  LOOM_RETURN_IF_ERROR(CheckSpecsAgree());
  const int P = comm_->size(), r = comm_->rank();
  const int64_t W = codec_->MaxEncodedBytes(count);
  send_.assign(static_cast<size_t>(P * W), 0);
  recv_.resize(static_cast<size_t>(P * W));
  Stopwatch sw;
  Status encoded;
  for (int j = 0; j < P && encoded.ok(); ++j) {
    if (j == r) continue;
    ErrorFeedback* ef =
        options_.worker_error_feedback ? Residual(worker_ef_, call.chunk, j, count) : nullptr;
    encoded = EncodeBlock(in + j * count, count, send_.data() + j * W, W, Ctx(call, j), ef);
  }
  if (!encoded.ok()) {  // every peer must learn it, not only the owner of the bad block
    for (int j = 0; j < P; ++j) WriteErrorBlock(send_.data() + j * W, W, encoded.message());
  }
  stats_.encode_s += sw.Seconds();
  sw.Reset();
  LOOM_RETURN_IF_ERROR(
      comm_->AllToAll(TensorView::Flat(send_.data(), DType::kU8, P * W),
                      TensorView::Flat(recv_.data(), DType::kU8, P * W), options_.comm)
          .WithContext("quantized reduce-scatter of " + call.what));
  stats_.comm_s += sw.Seconds();
  ++stats_.calls;
  stats_.wire_bytes_sent += (P - 1) * W;
  stats_.fp32_bytes += (P - 1) * count * 4;
  LOOM_RETURN_IF_ERROR(encoded.WithContext("quantized reduce-scatter of " + call.what));
  sw.Reset();
  if (out != in + r * count) std::memcpy(out, in + r * count, static_cast<size_t>(count) * 4);
  Status decoded;
  for (int j = 0; j < P; ++j) {
    if (j == r) continue;
    Status s = DecodeBlock(recv_.data() + j * W, W, count, out, /*add=*/true, j, call);
    if (decoded.ok()) decoded = s;
  }
  if (op == comm::ReduceOp::kAvg) {
    const float inv = 1.0f / static_cast<float>(P);
    for (int64_t i = 0; i < count; ++i) out[i] *= inv;
  }
  stats_.decode_s += sw.Seconds();
  return decoded;
}

Status QuantizedCollectives::AllGather(const float* in, int64_t count, float* out, bool add,
                                       const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckSpecsAgree());
  return AllGatherImpl(in, count, out, add, call, nullptr);
}

Status QuantizedCollectives::AllGatherImpl(const float* in, int64_t count, float* out, bool add,
                                           const CollectiveCall& call, ErrorFeedback* ef) {
  const int P = comm_->size(), r = comm_->rank();
  const int64_t W = codec_->MaxEncodedBytes(count);
  send_.assign(static_cast<size_t>(W), 0);
  recv_.resize(static_cast<size_t>(P * W));
  Stopwatch sw;
  Status encoded = EncodeBlock(in, count, send_.data(), W, Ctx(call, r), ef);
  stats_.encode_s += sw.Seconds();
  sw.Reset();
  LOOM_RETURN_IF_ERROR(
      comm_->AllGather(TensorView::Flat(send_.data(), DType::kU8, W),
                       TensorView::Flat(recv_.data(), DType::kU8, P * W), options_.comm)
          .WithContext("quantized all-gather of " + call.what));
  stats_.comm_s += sw.Seconds();
  ++stats_.calls;
  stats_.wire_bytes_sent += (P - 1) * W;
  stats_.fp32_bytes += (P - 1) * count * 4;
  LOOM_RETURN_IF_ERROR(encoded.WithContext("quantized all-gather of " + call.what));
  sw.Reset();
  Status decoded;
  for (int j = 0; j < P; ++j) {  // own block too: every rank ends with the same values
    Status s = DecodeBlock(recv_.data() + j * W, W, count, out + j * count, add, j, call);
    if (decoded.ok()) decoded = s;
  }
  stats_.decode_s += sw.Seconds();
  return decoded;
}

Status QuantizedCollectives::AllReduce(float* buf, int64_t n, comm::ReduceOp op,
                                       const CollectiveCall& call) {
  const int P = comm_->size(), r = comm_->rank();
  if (n % P != 0) {
    return InvalidArgumentError("compressed all-reduce of " + call.what + ": " +
                                std::to_string(n) + " elements do not split over " +
                                std::to_string(P) + " ranks (pad to " +
                                std::to_string(PaddedCount(n, P, codec_->spec())) + ")");
  }
  const int64_t shard = n / P;
  LOOM_RETURN_IF_ERROR(ReduceScatter(buf, shard, buf + r * shard, op, call));
  ErrorFeedback* ef =
      options_.server_error_feedback ? Residual(server_ef_, call.chunk, r, shard) : nullptr;
  return AllGatherImpl(buf + r * shard, shard, buf, /*add=*/false, call, ef);
}

}  // namespace loom::compress
