// Real peers of `loom bench overlap`: OpenMPI and Gloo versions of AG+GEMM, GEMM+RS and the MoE
// layer, run as two ranks (normally in two network namespaces joined by a `tc tbf`-shaped veth,
// see scripts/bench/overlap_peers.sh). `loom bench overlap-peer` (cmd_bench_overlap_peer.cc)
// drives them; this header is the seam between the op logic (transport-neutral, in
// cmd_bench_overlap_peer.cc) and the two transports:
//
//   PeerComm   - the collectives the ops need (all-gather, reduce-scatter, all-to-allv, a max
//                all-reduce for timings) plus, for the decomposed variants, nonblocking
//                point-to-point requests: MPI's progress only inside Test()/Wait() calls, Gloo's
//                in its TCP device thread (BackgroundProgress(); Gloo has no Test()).
//   MakeMpiPeerComm  (bench_overlap_peer_mpi.cc; stand-in when loom is built without MPI)
//   MakeGlooPeerComm (bench_overlap_peer_gloo.cc, Gloo's own algorithms on loom's connections,
//                     unbound-buffer send/recv for the decomposed variant)
//
// Thread-safety: a PeerComm is used by one thread (the rank's main thread) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::cli {

class PeerComm {
 public:
  virtual ~PeerComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "openmpi 4.1.4" / "gloo": what the JSON reports as the transport.
  virtual std::string name() const = 0;
  // Facts worth recording (MPI thread level, async progress, BTLs...), as "key=value; ..." text.
  virtual std::string notes() const { return ""; }

  // out[p * count .. (p+1) * count) = rank p's `in` (count floats each).
  virtual Status AllGather(const float* in, float* out, size_t count) = 0;
  // in holds size() blocks of `count` floats; out = sum over ranks of block rank().
  virtual Status ReduceScatter(const float* in, float* out, size_t count) = 0;
  // Block p of `in` (send_counts[p] floats, blocks packed in rank order) goes to rank p; block q
  // of `out` (recv_counts[q] floats, packed) comes from rank q.
  virtual Status AllToAllV(const float* in, const std::vector<int64_t>& send_counts, float* out,
                           const std::vector<int64_t>& recv_counts) = 0;
  // Element-wise max over ranks, in place (used once for the timing arrays).
  virtual Status AllReduceMax(double* data, size_t n) = 0;
  virtual Status Barrier() = 0;

  // Nonblocking point-to-point for the decomposed variants. Requests are small integer handles
  // valid until Wait()/a true Test(). kUnimplemented where the transport has none.
  virtual Result<int> Isend(const float* data, size_t count, int peer, int tag) {
    return UnimplementedError(name() + " has no nonblocking send in this benchmark");
  }
  virtual Result<int> Irecv(float* data, size_t count, int peer, int tag) {
    return UnimplementedError(name() + " has no nonblocking receive in this benchmark");
  }
  // Drives progress once; true when `request` has completed (it is then released).
  // kUnimplemented where BackgroundProgress() (a transport that cannot poll a request).
  virtual Result<bool> Test(int request) { return UnimplementedError("Test"); }
  // True when posted transfers progress without Test() calls (Gloo: its TCP device thread moves
  // the bytes); the decomposed variants then skip polling between GEMM panels.
  virtual bool BackgroundProgress() const { return false; }
  virtual Status Wait(int request) { return UnimplementedError("Wait"); }
};

// OpenMPI on MPI_COMM_WORLD; initialises MPI (must run under mpirun). kUnavailable when loom was
// built without MPI or the process was not started by mpirun.
Result<std::unique_ptr<PeerComm>> MakeMpiPeerComm();
// Gloo over loom's launcher world (LOOM_RANK, LOOM_STORE, LOOM_HOST_ADDR...): Gloo's ring
// all-gather, halving-doubling reduce-scatter and alltoallv; Isend/Irecv/Wait on Gloo unbound
// buffers (through loom's GlooTransport), no Test().
Result<std::unique_ptr<PeerComm>> MakeGlooPeerComm();

}  // namespace loom::cli
