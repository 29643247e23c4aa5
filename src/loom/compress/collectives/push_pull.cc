#include "loom/compress/collectives/push_pull.h"

#include <string>

namespace loom::compress {

using push_pull::Piece;

PushPull::PushPull(comm::Communicator* comm, const Codec* codec, Options options)
    : comm_(comm),
      codec_(codec),
      options_(options),
      P_(comm->size()),
      r_(comm->rank()),
      server_(comm->transport(), codec,
              {.seed = options.seed,
               .server_error_feedback = options.server_error_feedback,
               .tag = options.comm.tag}) {
  server_.Start();
}

PushPull::~PushPull() { server_.Stop(); }

ErrorFeedback* PushPull::Residual(int64_t chunk, int shard, int64_t count) {
  std::unique_ptr<ErrorFeedback>& ef = worker_ef_[{chunk, shard}];
  if (ef == nullptr || static_cast<int64_t>(ef->residual().size()) != count) {
    ef = std::make_unique<ErrorFeedback>(codec_, count);
  }
  return ef.get();
}

Status PushPull::EncodePushes(const float* buf, int64_t count, const std::vector<Piece>& pieces,
                              int c, const CollectiveCall& call) {
  const Piece& p = pieces[c];
  const int64_t frames = push_pull::FramesBytes(pieces);
  Status s;
  for (int j = 0; j < P_ && s.ok(); ++j) {
    if (j == r_) continue;
    char* frame = push_send_.data() + j * frames + p.offset;
    // Piece 0 of shard j keeps QuantizedCollectives' stream; every (chunk, piece, shard) has its own.
    const StepContext ctx{.seed = options_.seed,
                          .step = call.step,
                          .rank = r_,
                          .chunk = call.chunk * (int64_t{1} << 20) + int64_t{c} * P_ + j};
    const float* x = buf + j * count + p.begin;
    char* body = frame + push_pull::kFrameBytes;
    Result<int64_t> bytes =
        options_.worker_error_feedback
            ? Residual(call.chunk, j, count)->EncodeRange(x, p.begin, p.count, body, ctx)
            : codec_->Encode(x, p.count, body, ctx);
    if (!bytes.ok()) {
      s = bytes.status().WithContext("shard " + std::to_string(j) + ", element " +
                                     std::to_string(j * count + p.begin) + " onwards");
    } else if (*bytes != p.wire) {
      s = InternalError("codec '" + codec_->spec().ToString() + "' wrote " +
                        std::to_string(*bytes) + " bytes for a " + std::to_string(p.wire) +
                        "-byte piece");
    } else {
      push_pull::WriteDataFrame(frame, r_, c);
    }
  }
  if (s.ok()) return s;
  const Status text =
      FailedPreconditionError("could not encode " + call.what + ": " + std::string(s.message()));
  for (int j = 0; j < P_; ++j) {
    if (j != r_) push_pull::WriteErrorFrame(push_send_.data() + j * frames + p.offset, p, r_, c, text);
  }
  return FailedPreconditionError("rank " + std::to_string(r_) + ": " + std::string(text.message()));
}

Status PushPull::AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call) {
  if (n % P_ != 0) {
    return InvalidArgumentError("push-pull of " + call.what + ": " + std::to_string(n) +
                                " elements do not split over " + std::to_string(P_) +
                                " ranks (pad to " +
                                std::to_string(PaddedCount(n, P_, codec_->spec())) + ")");
  }
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError(std::string("push-pull supports sum and avg, not ") +
                                std::string(comm::ReduceOpName(op)));
  }
  if (!specs_checked_) {
    LOOM_RETURN_IF_ERROR(CheckCodecAgreement(comm_, *codec_, options_.comm));
    specs_checked_ = true;
  }
  const int64_t count = n / P_;
  const std::vector<Piece> pieces =
      push_pull::SplitShard(count, *codec_, options_.partition_bytes);
  const int C = static_cast<int>(pieces.size());
  const int64_t frames = push_pull::FramesBytes(pieces);
  if (static_cast<int64_t>(push_send_.size()) < P_ * frames) push_send_.resize(P_ * frames);
  if (static_cast<int64_t>(pull_recv_.size()) < P_ * frames) pull_recv_.resize(P_ * frames);
  const std::chrono::milliseconds timeout = push_pull::ResolveTimeout(options_.comm.timeout);
  const Deadline server_deadline = DeadlineAfter(timeout);
  const Deadline deadline = server_deadline + push_pull::WorkerGrace(timeout);
  const uint32_t tag = options_.comm.tag;
  server_.Submit({.shard = buf + r_ * count,
                  .count = count,
                  .pieces = pieces,
                  .op = op,
                  .call = call,
                  .deadline = server_deadline});

  // Every pull's receive first (Gloo's TCP sends wait for the receiver's notice), then the
  // pushes, piece by piece, so the servers start on piece 0 while piece 1 is encoded.
  std::vector<std::unique_ptr<comm::PendingOp>> pulls(static_cast<size_t>(C * P_)), pushes;
  for (int c = 0; c < C; ++c) {
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      pulls[c * P_ + j] = comm_->transport()->PostRecv(
          pull_recv_.data() + j * frames + pieces[c].offset, pieces[c].FrameBytes(), j,
          push_pull::PullSlot(tag));
    }
  }
  Status first;  // the first error; every message of the call is still sent and received
  for (int c = 0; c < C; ++c) {
    const Piece& p = pieces[c];
    Stopwatch sw;
    Status s = EncodePushes(buf, count, pieces, c, call);
    stats_.encode_s += sw.Seconds();
    if (first.ok()) first = s;
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      pushes.push_back(comm_->transport()->PostSend(push_send_.data() + j * frames + p.offset,
                                                    p.FrameBytes(), j, push_pull::PushSlot(tag)));
      stats_.wire_bytes_sent += p.FrameBytes();
      stats_.fp32_bytes += p.count * 4;
    }
  }
  for (int c = 0; c < C; ++c) {
    const Piece& p = pieces[c];
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      Stopwatch wait;
      Status s = pulls[c * P_ + j]->Wait(deadline).WithContext("push-pull pull of " + call.what);
      stats_.comm_s += wait.Seconds();
      const char* frame = pull_recv_.data() + j * frames + p.offset;
      if (s.ok()) s = push_pull::ReadFrame(frame, p, c, j);
      if (s.ok() && first.ok()) {
        Stopwatch decode;
        s = codec_->Decode(frame + push_pull::kFrameBytes, p.wire, p.count,
                           buf + j * count + p.begin)
                .WithContext("pull from the server of rank " + std::to_string(j) + " of " +
                             call.what);
        stats_.decode_s += decode.Seconds();
      }
      if (first.ok()) first = s;
    }
  }
  Stopwatch sw;
  for (auto& op_ : pushes) {
    Status s = op_->Wait(deadline).WithContext("push-pull push of " + call.what);
    if (first.ok()) first = s;
  }
  PushPullServer::JobResult served = server_.Wait();  // it writes buf's own shard
  stats_.wait_s += sw.Seconds();
  stats_ += served.stats;
  ++stats_.calls;
  if (first.ok()) first = served.status;
  return first;
}

}  // namespace loom::compress
