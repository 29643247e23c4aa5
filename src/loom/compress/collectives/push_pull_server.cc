#include "loom/compress/collectives/push_pull_server.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "loom/base/check.h"
#include "loom/base/env_params.h"

namespace loom::compress {
namespace push_pull {
namespace {

constexpr uint32_t kFrameMagic = 0x3150504C;  // "LPP1"
constexpr uint32_t kDataFrame = 0;
constexpr uint32_t kLastCode = 63;  // error frames carry a StatusCode in 1..kLastCode

void WritePrefix(char* frame, uint32_t kind, int origin, int piece) {
  const uint32_t words[4] = {kFrameMagic, kind, static_cast<uint32_t>(origin),
                             static_cast<uint32_t>(piece)};
  std::memcpy(frame, words, sizeof(words));
}

}  // namespace

std::vector<Piece> SplitShard(int64_t count, const Codec& codec, int64_t partition_bytes) {
  const CodecSpec& spec = codec.spec();
  const bool grouped = spec.kind == CodecKind::kInt || spec.kind == CodecKind::kSign;
  const int64_t unit = grouped && spec.group > 0 ? spec.group : 1;
  const int64_t step = partition_bytes > 0 ? std::max(unit, partition_bytes / 4 / unit * unit)
                                           : std::max<int64_t>(count, 1);
  std::vector<Piece> pieces;
  int64_t offset = 0;
  for (int64_t begin = 0; begin < count || pieces.empty(); begin += step) {
    const int64_t n = std::min(step, count - begin);
    pieces.push_back(
        {.begin = begin, .count = n, .wire = codec.MaxEncodedBytes(n), .offset = offset});
    offset += pieces.back().FrameBytes();
  }
  return pieces;
}

int64_t FramesBytes(const std::vector<Piece>& pieces) {
  return pieces.back().offset + pieces.back().FrameBytes();
}

void WriteDataFrame(char* frame, int origin, int piece) {
  WritePrefix(frame, kDataFrame, origin, piece);
}

void WriteErrorFrame(char* frame, const Piece& p, int origin, int piece, const Status& error) {
  const uint32_t code = static_cast<uint32_t>(error.code());
  WritePrefix(frame, code == kDataFrame || code > kLastCode ? uint32_t{2} : code, origin, piece);
  const std::string_view message = error.message();
  char* body = frame + kFrameBytes;
  const size_t room = static_cast<size_t>(p.FrameBytes() - kFrameBytes);
  std::memset(body, 0, room);
  std::memcpy(body, message.data(), std::min(message.size(), room - 1));
}

Status ReadFrame(const char* frame, const Piece& p, int piece, int from) {
  uint32_t words[4];
  std::memcpy(words, frame, sizeof(words));
  if (words[0] != kFrameMagic || words[1] > kLastCode ||
      static_cast<int>(words[3]) != piece) {
    return DataLossError("message from rank " + std::to_string(from) + " is not piece " +
                         std::to_string(piece) +
                         " of this push-pull (did every rank make the same calls?)");
  }
  if (words[1] == kDataFrame) return OkStatus();
  const char* text = frame + kFrameBytes;
  return Status(
      static_cast<StatusCode>(words[1]),
      "rank " + std::to_string(static_cast<int>(words[2])) + " reports: " +
          std::string(text, strnlen(text, static_cast<size_t>(p.FrameBytes() - kFrameBytes))));
}

uint64_t PushSlot(uint32_t tag) {
  return (uint64_t{0xC1} << 56) | (uint64_t{tag & 0xFFFFFFu} << 32) | 1u;
}

uint64_t PullSlot(uint32_t tag) {
  return (uint64_t{0xC1} << 56) | (uint64_t{tag & 0xFFFFFFu} << 32) | 2u;
}

std::chrono::milliseconds ResolveTimeout(std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) return timeout;
  Result<int64_t> env = Env::Process().GetInt("LOOM_COMM_TIMEOUT_MS", 300000);
  return std::chrono::milliseconds(env.ok() && *env > 0 ? *env : 300000);
}

std::chrono::milliseconds WorkerGrace(std::chrono::milliseconds timeout) {
  return std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(5));
}

}  // namespace push_pull

using push_pull::Piece;

PushPullServer::PushPullServer(comm::Transport* transport, const Codec* codec, Options options)
    : transport_(transport),
      codec_(codec),
      options_(options),
      P_(transport->size()),
      r_(transport->rank()),
      thread_({.num_threads = 1, .name = "ps-server"}) {}

PushPullServer::~PushPullServer() { Stop(); }

void PushPullServer::Start() { thread_.Start(); }

void PushPullServer::Stop() { thread_.Stop(); }

void PushPullServer::Submit(Job job) {
  {
    MutexLock lock(&mu_);
    LOOM_CHECK(!busy_);
    busy_ = true;
  }
  thread_.Schedule([this, job = std::move(job)] {
    JobResult result = Run(job);
    MutexLock lock(&mu_);
    result_ = std::move(result);
    busy_ = false;
    cv_.NotifyAll();  // under the lock: the waiter may return and submit again once it sees it
  });
}

PushPullServer::JobResult PushPullServer::Wait() {
  MutexLock lock(&mu_);
  // The job's waits all have its deadline, so it ends; this deadline only re-checks the flag.
  while (!cv_.WaitUntil(&mu_, SteadyClock::now() + std::chrono::seconds(1),
                        [&]() LOOM_REQUIRES(mu_) { return !busy_; })) {
  }
  return std::move(result_);
}

ErrorFeedback* PushPullServer::Residual(int64_t chunk, int64_t count) {
  std::unique_ptr<ErrorFeedback>& ef = server_ef_[chunk];
  if (ef == nullptr || static_cast<int64_t>(ef->residual().size()) != count) {
    ef = std::make_unique<ErrorFeedback>(codec_, count);
  }
  return ef.get();
}

PushPullServer::JobResult PushPullServer::Run(const Job& job) {
  JobResult result;
  const int64_t frames = push_pull::FramesBytes(job.pieces);
  const int C = static_cast<int>(job.pieces.size());
  if (static_cast<int64_t>(push_recv_.size()) < P_ * frames) push_recv_.resize(P_ * frames);
  if (static_cast<int64_t>(pull_send_.size()) < frames) pull_send_.resize(frames);
  if (static_cast<int64_t>(acc_.size()) < job.count) acc_.resize(job.count);
  // Every push's receive first: Gloo's TCP sends wait for the receiver's notice.
  std::vector<std::unique_ptr<comm::PendingOp>> recvs(static_cast<size_t>(C * P_));
  for (int c = 0; c < C; ++c) {
    const Piece& p = job.pieces[c];
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      recvs[c * P_ + j] = transport_->PostRecv(push_recv_.data() + j * frames + p.offset,
                                               p.FrameBytes(), j, push_pull::PushSlot(options_.tag));
    }
  }
  std::vector<std::unique_ptr<comm::PendingOp>> sends;
  for (int c = 0; c < C; ++c) {
    const Piece& p = job.pieces[c];
    char* frame = pull_send_.data() + p.offset;
    Status s = ServePiece(job, c, recvs, frame, &result);
    if (!s.ok()) {
      // Name the piece only when the call was cut.
      if (C > 1) {
        s = s.WithContext("elements [" + std::to_string(p.begin) + ", " +
                          std::to_string(p.begin + p.count) + ") of shard " + std::to_string(r_));
      }
      push_pull::WriteErrorFrame(
          frame, p, r_, c,
          Status(s.code(), "its server failed on " + job.call.what + ": " + s.message()));
      if (result.status.ok()) result.status = s;
    }
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      sends.push_back(
          transport_->PostSend(frame, p.FrameBytes(), j, push_pull::PullSlot(options_.tag)));
      result.stats.wire_bytes_sent += p.FrameBytes();
      result.stats.fp32_bytes += p.count * 4;
    }
  }
  Stopwatch sw;
  for (auto& op : sends) {
    Status s = op->Wait(job.deadline);
    if (!s.ok() && result.status.ok()) result.status = s.WithContext("push-pull server pull");
  }
  result.stats.comm_s += sw.Seconds();
  return result;
}

Status PushPullServer::ServePiece(const Job& job, int c,
                                  std::vector<std::unique_ptr<comm::PendingOp>>& recvs,
                                  char* pull_frame, JobResult* result) {
  const Piece& p = job.pieces[c];
  const int64_t frames = push_pull::FramesBytes(job.pieces);
  float* acc = acc_.data() + p.begin;
  float* own = job.shard + p.begin;
  std::fill(acc, acc + p.count, 0.f);
  // In source-rank order, so the fp32 sum is the same on every run (and, for codec none, the
  // same as the Communicator's direct all-reduce). Every receive is waited for, also after an
  // error: the peers' sends must complete.
  Status s;
  for (int j = 0; j < P_; ++j) {
    if (j == r_) {
      if (!s.ok()) continue;
      if (const int64_t bad = FirstNonFinite(own, p.count); bad >= 0) {
        s = FailedPreconditionError("rank " + std::to_string(r_) + " holds a non-finite value (" +
                                    std::to_string(own[bad]) + ") at element " +
                                    std::to_string(r_ * job.count + p.begin + bad) + " of " +
                                    job.call.what);
        continue;
      }
      for (int64_t i = 0; i < p.count; ++i) acc[i] += own[i];
      continue;
    }
    Stopwatch wait;
    Status got = recvs[c * P_ + j]->Wait(job.deadline);
    result->stats.comm_s += wait.Seconds();
    if (!got.ok()) {
      if (s.ok()) s = got.WithContext("push-pull server receiving a push");
      continue;
    }
    if (!s.ok()) continue;
    const char* frame = push_recv_.data() + j * frames + p.offset;
    s = push_pull::ReadFrame(frame, p, c, j);
    if (!s.ok()) continue;
    Stopwatch decode;
    s = codec_->DecodeAdd(frame + push_pull::kFrameBytes, p.wire, p.count, acc)
            .WithContext("push from rank " + std::to_string(j) + " of " + job.call.what);
    result->stats.decode_s += decode.Seconds();
  }
  LOOM_RETURN_IF_ERROR(s);
  if (job.op == comm::ReduceOp::kAvg) comm::DivideInPlace(DType::kF32, acc, p.count, P_);
  Stopwatch encode;
  const StepContext ctx{.seed = options_.seed,
                        .step = job.call.step,
                        .rank = r_,
                        .chunk = job.call.chunk * (int64_t{1} << 20) + int64_t{c} * P_ + r_};
  char* body = pull_frame + push_pull::kFrameBytes;
  Result<int64_t> bytes =
      options_.server_error_feedback
          ? Residual(job.call.chunk, job.count)->EncodeRange(acc, p.begin, p.count, body, ctx, own)
          : codec_->Encode(acc, p.count, body, ctx);
  if (!bytes.ok()) return bytes.status().WithContext("re-encoding the sum");
  if (*bytes != p.wire) {
    return InternalError("codec '" + codec_->spec().ToString() + "' wrote " +
                         std::to_string(*bytes) + " bytes for a " + std::to_string(p.wire) +
                         "-byte piece");
  }
  if (!options_.server_error_feedback) {
    LOOM_RETURN_IF_ERROR(codec_->Decode(body, p.wire, p.count, own));
  }
  result->stats.encode_s += encode.Seconds();
  push_pull::WriteDataFrame(pull_frame, r_, c);
  return OkStatus();
}

}  // namespace loom::compress
