#include "loom/compress/collectives/ring_allreduce_ablation.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "loom/base/clock.h"

namespace loom::compress {
namespace {

constexpr uint64_t kRingSlotSpace = 0xC3;      // loom's collectives use 0xC0 (communicator.cc)
constexpr uint32_t kRingErrorMagic = 0x5245514C;  // "LQER": an upstream rank failed

void WriteErrorBlock(std::vector<char>& block, const std::string& message) {
  std::fill(block.begin(), block.end(), 0);
  std::memcpy(block.data(), &kRingErrorMagic, 4);
  std::memcpy(block.data() + 8, message.data(),
              std::min(block.size() - 9, message.size()));
}

bool IsErrorBlock(const std::vector<char>& block) {
  uint32_t magic;
  std::memcpy(&magic, block.data(), 4);
  return magic == kRingErrorMagic;
}

std::string ErrorText(const std::vector<char>& block) {
  return std::string(block.data() + 8, strnlen(block.data() + 8, block.size() - 8));
}

}  // namespace

Status RequantizingRingAllReduce::Exchange(int64_t hop, Deadline deadline) {
  const int P = comm_->size(), r = comm_->rank();
  comm::Transport* t = comm_->transport();
  const uint64_t slot = (kRingSlotSpace << 56) |
                        (uint64_t{options_.comm.tag & 0xFFFFFFu} << 32) |
                        (static_cast<uint64_t>(calls_ * 2 * P + hop) & 0xFFFFFFFFu);
  auto send = t->PostSend(send_.data(), send_.size(), (r + 1) % P, slot);
  auto recv = t->PostRecv(recv_.data(), recv_.size(), (r + P - 1) % P, slot);
  Status rs = recv->Wait(deadline);
  Status ss = send->Wait(deadline);
  LOOM_RETURN_IF_ERROR(rs.WithContext("requantizing ring all-reduce, hop " + std::to_string(hop)));
  return ss.WithContext("requantizing ring all-reduce, hop " + std::to_string(hop));
}

Status RequantizingRingAllReduce::AllReduce(float* buf, int64_t n, comm::ReduceOp op,
                                            const CollectiveCall& call) {
  const int P = comm_->size(), r = comm_->rank();
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError("requantizing ring all-reduce supports sum and avg");
  }
  if (n % P != 0) {
    return InvalidArgumentError("requantizing ring all-reduce of " + call.what + ": " +
                                std::to_string(n) + " elements do not split over " +
                                std::to_string(P) + " ranks");
  }
  if (P == 1) return OkStatus();
  const int64_t count = n / P;
  const int64_t W = codec_->MaxEncodedBytes(count);
  send_.assign(static_cast<size_t>(W), 0);
  recv_.assign(static_cast<size_t>(W), 0);
  const auto timeout = options_.comm.timeout.count() > 0 ? options_.comm.timeout
                                                         : std::chrono::milliseconds(300000);
  const Deadline deadline = DeadlineAfter(timeout);
  Status failed;
  auto fail = [&](Status s) {
    if (failed.ok()) failed = std::move(s);
  };
  // Encodes chunk `chunk` into send_ (an error block once this rank has failed).
  auto encode = [&](int chunk, int64_t hop) {
    Stopwatch sw;
    if (failed.ok()) {
      const StepContext ctx{.seed = options_.seed,
                            .step = call.step,
                            .rank = r,
                            .chunk = call.chunk * 2 * P + hop};
      Result<int64_t> bytes = codec_->Encode(buf + chunk * count, count, send_.data(), ctx);
      if (!bytes.ok()) {
        fail(bytes.status().WithContext("rank " + std::to_string(r) +
                                        " could not encode its partial sum of " + call.what));
      }
    }
    if (!failed.ok()) WriteErrorBlock(send_, failed.message());
    stats_.encode_s += sw.Seconds();
  };
  auto decode = [&](int chunk, bool add) {
    Stopwatch sw;
    if (IsErrorBlock(recv_)) {
      fail(FailedPreconditionError(ErrorText(recv_)));
    } else if (failed.ok()) {
      float* dst = buf + chunk * count;
      Status s = add ? codec_->DecodeAdd(recv_.data(), W, count, dst)
                     : codec_->Decode(recv_.data(), W, count, dst);
      if (!s.ok()) fail(s.WithContext("requantizing ring all-reduce of " + call.what));
    }
    stats_.decode_s += sw.Seconds();
  };
  Stopwatch comm_sw;
  auto exchange = [&](int64_t hop) {
    comm_sw.Reset();
    Status s = Exchange(hop, deadline);
    stats_.comm_s += comm_sw.Seconds();
    return s;
  };
  // Reduce-scatter: every hop decodes, adds and re-encodes (the ablation's point).
  for (int s = 0; s < P - 1; ++s) {
    encode((r - s + P) % P, s);
    LOOM_RETURN_IF_ERROR(exchange(s));
    decode((r - s - 1 + 2 * P) % P, /*add=*/true);
  }
  // All-gather: the owner encodes its reduced chunk once; the bytes are forwarded unchanged.
  const int own = (r + 1) % P;
  if (failed.ok() && op == comm::ReduceOp::kAvg) {
    const float inv = 1.0f / static_cast<float>(P);
    for (int64_t i = 0; i < count; ++i) buf[own * count + i] *= inv;
  }
  encode(own, P - 1);
  if (failed.ok()) {
    recv_ = send_;
    decode(own, /*add=*/false);  // the owner keeps what everybody else decodes
  }
  for (int s = 0; s < P - 1; ++s) {
    LOOM_RETURN_IF_ERROR(exchange(P + s));
    decode((r - s + P) % P, /*add=*/false);
    std::swap(send_, recv_);
    if (!failed.ok()) WriteErrorBlock(send_, failed.message());
  }
  ++calls_;
  ++stats_.calls;
  stats_.wire_bytes_sent += 2 * (P - 1) * W;
  stats_.fp32_bytes += 2 * (P - 1) * count * static_cast<int64_t>(sizeof(float));
  return failed;
}

}  // namespace loom::compress
