#include "loom/comm/communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "loom/base/check.h"
#include "loom/base/clock.h"
#include "loom/base/env_params.h"
#include "loom/base/trace_sink.h"

namespace loom::comm {
namespace {

// Slot layout: 0xC0 in the top byte keeps loom's slots apart from Gloo's own algorithms on a
// shared context; then the tag (24 bits), the operation kind (8 bits) and the step (24 bits).
enum class OpKind : uint64_t {
  kP2P = 1,
  kBroadcast,
  kAllReduceDirect,
  kAllReduceRs,
  kAllReduceAg,
  kReduceScatter,
  kAllGather,
  kAllToAll,
  kBarrier,
};

uint64_t Slot(uint32_t tag, OpKind kind, int64_t step) {
  return (uint64_t{0xC0} << 56) | (uint64_t{tag & 0xFFFFFFu} << 32) |
         (static_cast<uint64_t>(kind) << 24) | (static_cast<uint64_t>(step) & 0xFFFFFFu);
}

struct Range {
  int64_t begin = 0;
  int64_t count = 0;
};

// Splits n elements into `parts` nearly equal ranges whose sizes are multiples of `align`
// (except possibly the last).
std::vector<Range> SplitEven(int64_t n, int parts, int64_t align) {
  std::vector<Range> out(parts);
  int64_t units = (n + align - 1) / align;
  int64_t base = units / parts, extra = units % parts, pos = 0;
  for (int i = 0; i < parts; ++i) {
    int64_t c = std::min((base + (i < extra ? 1 : 0)) * align, n - pos);
    out[i] = {pos, std::max<int64_t>(c, 0)};
    pos += out[i].count;
  }
  return out;
}

std::vector<Range> Segments(Range r, int64_t seg_elems) {
  std::vector<Range> out;
  for (int64_t off = 0; off < r.count; off += seg_elems) {
    out.push_back({r.begin + off, std::min(seg_elems, r.count - off)});
  }
  return out;
}

inline int Mod(int64_t x, int p) { return static_cast<int>(((x % p) + p) % p); }

std::chrono::milliseconds DefaultTimeout(std::chrono::milliseconds configured) {
  if (configured.count() > 0) return configured;
  auto env = Env::Process().GetInt("LOOM_COMM_TIMEOUT_MS", 300000);
  int64_t ms = env.ok() && *env > 0 ? *env : 300000;
  return std::chrono::milliseconds(ms);
}

// Tracing (loom/base/trace_sink.h): one record per operation, and per ring step one SEND record
// per posted segment and one RECV record per waited segment, when a trace sink is enabled.
constexpr uint8_t kNoDType = 0xFF;

void RecordCollective(TraceSink* sink, const char* op, int64_t seq, int64_t bytes, uint8_t dtype,
                      int rank, int64_t t0) {
  TraceRecord r;
  r.ts_ns = t0;
  r.dur_ns = NowNanos() - t0;
  r.name = op;
  r.category = TraceCategory::kCollective;
  r.bytes = bytes;
  r.seq = seq;
  r.rank = static_cast<int16_t>(rank);
  r.dtype = dtype;
  sink->Record(r);
}

Status WaitAll(std::vector<std::unique_ptr<PendingOp>>& ops, Deadline deadline) {
  for (auto& op : ops) {
    if (op) LOOM_RETURN_IF_ERROR(op->Wait(deadline));
  }
  ops.clear();
  return OkStatus();
}

}  // namespace

struct Communicator::Call {
  Transport* t;
  Deadline deadline;
  uint32_t tag;
  int64_t segment_bytes;
  bool segment_explicit;  // the caller chose the segment size
  int rank;
  int size;
  std::vector<std::unique_ptr<PendingOp>> sends;
  const char* op = "";        // for trace records
  int64_t seq = -1;           // the communicator's operation sequence number
  uint8_t dtype = kNoDType;   // element type, set by the algorithm (trace records)

  // Elements per pipelined segment when a rank's chunk has `chunk_elems` elements: the
  // configured segment size, but at least ~4 segments per chunk (down to 256 KiB) unless the caller
  // fixed it, so that mid-sized messages are pipelined too.
  int64_t SegElems(DType dtype, int64_t chunk_elems) const {
    int64_t esize = std::max<int64_t>(1, DTypeBits(dtype) / 8);
    int64_t bytes = segment_bytes;
    if (!segment_explicit) {
      bytes = std::min(bytes, std::max<int64_t>(256 << 10, DTypeBytes(dtype, chunk_elems) / 4));
    }
    int64_t e = std::max<int64_t>(2, bytes / esize);
    return e - (e % 2);  // even, so packed I4 segments start on byte boundaries
  }
  std::unique_ptr<PendingOp> Send(const char* p, int64_t bytes, int peer, OpKind k, int64_t step) {
    return t->PostSend(p, static_cast<size_t>(bytes), peer, Slot(tag, k, step));
  }
  std::unique_ptr<PendingOp> Recv(char* p, int64_t bytes, int peer, OpKind k, int64_t step) {
    return t->PostRecv(p, static_cast<size_t>(bytes), peer, Slot(tag, k, step));
  }
  // Send plus a SEND record (ring step, segment) when tracing; the record spans the post.
  std::unique_ptr<PendingOp> TracedSend(const char* p, int64_t bytes, int peer, OpKind k,
                                        int64_t step, int ring_step, int chunk) {
    TraceSink* sink = ActiveTraceSink();
    if (sink == nullptr) return Send(p, bytes, peer, k, step);
    const int64_t t0 = NowNanos();
    auto pending = Send(p, bytes, peer, k, step);
    RecordRingStep(sink, TraceCategory::kSend, t0, peer, bytes, ring_step, chunk);
    return pending;
  }
  // Waits for a received segment; when tracing, a RECV record spans the wait (its end is when
  // the data was there).
  Status TracedWait(PendingOp& pending, int peer, int64_t bytes, int ring_step, int chunk) {
    TraceSink* sink = ActiveTraceSink();
    if (sink == nullptr) return pending.Wait(deadline);
    const int64_t t0 = NowNanos();
    Status s = pending.Wait(deadline);
    if (s.ok()) RecordRingStep(sink, TraceCategory::kRecv, t0, peer, bytes, ring_step, chunk);
    return s;
  }
  void RecordRingStep(TraceSink* sink, TraceCategory cat, int64_t t0, int peer, int64_t bytes,
                      int ring_step, int chunk) {
    const bool send = cat == TraceCategory::kSend;
    TraceRecord r;
    r.ts_ns = t0;
    r.dur_ns = NowNanos() - t0;
    r.name = op;
    r.category = cat;
    r.bytes = bytes;
    r.seq = seq;
    r.rank = static_cast<int16_t>(rank);
    r.peer = static_cast<int16_t>(peer);
    r.ring_step = static_cast<int16_t>(ring_step);
    r.chunk = static_cast<int16_t>(std::min(chunk, 0x7FFF));
    r.dtype = dtype;
    r.flow_id = TraceFlowId(seq, ring_step, r.chunk, send ? rank : peer, send ? peer : rank);
    sink->Record(r);
  }
};

Communicator::Communicator(std::unique_ptr<Transport> transport, CommunicatorOptions options)
    : transport_(std::move(transport)),
      options_(options),
      rank_(transport_->rank()),
      size_(transport_->size()) {
  options_.default_timeout = DefaultTimeout(options_.default_timeout);
  Env env = Env::Process();
  if (auto seg = env.GetInt("LOOM_COMM_SEGMENT_BYTES", 0); seg.ok() && *seg > 0) {
    options_.segment_bytes = *seg;
  }
  if (auto direct = env.GetInt("LOOM_COMM_DIRECT_MAX_BYTES", -1); direct.ok() && *direct >= 0) {
    options_.direct_max_bytes = *direct;
  }
}

Communicator::~Communicator() = default;

char* Communicator::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

template <typename Body>
Status Communicator::Run(const char* op, int64_t bytes, const std::string& what,
                         const CommOptions& opts, Body body) {
  const int64_t seq = next_seq_++;
  TraceSink* sink = ActiveTraceSink();
  const int64_t trace_t0 = sink != nullptr ? NowNanos() : 0;
  uint8_t dtype = kNoDType;
  auto traced_body = [&](Call& c) -> Status {
    c.op = op;
    c.seq = seq;
    Status st = body(c);
    dtype = c.dtype;
    return st;
  };
  Status s;
  if (observer_ == nullptr) {
    s = RunUnobserved(op, what, opts, traced_body);
  } else {
    Stopwatch watch;
    s = RunUnobserved(op, what, opts, traced_body);
    observer_->OnCollective(op, bytes, seq, watch.Seconds(), s.ok());
  }
  if (sink != nullptr) RecordCollective(sink, op, seq, bytes, dtype, rank_, trace_t0);
  return s;
}

template <typename Body>
Status Communicator::RunUnobserved(const char* op, const std::string& what,
                                   const CommOptions& opts, Body body) {
  if (!broken_.ok()) {
    return FailedPreconditionError(std::string(op) + " on rank " + std::to_string(rank_) +
                                   ": communicator is broken by an earlier error: " +
                                   broken_.message());
  }
  if (opts.tag > 0xFFFFFFu) {
    return InvalidArgumentError(std::string(op) + ": tag " + std::to_string(opts.tag) +
                                " does not fit in 24 bits");
  }
  auto timeout = opts.timeout.count() > 0 ? opts.timeout : options_.default_timeout;
  Call call{transport_.get(),
            DeadlineAfter(timeout),
            opts.tag,
            opts.segment_bytes > 0 ? opts.segment_bytes : options_.segment_bytes,
            opts.segment_bytes > 0,
            rank_,
            size_,
            {},
            op,
            -1,
            kNoDType};
  Status s = body(call);
  if (s.ok()) s = WaitAll(call.sends, call.deadline);
  if (!s.ok() && s.code() != StatusCode::kInvalidArgument) {
    s = s.WithContext(std::string(op) + "(" + what + ", tag " + std::to_string(opts.tag) + ")");
    broken_ = s;
  } else if (!s.ok()) {
    s = s.WithContext(op);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Point to point, broadcast, barrier

Status Communicator::Send(const TensorView& data, int dst, const CommOptions& opts) {
  return Run("send", data.nbytes(), data.DebugString() + " to rank " + std::to_string(dst),
             opts,
             [&](Call& c) -> Status {
               LOOM_RETURN_IF_ERROR(CheckContiguous(data, "send buffer"));
               if (dst < 0 || dst >= size_ || dst == rank_) {
                 return InvalidArgumentError("bad destination rank " + std::to_string(dst));
               }
               c.dtype = static_cast<uint8_t>(data.dtype());
               c.sends.push_back(c.Send(static_cast<const char*>(data.data()), data.nbytes(),
                                        dst, OpKind::kP2P, 0));
               return OkStatus();
             });
}

Status Communicator::Recv(const TensorView& data, int src, const CommOptions& opts) {
  return Run("recv", data.nbytes(), data.DebugString() + " from rank " + std::to_string(src),
             opts,
             [&](Call& c) -> Status {
               LOOM_RETURN_IF_ERROR(CheckContiguous(data, "recv buffer"));
               if (src < 0 || src >= size_ || src == rank_) {
                 return InvalidArgumentError("bad source rank " + std::to_string(src));
               }
               c.dtype = static_cast<uint8_t>(data.dtype());
               auto op = c.Recv(static_cast<char*>(data.data()), data.nbytes(), src,
                                OpKind::kP2P, 0);
               return op->Wait(c.deadline);
             });
}

Status Communicator::Broadcast(const TensorView& data, int root, const CommOptions& opts) {
  return Run("broadcast", data.nbytes(),
             data.DebugString() + " from rank " + std::to_string(root), opts,
             [&](Call& c) -> Status {
               LOOM_RETURN_IF_ERROR(CheckContiguous(data, "broadcast buffer"));
               if (root < 0 || root >= size_) {
                 return InvalidArgumentError("bad root rank " + std::to_string(root));
               }
               c.dtype = static_cast<uint8_t>(data.dtype());
               if (size_ == 1) return OkStatus();
               // Pipelined chain root -> root+1 -> ... : segment k is forwarded as soon as it
               // arrives, so large broadcasts cost ~ one transfer time, not (P-1).
               char* buf = static_cast<char*>(data.data());
               int pos = Mod(rank_ - root, size_);
               int prev = Mod(rank_ - 1, size_), next = Mod(rank_ + 1, size_);
               auto segs = Segments({0, data.numel()}, c.SegElems(data.dtype(), data.numel()));
               std::vector<std::unique_ptr<PendingOp>> recvs;
               if (pos > 0) {
                 for (const Range& s : segs) {
                   recvs.push_back(c.Recv(buf + DTypeBytes(data.dtype(), s.begin),
                                          DTypeBytes(data.dtype(), s.count), prev,
                                          OpKind::kBroadcast, 0));
                 }
               }
               for (size_t k = 0; k < segs.size(); ++k) {
                 const int64_t seg_bytes = DTypeBytes(data.dtype(), segs[k].count);
                 const int chunk = static_cast<int>(k);
                 if (pos > 0) {
                   LOOM_RETURN_IF_ERROR(c.TracedWait(*recvs[k], prev, seg_bytes, 0, chunk));
                 }
                 if (pos < size_ - 1) {
                   c.sends.push_back(c.TracedSend(buf + DTypeBytes(data.dtype(), segs[k].begin),
                                                  seg_bytes, next, OpKind::kBroadcast, 0, 0,
                                                  chunk));
                 }
               }
               return OkStatus();
             });
}

Status Communicator::Barrier(const CommOptions& opts) {
  return Run("barrier", 0, "", opts, [&](Call& c) -> Status {
    // Dissemination barrier: ceil(log2 P) rounds of one-byte tokens.
    char out = 1;
    char in = 0;
    int round = 0;
    for (int dist = 1; dist < size_; dist *= 2, ++round) {
      auto s = c.Send(&out, 1, Mod(rank_ + dist, size_), OpKind::kBarrier, round);
      auto r = c.Recv(&in, 1, Mod(rank_ - dist, size_), OpKind::kBarrier, round);
      LOOM_RETURN_IF_ERROR(r->Wait(c.deadline));
      LOOM_RETURN_IF_ERROR(s->Wait(c.deadline));
    }
    return OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// AllReduce

Status Communicator::AllReduce(const TensorView& data, ReduceOp op, const CommOptions& opts) {
  std::string what = data.DebugString() + ", " + std::string(ReduceOpName(op));
  return Run("allreduce", data.nbytes(), what, opts, [&](Call& c) -> Status {
    LOOM_RETURN_IF_ERROR(CheckContiguous(data, "allreduce buffer"));
    if (data.dtype() == DType::kI4 && data.numel() % 2) {
      return InvalidArgumentError("I4 allreduce needs an even element count");
    }
    if (size_ == 1 || data.numel() == 0) {
      if (op == ReduceOp::kAvg) DivideInPlace(data.dtype(), data.data(), data.numel(), 1);
      return OkStatus();
    }
    c.dtype = static_cast<uint8_t>(data.dtype());
    char* buf = static_cast<char*>(data.data());
    bool direct = opts.algorithm == Algorithm::kDirect ||
                  (opts.algorithm == Algorithm::kAuto && data.nbytes() <= options_.direct_max_bytes);
    if (data.numel() < 2 * size_) direct = true;  // too few elements to give every rank a chunk
    return direct ? DirectAllReduce(c, buf, data.dtype(), data.numel(), op)
                  : RingAllReduce(c, buf, data.dtype(), data.numel(), op);
  });
}

Status Communicator::DirectAllReduce(Call& c, char* buf, DType dtype, int64_t n, ReduceOp op) {
  const int64_t bytes = DTypeBytes(dtype, n);
  char* all = Scratch(static_cast<size_t>(bytes) * size_);
  std::memcpy(all + bytes * rank_, buf, bytes);
  std::vector<std::unique_ptr<PendingOp>> recvs(size_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    recvs[p] = c.Recv(all + bytes * p, bytes, p, OpKind::kAllReduceDirect, 0);
  }
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) {
      c.sends.push_back(c.TracedSend(buf, bytes, p, OpKind::kAllReduceDirect, 0, 0, 0));
    }
  }
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) LOOM_RETURN_IF_ERROR(c.TracedWait(*recvs[p], p, bytes, 0, 0));
  }
  // The sends read `buf`; they must finish before it is overwritten with the result.
  LOOM_RETURN_IF_ERROR(WaitAll(c.sends, c.deadline));
  // Reduce in rank order on every rank so that all ranks get bit-identical results.
  std::memcpy(buf, all, bytes);
  for (int p = 1; p < size_; ++p) ReduceInto(dtype, op, buf, buf, all + bytes * p, n);
  if (op == ReduceOp::kAvg) DivideInPlace(dtype, buf, n, size_);
  return OkStatus();
}

Status Communicator::RingAllReduce(Call& c, char* buf, DType dtype, int64_t n, ReduceOp op) {
  const int P = size_, r = rank_;
  const int left = Mod(r - 1, P), right = Mod(r + 1, P);
  const auto chunks = SplitEven(n, P, 2);
  int64_t max_chunk = 0;
  for (const Range& ch : chunks) max_chunk = std::max(max_chunk, ch.count);
  const int64_t seg = c.SegElems(dtype, max_chunk);
  auto B = [&](int64_t elems) { return DTypeBytes(dtype, elems); };
  // One receive area per reduce-scatter step.
  const int64_t tmp_bytes = B(max_chunk);
  char* tmp = Scratch(static_cast<size_t>(tmp_bytes) * (P - 1));

  // Every receive is posted before any send. Gloo's TCP transport is receiver-initiated (a send
  // waits for the peer's "ready to receive" notice), and a notice posted late queues behind this
  // rank's outgoing data in the same connection: on a bandwidth-limited link that serialises the
  // two directions (measured: half the line rate). Receiving all-gather data straight into `buf`
  // early is safe: chunk c's final value can only arrive after this rank's partial sum of c was
  // sent (and read) in the reduce-scatter phase.
  std::vector<std::vector<std::unique_ptr<PendingOp>>> rs(P - 1), ag(P - 1);
  for (int s = 0; s <= P - 2; ++s) {
    const Range ch = chunks[Mod(r - s - 1, P)];
    for (const Range& sg : Segments(ch, seg)) {
      rs[s].push_back(c.Recv(tmp + tmp_bytes * s + B(sg.begin - ch.begin), B(sg.count), left,
                             OpKind::kAllReduceRs, s));
    }
  }
  for (int s = 0; s <= P - 2; ++s) {
    for (const Range& sg : Segments(chunks[Mod(r - s, P)], seg)) {
      ag[s].push_back(c.Recv(buf + B(sg.begin), B(sg.count), left, OpKind::kAllReduceAg, s));
    }
  }
  // Phase 1: reduce-scatter. At step s rank r sends chunk r-s and receives chunk r-s-1.
  // Trace ring steps: reduce-scatter steps 0..P-2, then all-gather steps P-1..2P-3; the chunk
  // is the segment index within the step (equal on sender and receiver).
  {
    int k = 0;
    for (const Range& sg : Segments(chunks[r], seg)) {
      c.sends.push_back(c.TracedSend(buf + B(sg.begin), B(sg.count), right, OpKind::kAllReduceRs,
                                     0, 0, k++));
    }
  }
  for (int s = 0; s <= P - 2; ++s) {
    const Range ch = chunks[Mod(r - s - 1, P)];
    const auto segs = Segments(ch, seg);
    for (size_t k = 0; k < segs.size(); ++k) {
      const int chunk = static_cast<int>(k);
      LOOM_RETURN_IF_ERROR(c.TracedWait(*rs[s][k], left, B(segs[k].count), s, chunk));
      char* dst = buf + B(segs[k].begin);
      ReduceInto(dtype, op, dst, dst, tmp + tmp_bytes * s + B(segs[k].begin - ch.begin),
                 segs[k].count);
      if (s + 1 <= P - 2) {
        c.sends.push_back(
            c.TracedSend(dst, B(segs[k].count), right, OpKind::kAllReduceRs, s + 1, s + 1, chunk));
      } else {
        // This chunk (r+1) is now fully reduced: finish it and start the all-gather at once.
        if (op == ReduceOp::kAvg) DivideInPlace(dtype, dst, segs[k].count, P);
        c.sends.push_back(
            c.TracedSend(dst, B(segs[k].count), right, OpKind::kAllReduceAg, 0, P - 1, chunk));
      }
    }
  }
  // Phase 2: all-gather. At step s rank r receives chunk r-s and forwards it at step s+1.
  for (int s = 0; s <= P - 2; ++s) {
    const auto segs = Segments(chunks[Mod(r - s, P)], seg);
    for (size_t k = 0; k < segs.size(); ++k) {
      const int chunk = static_cast<int>(k);
      LOOM_RETURN_IF_ERROR(c.TracedWait(*ag[s][k], left, B(segs[k].count), P - 1 + s, chunk));
      if (s + 1 <= P - 2) {
        c.sends.push_back(c.TracedSend(buf + B(segs[k].begin), B(segs[k].count), right,
                                       OpKind::kAllReduceAg, s + 1, P + s, chunk));
      }
    }
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// ReduceScatter

Status Communicator::ReduceScatter(const TensorView& in, const TensorView& out, ReduceOp op,
                                   const CommOptions& opts) {
  std::string what = in.DebugString() + " -> " + out.DebugString() + ", " +
                     std::string(ReduceOpName(op));
  return Run("reduce_scatter", in.nbytes(), what, opts, [&](Call& c) -> Status {
    LOOM_RETURN_IF_ERROR(CheckContiguous(in, "reduce_scatter input"));
    LOOM_RETURN_IF_ERROR(CheckContiguous(out, "reduce_scatter output"));
    const int64_t m = out.numel();
    if (in.dtype() != out.dtype()) return InvalidArgumentError("input and output dtypes differ");
    if (in.numel() != m * size_) {
      return InvalidArgumentError("input has " + std::to_string(in.numel()) +
                                  " elements, expected world size " + std::to_string(size_) +
                                  " x output " + std::to_string(m));
    }
    if (in.dtype() == DType::kI4 && m % 2) {
      return InvalidArgumentError("I4 reduce_scatter needs an even block size");
    }
    const char* src = static_cast<const char*>(in.data());
    char* dst = static_cast<char*>(out.data());
    const int64_t block = DTypeBytes(in.dtype(), m);
    if (size_ == 1 || m == 0) {
      if (dst != src) std::memmove(dst, src, block);
      if (op == ReduceOp::kAvg) DivideInPlace(out.dtype(), dst, m, size_);
      return OkStatus();
    }
    const char* own = src + block * rank_;
    if (dst != own && dst < src + block * size_ && dst + block > src) {
      return InvalidArgumentError("output overlaps the input other than at this rank's block");
    }
    return RingReduceScatter(c, src, dst, in.dtype(), m, op);
  });
}

Status Communicator::RingReduceScatter(Call& c, const char* in, char* out, DType dtype, int64_t m,
                                       ReduceOp op) {
  const int P = size_, r = rank_;
  const int left = Mod(r - 1, P), right = Mod(r + 1, P);
  c.dtype = static_cast<uint8_t>(dtype);
  const int64_t seg = c.SegElems(dtype, m);
  const int64_t block = DTypeBytes(dtype, m);
  auto B = [&](int64_t elems) { return DTypeBytes(dtype, elems); };
  // One receive area per step (all posted up front, see RingAllReduce); acc[2] hold this rank's
  // partial sums while they are being sent.
  char* base = Scratch(static_cast<size_t>(block) * (P - 1 + 2));
  char* acc[2] = {base + block * (P - 1), base + block * P};
  const auto segs = Segments({0, m}, seg);

  // Step s: send block r-s-1 (partially reduced), receive block r-s-2; the last step receives
  // block r and writes the result into `out`.
  std::vector<std::vector<std::unique_ptr<PendingOp>>> recvs(P - 1), sends(P);
  for (int s = 0; s <= P - 2; ++s) {
    for (const Range& sg : segs) {
      recvs[s].push_back(
          c.Recv(base + block * s + B(sg.begin), B(sg.count), left, OpKind::kReduceScatter, s));
    }
  }
  const char* first = in + block * Mod(r - 1, P);
  for (size_t k = 0; k < segs.size(); ++k) {
    sends[0].push_back(c.TracedSend(first + B(segs[k].begin), B(segs[k].count), right,
                                    OpKind::kReduceScatter, 0, 0, static_cast<int>(k)));
  }
  for (int s = 0; s <= P - 2; ++s) {
    // acc[s % 2] is rewritten below; the sends that read it two steps ago must be done.
    if (s >= 1) LOOM_RETURN_IF_ERROR(WaitAll(sends[s - 1], c.deadline));
    const char* mine = in + block * Mod(r - s - 2, P);
    const bool last = s == P - 2;
    char* target = last ? out : acc[s % 2];
    for (size_t k = 0; k < segs.size(); ++k) {
      LOOM_RETURN_IF_ERROR(
          c.TracedWait(*recvs[s][k], left, B(segs[k].count), s, static_cast<int>(k)));
      const int64_t off = B(segs[k].begin);
      ReduceInto(dtype, op, target + off, mine + off, base + block * s + off, segs[k].count);
      if (last) {
        if (op == ReduceOp::kAvg) DivideInPlace(dtype, target + off, segs[k].count, P);
      } else {
        sends[s + 1].push_back(c.TracedSend(target + off, B(segs[k].count), right,
                                            OpKind::kReduceScatter, s + 1, s + 1,
                                            static_cast<int>(k)));
      }
    }
  }
  for (auto& s : sends) LOOM_RETURN_IF_ERROR(WaitAll(s, c.deadline));
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// AllGather

Status Communicator::AllGather(const TensorView& in, const TensorView& out,
                               const CommOptions& opts) {
  std::vector<int64_t> counts(size_, in.numel());
  if (out.numel() != in.numel() * size_) {
    return Run("allgather", out.nbytes(), in.DebugString() + " -> " + out.DebugString(), opts,
               [&](Call&) -> Status {
                 return InvalidArgumentError("output has " + std::to_string(out.numel()) +
                                             " elements, expected world size x input " +
                                             std::to_string(in.numel()));
               });
  }
  return AllGatherV(in, out, counts, opts);
}

Status Communicator::AllGatherV(const TensorView& in, const TensorView& out,
                                std::span<const int64_t> counts, const CommOptions& opts) {
  return Run("allgather", out.nbytes(), in.DebugString() + " -> " + out.DebugString(), opts,
             [&](Call& c) -> Status {
               LOOM_RETURN_IF_ERROR(CheckContiguous(in, "allgather input"));
               LOOM_RETURN_IF_ERROR(CheckContiguous(out, "allgather output"));
               if (in.dtype() != out.dtype()) {
                 return InvalidArgumentError("input and output dtypes differ");
               }
               if (static_cast<int>(counts.size()) != size_) {
                 return InvalidArgumentError("counts has " + std::to_string(counts.size()) +
                                             " entries, expected " + std::to_string(size_));
               }
               int64_t total = 0;
               for (int64_t k : counts) {
                 if (k < 0 || (in.dtype() == DType::kI4 && k % 2)) {
                   return InvalidArgumentError("bad count " + std::to_string(k));
                 }
                 total += k;
               }
               if (counts[rank_] != in.numel() || total != out.numel()) {
                 return InvalidArgumentError(
                     "counts do not match the buffers: this rank's count " +
                     std::to_string(counts[rank_]) + " vs input " + std::to_string(in.numel()) +
                     ", total " + std::to_string(total) + " vs output " +
                     std::to_string(out.numel()));
               }
               int64_t my_off = 0;
               for (int i = 0; i < rank_; ++i) my_off += counts[i];
               char* o = static_cast<char*>(out.data());
               char* mine = o + DTypeBytes(in.dtype(), my_off);
               if (mine != in.data()) std::memmove(mine, in.data(), in.nbytes());
               if (size_ == 1) return OkStatus();
               return RingAllGatherV(c, o, in.dtype(), counts);
             });
}

Status Communicator::RingAllGatherV(Call& c, char* out, DType dtype,
                                    std::span<const int64_t> counts) {
  const int P = size_, r = rank_;
  const int left = Mod(r - 1, P), right = Mod(r + 1, P);
  std::vector<Range> blocks(P);
  int64_t pos = 0;
  for (int i = 0; i < P; ++i) {
    blocks[i] = {pos, counts[i]};
    pos += counts[i];
  }
  c.dtype = static_cast<uint8_t>(dtype);
  const int64_t seg = c.SegElems(dtype, pos / P);
  auto B = [&](int64_t elems) { return DTypeBytes(dtype, elems); };
  // Step s: receive block r-s-1 from the left, forward it to the right at step s+1.
  std::vector<std::vector<std::unique_ptr<PendingOp>>> recvs(P - 1);
  for (int s = 0; s <= P - 2; ++s) {
    for (const Range& sg : Segments(blocks[Mod(r - s - 1, P)], seg)) {
      recvs[s].push_back(c.Recv(out + B(sg.begin), B(sg.count), left, OpKind::kAllGather, s));
    }
  }
  {
    int k = 0;
    for (const Range& sg : Segments(blocks[r], seg)) {
      c.sends.push_back(
          c.TracedSend(out + B(sg.begin), B(sg.count), right, OpKind::kAllGather, 0, 0, k++));
    }
  }
  for (int s = 0; s <= P - 2; ++s) {
    const auto segs = Segments(blocks[Mod(r - s - 1, P)], seg);
    for (size_t k = 0; k < segs.size(); ++k) {
      const int chunk = static_cast<int>(k);
      LOOM_RETURN_IF_ERROR(c.TracedWait(*recvs[s][k], left, B(segs[k].count), s, chunk));
      if (s + 1 <= P - 2) {
        c.sends.push_back(c.TracedSend(out + B(segs[k].begin), B(segs[k].count), right,
                                       OpKind::kAllGather, s + 1, s + 1, chunk));
      }
    }
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// AllToAll

Status Communicator::AllToAll(const TensorView& in, const TensorView& out,
                              const CommOptions& opts) {
  if (in.numel() % size_ != 0 || out.numel() != in.numel()) {
    return Run("alltoall", in.nbytes(), in.DebugString() + " -> " + out.DebugString(), opts,
               [&](Call&) -> Status {
                 return InvalidArgumentError(
                     "input and output must have the same size, divisible by world size " +
                     std::to_string(size_));
               });
  }
  std::vector<int64_t> counts(size_, in.numel() / size_);
  return AllToAllV(in, counts, out, counts, opts);
}

Status Communicator::AllToAllV(const TensorView& in, std::span<const int64_t> in_counts,
                               const TensorView& out, std::span<const int64_t> out_counts,
                               const CommOptions& opts) {
  return Run(
      "alltoall", in.nbytes(), in.DebugString() + " -> " + out.DebugString(), opts,
      [&](Call& c) -> Status {
        LOOM_RETURN_IF_ERROR(CheckContiguous(in, "alltoall input"));
        LOOM_RETURN_IF_ERROR(CheckContiguous(out, "alltoall output"));
        if (in.dtype() != out.dtype()) return InvalidArgumentError("input and output dtypes differ");
        if (static_cast<int>(in_counts.size()) != size_ ||
            static_cast<int>(out_counts.size()) != size_) {
          return InvalidArgumentError("counts must have one entry per rank");
        }
        auto sum = [&](std::span<const int64_t> v) {
          return std::accumulate(v.begin(), v.end(), int64_t{0});
        };
        if (sum(in_counts) != in.numel() || sum(out_counts) != out.numel()) {
          return InvalidArgumentError("counts do not add up to the buffer sizes");
        }
        if (in_counts[rank_] != out_counts[rank_]) {
          return InvalidArgumentError("this rank's own block differs between in and out counts");
        }
        const DType t = in.dtype();
        c.dtype = static_cast<uint8_t>(t);
        if (t == DType::kI4) {
          for (int i = 0; i < size_; ++i) {
            if (in_counts[i] % 2 || out_counts[i] % 2) {
              return InvalidArgumentError("I4 alltoall needs even counts");
            }
          }
        }
        const char* src = static_cast<const char*>(in.data());
        char* dst = static_cast<char*>(out.data());
        std::vector<int64_t> in_off(size_), out_off(size_);
        for (int i = 1; i < size_; ++i) {
          in_off[i] = in_off[i - 1] + in_counts[i - 1];
          out_off[i] = out_off[i - 1] + out_counts[i - 1];
        }
        std::vector<std::unique_ptr<PendingOp>> recvs;
        // Pairwise order (r+i / r-i) spreads the load instead of everyone hitting rank 0 first.
        for (int i = 1; i < size_; ++i) {
          int from = Mod(rank_ - i, size_);
          recvs.push_back(c.Recv(dst + DTypeBytes(t, out_off[from]),
                                 DTypeBytes(t, out_counts[from]), from, OpKind::kAllToAll, 0));
        }
        for (int i = 1; i < size_; ++i) {
          int to = Mod(rank_ + i, size_);
          c.sends.push_back(c.Send(src + DTypeBytes(t, in_off[to]), DTypeBytes(t, in_counts[to]),
                                   to, OpKind::kAllToAll, 0));
        }
        std::memmove(dst + DTypeBytes(t, out_off[rank_]), src + DTypeBytes(t, in_off[rank_]),
                     DTypeBytes(t, in_counts[rank_]));
        return WaitAll(recvs, c.deadline);
      });
}

}  // namespace loom::comm
