#include "loom/trace/tracer/clock_sync.h"

#include <limits>
#include <string>

namespace loom::trace {
namespace {

// Outside the communicator's slots (top byte 0xC0) and Gloo's own (small integers).
constexpr uint64_t kClockSlot = uint64_t{0xCF} << 56 | 0xC10C;

Status WaitOp(comm::PendingOp& op, Deadline deadline, const std::string& what) {
  return op.Wait(deadline).WithContext(what);
}

}  // namespace

Result<ClockOffset> EstimateClockOffset(comm::Communicator& comm, const Tracer& tracer,
                                        const ClockSyncOptions& options) {
  if (options.rounds < 1) {
    return InvalidArgumentError("clock sync: rounds must be >= 1, got " +
                                std::to_string(options.rounds));
  }
  comm::Transport* t = comm.transport();
  const int rank = comm.rank();
  const Deadline deadline = DeadlineAfter(options.timeout);
  ClockOffset result;
  result.rounds = options.rounds;
  if (comm.size() == 1) return result;
  if (rank == 0) {
    for (int peer = 1; peer < comm.size(); ++peer) {
      const std::string what = "clock sync on rank 0 with rank " + std::to_string(peer);
      for (int k = 0; k < options.rounds; ++k) {
        char ping = 0;
        auto recv = t->PostRecv(&ping, 1, peer, kClockSlot);
        LOOM_RETURN_IF_ERROR(WaitOp(*recv, deadline, what));
        const int64_t now = tracer.NowNanos();
        auto send = t->PostSend(&now, sizeof(now), peer, kClockSlot);
        LOOM_RETURN_IF_ERROR(WaitOp(*send, deadline, what));
      }
    }
    return result;
  }
  const std::string what = "clock sync on rank " + std::to_string(rank) + " with rank 0";
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < options.rounds; ++k) {
    char ping = 1;
    int64_t peer_ns = 0;
    auto recv = t->PostRecv(&peer_ns, sizeof(peer_ns), 0, kClockSlot);
    const int64_t t0 = tracer.NowNanos();
    auto send = t->PostSend(&ping, 1, 0, kClockSlot);
    LOOM_RETURN_IF_ERROR(WaitOp(*recv, deadline, what));
    const int64_t t1 = tracer.NowNanos();
    LOOM_RETURN_IF_ERROR(WaitOp(*send, deadline, what));
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      result.rtt_ns = best_rtt;
      result.offset_ns = peer_ns - t0 - (t1 - t0) / 2;
    }
  }
  return result;
}

}  // namespace loom::trace
