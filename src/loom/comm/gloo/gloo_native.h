// Gloo's own collective algorithms, run on a loom Communicator's Gloo context. They are the
// peers `loom bench collectives` measures loom's algorithms against, on the same connections.
//
//   LOOM_ASSIGN_OR_RETURN(auto peer, GlooNativeCollective::Create(comm, "allreduce_ring", in, out, n));
//   LOOM_RETURN_IF_ERROR(peer->Run());   // repeatable; buffers are registered once
//
// Algorithms (f32 sum): allreduce_ring, allreduce_bcube (Gloo's current API, as used by
// PyTorch's ProcessGroupGloo), allreduce_ring_chunked, allreduce_halving_doubling (Gloo's
// classic algorithms), reduce_scatter_halving_doubling (in: count, out: count / world),
// allgather_ring (in: count / world, out: count).
// Thread-safety: as Communicator.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/comm/communicator.h"

namespace loom::comm {

class GlooNativeCollective {
 public:
  virtual ~GlooNativeCollective() = default;
  static std::vector<std::string_view> Algorithms();
  // kInvalidArgument when `comm` does not run on Gloo or the algorithm is unknown.
  static Result<std::unique_ptr<GlooNativeCollective>> Create(Communicator& comm,
                                                              std::string_view algorithm,
                                                              float* in, float* out,
                                                              size_t count);
  virtual Status Run() = 0;
};

}  // namespace loom::comm
