// Gloo transport of `loom bench overlap-peer`: Gloo's own algorithms (ring all-gather,
// halving-doubling reduce-scatter, alltoallv) on the Gloo context of loom's TCP communicator,
// connected through loom's launcher world (LOOM_RANK, LOOM_STORE, LOOM_HOST_ADDR, ...).
// The decomposed variant's Isend/Irecv are Gloo unbound-buffer send/recv (loom's GlooTransport
// PostSend/PostRecv) on slots of their own; Gloo's TCP device thread moves the bytes while the
// rank computes, so nothing needs polling. Gloo has no nonblocking test: a timed wait that
// expires poisons the whole context ("Application timeout caused pair closure"), so Test() is
// kUnimplemented and Wait() is the only completion check.
#include <gloo/alltoallv.h>
#include <gloo/common/error.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "loom/base/clock.h"
#include "loom/base/tensor_view.h"
#include "loom/cli/bench_overlap_peer.h"
#include "loom/cli/rank_setup.h"
#include "loom/comm/gloo/gloo_native.h"
#include "loom/comm/gloo/gloo_transport_internal.h"
#include "loom/comm/transport.h"

namespace loom::cli {
namespace {

class GlooPeerComm final : public PeerComm {
 public:
  explicit GlooPeerComm(RankContext ctx) : ctx_(std::move(ctx)) {}
  int rank() const override { return ctx_.comm->rank(); }
  int size() const override { return ctx_.comm->size(); }
  std::string name() const override { return "gloo"; }
  std::string notes() const override {
    return "gloo algorithms: allgather_ring, reduce_scatter_halving_doubling, alltoallv; "
           "loom TCP connections";
  }

  Status AllGather(const float* in, float* out, size_t count) override {
    const size_t total = count * static_cast<size_t>(size());
    LOOM_ASSIGN_OR_RETURN(auto* algo, Cached("allgather_ring", in, out, total));
    return algo->Run();
  }
  Status ReduceScatter(const float* in, float* out, size_t count) override {
    const size_t total = count * static_cast<size_t>(size());
    LOOM_ASSIGN_OR_RETURN(auto* algo, Cached("reduce_scatter_halving_doubling", in, out, total));
    return algo->Run();
  }
  Status AllToAllV(const float* in, const std::vector<int64_t>& send_counts, float* out,
                   const std::vector<int64_t>& recv_counts) override {
    auto* gt = dynamic_cast<comm::internal::GlooTransport*>(ctx_.comm->transport());
    if (gt == nullptr) return InvalidArgumentError("gloo peer needs the gloo backend");
    try {
      gloo::AlltoallvOptions opts(gt->context());
      opts.setInput(const_cast<float*>(in), send_counts);
      opts.setOutput(out, recv_counts);
      opts.setTag(31);
      gloo::alltoallv(opts);
    } catch (const std::exception& e) {
      return UnavailableError(std::string("gloo alltoallv failed: ") + e.what());
    }
    return OkStatus();
  }
  Status AllReduceMax(double* data, size_t n) override {
    return ctx_.comm->AllReduce(TensorView::Of(data, static_cast<int64_t>(n)),
                                comm::ReduceOp::kMax);
  }
  Status Barrier() override { return ctx_.comm->Barrier(); }

  Result<int> Isend(const float* data, size_t count, int peer, int tag) override {
    return Keep(ctx_.comm->transport()->PostSend(data, count * sizeof(float), peer, Slot(tag)));
  }
  Result<int> Irecv(float* data, size_t count, int peer, int tag) override {
    return Keep(ctx_.comm->transport()->PostRecv(data, count * sizeof(float), peer, Slot(tag)));
  }
  Result<bool> Test(int) override {
    return UnimplementedError(
        "gloo has no nonblocking test (a timed wait that expires closes every pair); use Wait");
  }
  Status Wait(int request) override {
    auto it = pending_.find(request);
    if (it == pending_.end()) return InvalidArgumentError("unknown gloo request handle");
    Status s = it->second->Wait(DeadlineAfter(kWaitTimeout));
    pending_.erase(it);
    return s;
  }
  bool BackgroundProgress() const override { return true; }

 private:
  // Point-to-point slots of this benchmark: top byte 0xB7 keeps them apart from loom's
  // communicator (0xC0) and from Gloo's own algorithms (small slot numbers).
  static uint64_t Slot(int tag) { return (uint64_t{0xB7} << 56) | static_cast<uint32_t>(tag); }
  static constexpr std::chrono::milliseconds kWaitTimeout{300000};

  int Keep(std::unique_ptr<comm::PendingOp> op) {
    pending_.emplace(next_handle_, std::move(op));
    return next_handle_++;
  }

  // Gloo's classic algorithms register their buffers once; keep one per (algorithm, buffers).
  Result<comm::GlooNativeCollective*> Cached(const char* algorithm, const float* in, float* out,
                                             size_t total) {
    auto key = std::make_tuple(std::string(algorithm), in, out, total);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      LOOM_ASSIGN_OR_RETURN(auto algo,
                            comm::GlooNativeCollective::Create(*ctx_.comm, algorithm,
                                                               const_cast<float*>(in), out, total));
      it = cache_.emplace(key, std::move(algo)).first;
    }
    return it->second.get();
  }

  RankContext ctx_;
  int next_handle_ = 0;                                      // handles are never reused
  std::map<int, std::unique_ptr<comm::PendingOp>> pending_;  // posted, not yet waited for
  std::map<std::tuple<std::string, const float*, float*, size_t>,
           std::unique_ptr<comm::GlooNativeCollective>>
      cache_;
};

}  // namespace

Result<std::unique_ptr<PeerComm>> MakeGlooPeerComm() {
  if (!UnderLauncher()) {
    return UnavailableError(
        "the gloo impl needs a launcher world (LOOM_RANK/LOOM_WORLD_SIZE/LOOM_STORE); run it with "
        "scripts/bench/overlap_peers.sh or `loom launch`");
  }
  LOOM_ASSIGN_OR_RETURN(RankContext ctx, ConnectRank("bench-overlap-peer"));
  if (ctx.comm->backend() != "gloo") {
    return UnavailableError("the gloo impl needs at least 2 ranks (got a " +
                            std::string(ctx.comm->backend()) + " communicator)");
  }
  return std::unique_ptr<PeerComm>(std::make_unique<GlooPeerComm>(std::move(ctx)));
}

}  // namespace loom::cli
