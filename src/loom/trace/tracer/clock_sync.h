// EstimateClockOffset: NTP-style ping-pong against rank 0 that estimates how far each rank's
// tracer clock is from rank 0's, so traces of different ranks (and hosts) can be aligned.
//
//   LOOM_ASSIGN_OR_RETURN(ClockOffset off, EstimateClockOffset(comm, tracer, {}));
//   tracer.set_clock_offset(off);   // exported as "loom": {"clock_offset_ns", "rtt_ns"}
//
// Rank 0 serves each other rank in turn: `rounds` times, rank r reads its clock (t0), sends one
// byte, rank 0 replies with its clock reading (t_peer), rank r reads its clock again (t1). The
// sample with the smallest round trip t1 - t0 is kept and offset = t_peer - (t0 + t1) / 2, so
// rank0_clock ~= this_clock + offset with an error of at most rtt / 2 (less when the two legs of
// the round trip are symmetric). Rank 0 gets {0, 0, rounds}.
//
// It is a collective: every rank calls it at the same point, while nothing else uses the
// communicator. It talks to the Transport directly on a reserved slot, so the communicator's
// operation sequence numbers (which SEND/RECV flow ids are derived from) stay equal on all ranks.
// Thread-safety: as Communicator (one thread at a time).
#pragma once

#include <chrono>

#include "loom/base/status.h"
#include "loom/comm/communicator.h"
#include "loom/trace/tracer/tracer.h"

namespace loom::trace {

struct ClockSyncOptions {
  int rounds = 32;                           // ping-pong rounds per rank
  std::chrono::milliseconds timeout{30000};  // for the whole exchange
};

Result<ClockOffset> EstimateClockOffset(comm::Communicator& comm, const Tracer& tracer,
                                        const ClockSyncOptions& options = {});

}  // namespace loom::trace
