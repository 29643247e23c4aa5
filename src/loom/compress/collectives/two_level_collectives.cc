#include "loom/compress/collectives/two_level_collectives.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "loom/base/clock.h"

namespace loom::compress {
namespace {

constexpr int64_t kConfigBytes = 160;
// Top slot bytes of the sub-communicators: loom's own collectives use 0xC0 (communicator.cc).
constexpr uint64_t kIntraSlotSpace = 0xC1;
constexpr uint64_t kRailSlotSpace = 0xC2;
constexpr uint32_t kGatherErrorMagic = 0x4745514C;  // "LQEG": the sender could not encode

// A group of the parent transport's ranks seen as a world of its own; its slots live in their
// own top byte so that its messages never match the parent communicator's.
class GroupTransport final : public comm::Transport {
 public:
  GroupTransport(comm::Transport* parent, std::vector<int> ranks, uint64_t space)
      : parent_(parent), ranks_(std::move(ranks)), space_(space << 56) {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i] == parent_->rank()) rank_ = static_cast<int>(i);
    }
  }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  std::string_view name() const override { return parent_->name(); }
  std::unique_ptr<comm::PendingOp> PostSend(const void* data, size_t bytes, int peer,
                                            uint64_t slot) override {
    return parent_->PostSend(data, bytes, ranks_[peer], Remap(slot));
  }
  std::unique_ptr<comm::PendingOp> PostRecv(void* data, size_t bytes, int peer,
                                            uint64_t slot) override {
    return parent_->PostRecv(data, bytes, ranks_[peer], Remap(slot));
  }

 private:
  uint64_t Remap(uint64_t slot) const { return (slot & ((uint64_t{1} << 56) - 1)) | space_; }

  comm::Transport* parent_;
  std::vector<int> ranks_;
  uint64_t space_;
  int rank_ = 0;
};

std::unique_ptr<comm::Communicator> GroupComm(comm::Communicator* comm, std::vector<int> ranks,
                                              uint64_t space) {
  if (ranks.size() <= 1) return nullptr;
  return std::make_unique<comm::Communicator>(
      std::make_unique<GroupTransport>(comm->transport(), std::move(ranks), space));
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return "{" + s + "}";
}

uint64_t MixSeed(uint64_t seed, uint64_t stage, uint64_t group) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stage * 0x10001 + group + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Status CheckOp(comm::ReduceOp op) {
  if (op != comm::ReduceOp::kSum && op != comm::ReduceOp::kAvg) {
    return InvalidArgumentError(std::string("two-level reductions support sum and avg, not ") +
                                std::string(comm::ReduceOpName(op)));
  }
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<TwoLevelCollectives>> TwoLevelCollectives::Create(comm::Communicator* comm,
                                                                         const Codec* intra,
                                                                         const Codec* inter,
                                                                         Options options) {
  const int P = comm->size();
  if (options.node_size < 1 || P % options.node_size != 0) {
    return InvalidArgumentError("two-level collectives: node_size " +
                                std::to_string(options.node_size) +
                                " does not divide the world size " + std::to_string(P) +
                                " (compress.node_size must divide the number of ranks)");
  }
  if (intra == nullptr || inter == nullptr) {
    return InvalidArgumentError("two-level collectives need an intra and an inter codec");
  }
  return std::unique_ptr<TwoLevelCollectives>(new TwoLevelCollectives(comm, intra, inter, options));
}

TwoLevelCollectives::TwoLevelCollectives(comm::Communicator* comm, const Codec* intra,
                                         const Codec* inter, Options options)
    : comm_(comm), intra_(intra), inter_(inter), options_(options) {
  const int P = comm->size(), L = options_.node_size, r = comm->rank();
  nodes_ = P / L;
  const int node = r / L, local = r % L;
  std::vector<int> node_ranks, rail_ranks;
  for (int l = 0; l < L; ++l) node_ranks.push_back(node * L + l);
  for (int m = 0; m < nodes_; ++m) rail_ranks.push_back(m * L + local);
  intra_comm_ = GroupComm(comm, node_ranks, kIntraSlotSpace);
  rail_comm_ = GroupComm(comm, rail_ranks, kRailSlotSpace);
  auto stage_options = [&](uint64_t stage, uint64_t group) {
    return QuantizedCollectives::Options{.seed = MixSeed(options_.seed, stage, group),
                                         .worker_error_feedback = options_.worker_error_feedback,
                                         .server_error_feedback = false,
                                         .comm = options_.comm,
                                         .pipeline_bytes = options_.pipeline_bytes,
                                         .executor = options_.executor};
  };
  // Seeds differ per group: the stages key rounding by the group rank, which repeats across
  // groups.
  if (intra_comm_) {
    intra_qc_ = std::make_unique<QuantizedCollectives>(intra_comm_.get(), intra_,
                                                       stage_options(1, node));
  }
  if (rail_comm_) {
    rail_qc_ = std::make_unique<QuantizedCollectives>(rail_comm_.get(), inter_,
                                                      stage_options(2, local));
  }
}

TwoLevelCollectives::~TwoLevelCollectives() = default;

Status TwoLevelCollectives::CheckConfigAgrees() {
  if (config_checked_) return OkStatus();
  const int P = comm_->size();
  const std::string mine_text = "intra=" + intra_->spec().ToString() + " inter=" +
                                inter_->spec().ToString() +
                                " node_size=" + std::to_string(options_.node_size);
  std::vector<char> mine(kConfigBytes, 0), all(static_cast<size_t>(P * kConfigBytes));
  std::memcpy(mine.data(), mine_text.data(),
              std::min<size_t>(mine_text.size(), kConfigBytes - 1));
  LOOM_RETURN_IF_ERROR(
      comm_
          ->AllGather(TensorView::Flat(mine.data(), DType::kU8, kConfigBytes),
                      TensorView::Flat(all.data(), DType::kU8, P * kConfigBytes), options_.comm)
          .WithContext("two-level configuration agreement"));
  for (int j = 0; j < P; ++j) {
    const std::string theirs(all.data() + j * kConfigBytes);
    if (theirs != std::string(mine.data())) {
      return FailedPreconditionError("two-level configuration mismatch: rank " +
                                     std::to_string(j) + " uses '" + theirs + "', rank " +
                                     std::to_string(comm_->rank()) + " uses '" + mine.data() +
                                     "' (give every rank the same compress.* settings)");
    }
  }
  config_checked_ = true;
  return OkStatus();
}

Status TwoLevelCollectives::ReduceScatter(const float* in, int64_t count, float* out,
                                          comm::ReduceOp op, const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckOp(op));
  LOOM_RETURN_IF_ERROR(CheckConfigAgrees());
  const int P = comm_->size(), L = options_.node_size, N = nodes_, r = comm_->rank();
  const int node = r / L, local = r % L;
  // Stage 1: block l' of `staged_` is what local rank l' owns after the node's reduce-scatter:
  // the blocks m * L + l' of every node m, in node order (SDP4Bit's swizzle).
  Status intra_status;
  const float* rail_in = in;
  if (intra_qc_ != nullptr) {
    staged_.resize(static_cast<size_t>(P * count));
    for (int l = 0; l < L; ++l) {
      for (int m = 0; m < N; ++m) {
        std::memcpy(staged_.data() + (static_cast<int64_t>(l) * N + m) * count,
                    in + (static_cast<int64_t>(m) * L + l) * count, sizeof(float) * count);
      }
    }
    node_sums_.resize(static_cast<size_t>(N * count));
    intra_status = intra_qc_->ReduceScatter(staged_.data(), N * count, node_sums_.data(),
                                            comm::ReduceOp::kSum, call);
    if (!intra_status.ok()) {
      std::vector<int> ranks;
      for (int l = 0; l < L; ++l) ranks.push_back(node * L + l);
      intra_status = intra_status.WithContext("two-level stage 1 (intra-node, ranks " +
                                              RankList(ranks) + ")");
      // The rail must still run (peers on other nodes wait for it): send poison, which fails
      // every rank of the rail with this rank named.
      if (count > 0) node_sums_[0] = std::numeric_limits<float>::quiet_NaN();
    }
    rail_in = node_sums_.data();
  }
  // Stage 2: along the rail, block m of `rail_in` goes to rank m * L + local.
  Status inter_status;
  if (rail_qc_ != nullptr) {
    inter_status = rail_qc_->ReduceScatter(rail_in, count, out, comm::ReduceOp::kSum, call);
    if (!inter_status.ok()) {
      std::vector<int> ranks;
      for (int m = 0; m < N; ++m) ranks.push_back(m * L + local);
      inter_status = inter_status.WithContext("two-level stage 2 (inter-node, rail ranks " +
                                              RankList(ranks) + ", rail rank m is global m * " +
                                              std::to_string(L) + " + " +
                                              std::to_string(local) + ")");
    }
  } else if (rail_in != out) {
    // One node: the node sum of block `local` is already the result (N == 1).
    std::memmove(out, rail_in + (intra_qc_ != nullptr ? 0 : r * count), sizeof(float) * count);
  }
  LOOM_RETURN_IF_ERROR(intra_status);
  LOOM_RETURN_IF_ERROR(inter_status);
  if (op == comm::ReduceOp::kAvg) {
    const float inv = 1.0f / static_cast<float>(P);
    for (int64_t i = 0; i < count; ++i) out[i] *= inv;
  }
  return OkStatus();
}

Status TwoLevelCollectives::GatherEncoded(const float* in, int64_t count, float* out, bool add,
                                          bool feedback, const CollectiveCall& call,
                                          const Status& prior) {
  const int P = comm_->size(), L = options_.node_size, N = nodes_, r = comm_->rank();
  const int64_t W = inter_->MaxEncodedBytes(count);
  Stopwatch sw;
  gather_send_.assign(static_cast<size_t>(W), 0);
  const StepContext ctx{.seed = MixSeed(options_.seed, 3, 0),
                        .step = call.step,
                        .rank = r,
                        .chunk = call.chunk};
  Result<int64_t> bytes = 0;
  if (!prior.ok()) {
    bytes = prior;
  } else if (feedback) {
    auto& ef = server_ef_[call.chunk];
    if (ef == nullptr || static_cast<int64_t>(ef->residual().size()) != count) {
      ef = std::make_unique<ErrorFeedback>(inter_, count);
    }
    bytes = ef->Encode(in, gather_send_.data(), ctx);
  } else {
    bytes = inter_->Encode(in, count, gather_send_.data(), ctx);
  }
  Status encode_status;
  if (!bytes.ok()) {
    encode_status = prior.ok() ? bytes.status().WithContext("two-level all-gather of " + call.what)
                               : prior;
    std::fill(gather_send_.begin(), gather_send_.end(), 0);
    std::memcpy(gather_send_.data(), &kGatherErrorMagic, 4);
    const std::string msg = encode_status.message();
    std::memcpy(gather_send_.data() + 8, msg.data(),
                static_cast<size_t>(std::min<int64_t>(W - 9, static_cast<int64_t>(msg.size()))));
  }
  gather_stats_.encode_s += sw.Seconds();
  sw.Reset();
  // Along the rail (the slow links carry N - 1 blocks), then inside the node (N blocks each).
  rail_recv_.resize(static_cast<size_t>(N * W));
  if (rail_comm_ != nullptr) {
    LOOM_RETURN_IF_ERROR(
        rail_comm_
            ->AllGather(TensorView::Flat(gather_send_.data(), DType::kU8, W),
                        TensorView::Flat(rail_recv_.data(), DType::kU8, N * W), options_.comm)
            .WithContext("two-level all-gather (inter-node) of " + call.what));
  } else {
    rail_recv_ = gather_send_;
  }
  node_recv_.resize(static_cast<size_t>(P * W));
  if (intra_comm_ != nullptr) {
    LOOM_RETURN_IF_ERROR(
        intra_comm_
            ->AllGather(TensorView::Flat(rail_recv_.data(), DType::kU8, N * W),
                        TensorView::Flat(node_recv_.data(), DType::kU8, P * W), options_.comm)
            .WithContext("two-level all-gather (intra-node) of " + call.what));
  } else {
    node_recv_ = rail_recv_;
  }
  gather_stats_.comm_s += sw.Seconds();
  gather_stats_.wire_bytes_sent += (N - 1) * W + (L - 1) * N * W;
  gather_stats_.fp32_bytes += (P - 1) * count * static_cast<int64_t>(sizeof(float));
  sw.Reset();
  Status decode_status;
  for (int l = 0; l < L && decode_status.ok(); ++l) {
    for (int m = 0; m < N && decode_status.ok(); ++m) {
      const int from = m * L + l;
      const char* block = node_recv_.data() + (static_cast<int64_t>(l) * N + m) * W;
      float* dst = out + static_cast<int64_t>(from) * count;
      uint32_t magic;
      std::memcpy(&magic, block, 4);
      if (magic == kGatherErrorMagic) {
        decode_status = FailedPreconditionError(
            "rank " + std::to_string(from) + " could not encode " + call.what + ": " +
            std::string(block + 8, strnlen(block + 8, static_cast<size_t>(W - 8))));
        break;
      }
      decode_status = add ? inter_->DecodeAdd(block, W, count, dst)
                          : inter_->Decode(block, W, count, dst);
      if (!decode_status.ok()) {
        decode_status = decode_status.WithContext("two-level all-gather of " + call.what +
                                                  ": block from rank " + std::to_string(from));
      }
    }
  }
  gather_stats_.decode_s += sw.Seconds();
  LOOM_RETURN_IF_ERROR(encode_status);
  return decode_status;
}

Status TwoLevelCollectives::AllGather(const float* in, int64_t count, float* out, bool add,
                                      const CollectiveCall& call) {
  LOOM_RETURN_IF_ERROR(CheckConfigAgrees());
  ++gather_stats_.calls;
  // `in` may alias out's own block, which decoding overwrites; the encoding is taken first.
  return GatherEncoded(in, count, out, add, /*feedback=*/false, call, OkStatus());
}

Status TwoLevelCollectives::AllReduce(float* buf, int64_t n, comm::ReduceOp op,
                                      const CollectiveCall& call) {
  const int P = comm_->size(), r = comm_->rank();
  if (n % P != 0) {
    return InvalidArgumentError("two-level all-reduce of " + call.what + ": " + std::to_string(n) +
                                " elements do not split over " + std::to_string(P) +
                                " ranks (pad to " + std::to_string(PaddedCount(n, P, inter_->spec())) +
                                ")");
  }
  const int64_t shard = n / P;
  float* own = buf + r * shard;
  Status rs = ReduceScatter(buf, shard, own, op, call);
  if (!config_checked_) return rs;  // failed before any data moved, on every rank
  // A failure of one rail's stage 2 leaves the other rails fine: the gather carries it to all.
  ++gather_stats_.calls;
  Status gather = GatherEncoded(own, shard, buf, /*add=*/false, options_.server_error_feedback,
                                call, rs);
  LOOM_RETURN_IF_ERROR(rs);
  return gather;
}

CollectiveStats TwoLevelCollectives::stats() const {
  CollectiveStats s = gather_stats_;
  if (intra_qc_ != nullptr) s += intra_qc_->stats();
  if (rail_qc_ != nullptr) s += rail_qc_->stats();
  return s;
}

}  // namespace loom::compress
