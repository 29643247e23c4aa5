#include "loom/compress/collectives/quantized_collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <set>
#include <string>

#include "loom/base/clock.h"
#include "loom/base/mutex.h"

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

Status PeerError(const char* block, int64_t block_bytes, int from, const std::string& what) {
  const char* text = block + 8;
  return FailedPreconditionError("rank " + std::to_string(from) + " could not encode " + what +
                                 ": " + std::string(text, strnlen(text, block_bytes - 8)));
}

Status CheckOp(comm::ReduceOp op) {
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError(std::string("compressed reductions support sum and avg, not ") +
                                std::string(comm::ReduceOpName(op)));
  }
  return OkStatus();
}

// What one task on the helper did.
struct TaskResult {
  Status status;
  double encode_s = 0;
  double decode_s = 0;
};

// Tasks on an executor that the calling thread waits for. The destructor waits for all of them:
// they read and write the caller's buffers.
class TaskGroup {
 public:
  explicit TaskGroup(Executor* executor) : executor_(executor) {}
  ~TaskGroup() { WaitAll(); }
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  int Submit(std::function<void(TaskResult*)> fn) {
    int id;
    TaskResult* result;
    {
      MutexLock lock(&mu_);
      id = static_cast<int>(done_.size());
      done_.push_back(false);
      result = &results_.emplace_back();  // a deque: earlier results stay where they are
    }
    executor_->Schedule([this, id, result, fn = std::move(fn)] {
      fn(result);
      MutexLock lock(&mu_);
      done_[id] = true;
      cv_.NotifyAll();  // under the lock: the waiter may destroy the group once it sees done_
    });
    return id;
  }

  // The task's result, once it has run.
  const TaskResult& Wait(int id) {
    MutexLock lock(&mu_);
    // Tasks are bounded computations, so this ends; the deadline only re-checks the flag.
    while (!cv_.WaitUntil(&mu_, SteadyClock::now() + std::chrono::seconds(1),
                          [&]() LOOM_REQUIRES(mu_) { return bool(done_[id]); })) {
    }
    return results_[id];
  }

  void WaitAll() {
    for (int id = 0; id < size(); ++id) Wait(id);
  }

  int size() {
    MutexLock lock(&mu_);
    return static_cast<int>(done_.size());
  }

 private:
  Executor* executor_;
  Mutex mu_;
  CondVar cv_;
  std::deque<bool> done_ LOOM_GUARDED_BY(mu_);
  std::deque<TaskResult> results_;  // written by task i before done_[i], read after
};

}  // namespace

int64_t PaddedCount(int64_t n, int world, const CodecSpec& spec) {
  const int64_t unit =
      static_cast<int64_t>(world) * (spec.kind == CodecKind::kInt ? spec.group : 1);
  return (n + unit - 1) / unit * unit;
}

// One ReduceScatter (reduce), AllGather (gather) or AllReduce (both) cut into pieces. Tasks are
// submitted only once their inputs are there, and tasks that may run at the same time touch
// disjoint bytes (different pieces), so any executor works; the calling thread alone talks to
// the Communicator.
class QuantizedCollectives::PipelinedCall {
 public:
  struct Job {
    bool reduce = false;        // all-to-all of encoded blocks, the owner sums them into `own`
    bool gather = false;        // all-gather of the own block, everybody decodes into `all`
    const float* in = nullptr;  // reduce: P blocks; gather only: the own block
    float* own = nullptr;       // reduce: the own block's result (count floats)
    float* all = nullptr;       // gather: P blocks
    int64_t count = 0;
    comm::ReduceOp op = comm::ReduceOp::kSum;
    bool add = false;  // gather: decode-add into `all`
  };

  PipelinedCall(QuantizedCollectives* qc, const Job& job, const CollectiveCall& call)
      : qc_(qc),
        job_(job),
        call_(call),
        P_(qc->comm_->size()),
        r_(qc->comm_->rank()),
        pieces_(qc->Pieces(job.count)),
        tasks_(pieces_.size() > 1 ? qc->PipelineExecutor() : &qc->inline_),
        front_(pieces_.size(), -1),
        mid_(pieces_.size(), -1) {
    const Piece& last = pieces_.back();
    const auto at_least = [](std::vector<char>& v, int64_t bytes) {
      if (static_cast<int64_t>(v.size()) < bytes) v.resize(static_cast<size_t>(bytes));
    };
    const int64_t wire = last.offset + last.wire;
    if (job_.reduce) {
      at_least(qc->scatter_send_, P_ * wire);
      at_least(qc->scatter_recv_, P_ * wire);
      worker_ef_.assign(P_, nullptr);
      for (int j = 0; j < P_ && qc->options_.worker_error_feedback; ++j) {
        if (j != r_) worker_ef_[j] = qc->Residual(qc->worker_ef_, call.chunk, j, job.count);
      }
    }
    if (job_.gather) {
      at_least(qc->gather_send_, wire);
      at_least(qc->gather_recv_, P_ * wire);
      if (job_.reduce && qc->options_.server_error_feedback) {
        server_ef_ = qc->Residual(qc->server_ef_, call.chunk, r_, job.count);
      }
    }
  }

  Status Run() {
    Status s = Exchange();
    Stopwatch sw;
    tasks_.WaitAll();  // also after an error: the tasks use this call's buffers
    qc_->stats_.wait_s += sw.Seconds();
    for (int id = 0; id < tasks_.size(); ++id) {
      const TaskResult& t = tasks_.Wait(id);
      qc_->stats_.encode_s += t.encode_s;
      qc_->stats_.decode_s += t.decode_s;
      if (s.ok() && local_error_task_.count(id)) s = t.status;
    }
    return s;
  }

 private:
  // The collectives, in the same order on every rank: for AllReduce all-to-all(c) comes before
  // all-gather(c - 1), so the owner's reduction of piece c - 1 overlaps all-to-all(c).
  Status Exchange() {
    const int C = static_cast<int>(pieces_.size());
    front_[0] = SubmitFront(0);
    for (int c = 0; c < C; ++c) {
      if (c + 1 < C) front_[c + 1] = SubmitFront(c + 1);
      if (job_.reduce) {
        LOOM_RETURN_IF_ERROR(Scatter(c));
        mid_[c] = tasks_.Submit([this, c](TaskResult* t) { Reduce(c, t); });
        if (!job_.gather) local_error_task_.insert(mid_[c]);
      }
      const int g = job_.reduce ? c - 1 : c;
      if (job_.gather && g >= 0) LOOM_RETURN_IF_ERROR(Gather(g));
    }
    if (job_.reduce && job_.gather) LOOM_RETURN_IF_ERROR(Gather(C - 1));
    return OkStatus();
  }

  int SubmitFront(int c) {
    if (job_.reduce) return tasks_.Submit([this, c](TaskResult* t) { EncodeScatter(c, t); });
    return tasks_.Submit([this, c](TaskResult* t) { EncodeOwn(c, t); });
  }

  const TaskResult& Wait(int id) {
    Stopwatch sw;
    const TaskResult& t = tasks_.Wait(id);
    qc_->stats_.wait_s += sw.Seconds();
    return t;
  }

  // All-to-all of piece c. Returns transport errors, and the error every rank agrees on when
  // some rank sent error blocks (a sender writes them to every block, so all receivers see it).
  Status Scatter(int c) {
    const Piece& p = pieces_[c];
    const Status mine = Wait(front_[c]).status;
    const std::string what = "quantized reduce-scatter of " + call_.what;
    Stopwatch sw;
    LOOM_RETURN_IF_ERROR(qc_->comm_
                             ->AllToAll(TensorView::Flat(qc_->scatter_send_.data() + P_ * p.offset,
                                                         DType::kU8, P_ * p.wire),
                                        TensorView::Flat(qc_->scatter_recv_.data() + P_ * p.offset,
                                                         DType::kU8, P_ * p.wire),
                                        qc_->options_.comm)
                             .WithContext(what));
    Count(c, sw.Seconds());
    LOOM_RETURN_IF_ERROR(mine.WithContext(what));
    return PeerErrors(qc_->scatter_recv_.data() + P_ * p.offset, p.wire);
  }

  // All-gather of piece c of the own block, then its decoding on the helper.
  Status Gather(int c) {
    const Piece& p = pieces_[c];
    const Status mine = Wait(job_.reduce ? mid_[c] : front_[c]).status;
    const std::string what = "quantized all-gather of " + call_.what;
    Stopwatch sw;
    LOOM_RETURN_IF_ERROR(
        qc_->comm_
            ->AllGather(
                TensorView::Flat(qc_->gather_send_.data() + p.offset, DType::kU8, p.wire),
                TensorView::Flat(qc_->gather_recv_.data() + P_ * p.offset, DType::kU8, P_ * p.wire),
                qc_->options_.comm)
            .WithContext(what));
    Count(c, sw.Seconds());
    LOOM_RETURN_IF_ERROR(mine.WithContext(what));
    LOOM_RETURN_IF_ERROR(PeerErrors(qc_->gather_recv_.data() + P_ * p.offset, p.wire));
    local_error_task_.insert(tasks_.Submit([this, c](TaskResult* t) { DecodeGathered(c, t); }));
    return OkStatus();
  }

  void Count(int c, double comm_s) {
    CollectiveStats& st = qc_->stats_;
    st.comm_s += comm_s;
    if (c == 0) ++st.calls;
    st.wire_bytes_sent += (P_ - 1) * pieces_[c].wire;
    st.fp32_bytes += (P_ - 1) * pieces_[c].count * 4;
  }

  Status PeerErrors(const char* blocks, int64_t wire) const {
    for (int j = 0; j < P_; ++j) {
      const char* b = blocks + j * wire;
      if (j != r_ && IsErrorBlock(b)) return PeerError(b, wire, j, call_.what);
    }
    return OkStatus();
  }

  // Names the piece in errors when the call was cut.
  Status InPiece(Status s, int c, int block) const {
    if (s.ok() || pieces_.size() == 1) return s;
    const Piece& p = pieces_[c];
    return s.WithContext("elements [" + std::to_string(p.begin) + ", " +
                         std::to_string(p.begin + p.count) + ") of block " + std::to_string(block));
  }

  StepContext Ctx(int c, int block) const {
    // Piece 0 keeps the unpipelined stream; every (chunk, piece, block) has its own.
    return StepContext{.seed = qc_->options_.seed,
                       .step = call_.step,
                       .rank = r_,
                       .chunk = call_.chunk * (int64_t{1} << 20) + int64_t{c} * P_ + block};
  }

  // Encodes x[0, p.count) (plus `ef`'s residual) into `dst`; `decoded`, when non-null, receives
  // what the receivers will decode (it may alias x).
  Status EncodeBlock(const float* x, const Piece& p, char* dst, const StepContext& ctx,
                     ErrorFeedback* ef, float* decoded) const {
    const Codec* codec = qc_->codec_;
    Result<int64_t> bytes = ef != nullptr ? ef->EncodeRange(x, p.begin, p.count, dst, ctx, decoded)
                                          : codec->Encode(x, p.count, dst, ctx);
    if (bytes.ok() && *bytes != p.wire) {
      return InternalError("codec '" + codec->spec().ToString() + "' wrote " +
                           std::to_string(*bytes) + " bytes for a " + std::to_string(p.wire) +
                           "-byte block");
    }
    if (!bytes.ok()) return bytes.status();
    if (decoded != nullptr && ef == nullptr) return codec->Decode(dst, p.wire, p.count, decoded);
    return OkStatus();
  }

  Status DecodeBlock(const char* src, const Piece& p, float* out, bool add, int from) const {
    if (IsErrorBlock(src)) return PeerError(src, p.wire, from, call_.what);
    const Codec* codec = qc_->codec_;
    Status s = add ? codec->DecodeAdd(src, p.wire, p.count, out)
                   : codec->Decode(src, p.wire, p.count, out);
    return s.WithContext("block from rank " + std::to_string(from) + " of " + call_.what);
  }

  // Helper: encodes piece c of every block but the own one; on failure every block of the piece
  // becomes an error block, so every peer learns it, not only the owner of the bad block.
  void EncodeScatter(int c, TaskResult* t) {
    Stopwatch sw;
    const Piece& p = pieces_[c];
    char* base = qc_->scatter_send_.data() + P_ * p.offset;
    Status s;
    for (int j = 0; j < P_ && s.ok(); ++j) {
      if (j == r_) continue;
      s = InPiece(EncodeBlock(job_.in + j * job_.count + p.begin, p, base + j * p.wire, Ctx(c, j),
                              worker_ef_[j], nullptr),
                  c, j);
    }
    if (!s.ok()) {
      for (int j = 0; j < P_; ++j) WriteErrorBlock(base + j * p.wire, p.wire, s.message());
    }
    t->status = s;
    t->encode_s = sw.Seconds();
  }

  // Helper (gather only): encodes piece c of the own block.
  void EncodeOwn(int c, TaskResult* t) {
    Stopwatch sw;
    const Piece& p = pieces_[c];
    char* dst = qc_->gather_send_.data() + p.offset;
    t->status =
        InPiece(EncodeBlock(job_.in + p.begin, p, dst, Ctx(c, r_), nullptr, nullptr), c, r_);
    if (!t->status.ok()) WriteErrorBlock(dst, p.wire, t->status.message());
    t->encode_s = sw.Seconds();
  }

  // Helper: the owner sums piece c (its own values exact), and for AllReduce re-encodes it with
  // server-side error feedback and replaces it by what the peers will decode. A failure there
  // becomes an error block in the all-gather, so every rank fails.
  void Reduce(int c, TaskResult* t) {
    Stopwatch sw;
    const Piece& p = pieces_[c];
    float* dst = job_.own + p.begin;
    const float* mine = job_.in + r_ * job_.count + p.begin;
    if (dst != mine) std::memcpy(dst, mine, static_cast<size_t>(p.count) * 4);
    const char* recv = qc_->scatter_recv_.data() + P_ * p.offset;
    Status s;
    for (int j = 0; j < P_; ++j) {
      if (j == r_) continue;
      Status d = DecodeBlock(recv + j * p.wire, p, dst, /*add=*/true, j);
      if (s.ok()) s = d;
    }
    if (job_.op == comm::ReduceOp::kAvg) {
      const float inv = 1.0f / static_cast<float>(P_);
      for (int64_t i = 0; i < p.count; ++i) dst[i] *= inv;
    }
    t->decode_s = sw.Seconds();
    if (job_.gather) {
      sw.Reset();
      char* send = qc_->gather_send_.data() + p.offset;
      if (s.ok()) s = InPiece(EncodeBlock(dst, p, send, Ctx(c, r_), server_ef_, dst), c, r_);
      if (!s.ok()) WriteErrorBlock(send, p.wire, s.message());
      t->encode_s = sw.Seconds();
    }
    t->status = s;
  }

  // Helper: decodes piece c of every gathered block (AllReduce: but the own one, already done).
  void DecodeGathered(int c, TaskResult* t) {
    Stopwatch sw;
    const Piece& p = pieces_[c];
    const char* recv = qc_->gather_recv_.data() + P_ * p.offset;
    Status s;
    for (int j = 0; j < P_; ++j) {
      if (job_.reduce && j == r_) continue;
      Status d =
          DecodeBlock(recv + j * p.wire, p, job_.all + j * job_.count + p.begin, job_.add, j);
      if (s.ok()) s = d;
    }
    t->status = s;
    t->decode_s = sw.Seconds();
  }

  QuantizedCollectives* qc_;
  const Job job_;
  const CollectiveCall& call_;
  const int P_, r_;
  const std::vector<Piece> pieces_;
  std::vector<ErrorFeedback*> worker_ef_;  // per destination block; null without feedback
  ErrorFeedback* server_ef_ = nullptr;
  TaskGroup tasks_;
  std::vector<int> front_, mid_;    // task ids per piece: encoding, and the owner's reduction
  std::set<int> local_error_task_;  // tasks whose errors only this rank sees
};

QuantizedCollectives::QuantizedCollectives(comm::Communicator* comm, const Codec* codec,
                                           Options options)
    : comm_(comm), codec_(codec), options_(options) {}

QuantizedCollectives::~QuantizedCollectives() = default;

Status CheckCodecAgreement(comm::Communicator* comm, const Codec& codec,
                           const comm::CommOptions& opts) {
  const int P = comm->size();
  std::vector<char> mine(kSpecBytes, 0), all(static_cast<size_t>(P * kSpecBytes));
  const std::string spec = codec.spec().ToString();
  std::memcpy(mine.data(), spec.data(), std::min<size_t>(spec.size(), kSpecBytes - 1));
  LOOM_RETURN_IF_ERROR(comm
                           ->AllGather(TensorView::Flat(mine.data(), DType::kU8, kSpecBytes),
                                       TensorView::Flat(all.data(), DType::kU8, P * kSpecBytes),
                                       opts)
                           .WithContext("codec agreement"));
  for (int j = 0; j < P; ++j) {
    const std::string theirs(all.data() + j * kSpecBytes);
    if (theirs != spec) {
      return FailedPreconditionError("codec mismatch: rank " + std::to_string(j) + " uses '" +
                                     theirs + "', rank " + std::to_string(comm->rank()) +
                                     " uses '" + spec +
                                     "' (give every rank the same compress.* settings)");
    }
  }
  return OkStatus();
}

Status QuantizedCollectives::CheckSpecsAgree() {
  if (specs_checked_) return OkStatus();
  LOOM_RETURN_IF_ERROR(CheckCodecAgreement(comm_, *codec_, options_.comm));
  specs_checked_ = true;
  return OkStatus();
}

std::vector<QuantizedCollectives::Piece> QuantizedCollectives::Pieces(int64_t count) const {
  const CodecSpec& spec = codec_->spec();
  const bool grouped = (spec.kind == CodecKind::kInt || spec.kind == CodecKind::kSign);
  const int64_t unit = grouped && spec.group > 0 ? spec.group : 1;
  const int64_t per_piece = std::max(unit, options_.pipeline_bytes / 4 / unit * unit);
  const int64_t step = options_.pipeline_bytes > 0 ? per_piece : std::max<int64_t>(count, 1);
  std::vector<Piece> pieces;
  int64_t offset = 0;
  for (int64_t begin = 0; begin < count || pieces.empty(); begin += step) {
    const int64_t n = std::min(step, count - begin);
    pieces.push_back(
        {.begin = begin, .count = n, .wire = codec_->MaxEncodedBytes(n), .offset = offset});
    offset += pieces.back().wire;
  }
  return pieces;
}

Executor* QuantizedCollectives::PipelineExecutor() {
  if (options_.executor != nullptr) return options_.executor;
  if (pool_ == nullptr) {
    pool_ = std::make_unique<ThreadPool>(ThreadPool::Options{.num_threads = 1, .name = "qc-pipe"});
    pool_->Start();
  }
  return pool_.get();
}

ErrorFeedback* QuantizedCollectives::Residual(ResidualTable& table, int64_t chunk, int block,
                                              int64_t count) {
  std::unique_ptr<ErrorFeedback>& ef = table[{chunk, block}];
  if (ef == nullptr || static_cast<int64_t>(ef->residual().size()) != count) {
    ef = std::make_unique<ErrorFeedback>(codec_, count);
  }
  return ef.get();
}

Status QuantizedCollectives::ReduceScatter(const float* in, int64_t count, float* out,
                                           comm::ReduceOp op, const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckOp(op));
  LOOM_RETURN_IF_ERROR(CheckSpecsAgree());
  return PipelinedCall(this, {.reduce = true, .in = in, .own = out, .count = count, .op = op}, call)
      .Run();
}

Status QuantizedCollectives::AllGather(const float* in, int64_t count, float* out, bool add,
                                       const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckSpecsAgree());
  return PipelinedCall(this, {.gather = true, .in = in, .all = out, .count = count, .add = add},
                       call)
      .Run();
}

Status QuantizedCollectives::AllReduce(float* buf, int64_t n, comm::ReduceOp op,
                                       const CollectiveCall& call) {
  const int P = comm_->size(), r = comm_->rank();
  if (n % P != 0) {
    return InvalidArgumentError("compressed all-reduce of " + call.what + ": " + std::to_string(n) +
                                " elements do not split over " + std::to_string(P) +
                                " ranks (pad to " +
                                std::to_string(PaddedCount(n, P, codec_->spec())) + ")");
  }
  LOOM_RETURN_IF_ERROR(CheckOp(op));
  LOOM_RETURN_IF_ERROR(CheckSpecsAgree());
  const int64_t shard = n / P;
  return PipelinedCall(this,
                       {.reduce = true,
                        .gather = true,
                        .in = buf,
                        .own = buf + r * shard,
                        .all = buf,
                        .count = shard,
                        .op = op},
                       call)
      .Run();
}

}  // namespace loom::compress
