// RankAppState folding: see rank_app_state.h.
#include "loom/monitor/app/rank_app_state.h"

#include <algorithm>

namespace loom::monitor {

void RankAppState::Apply(const AppMessage& m) {
  ++messages;
  last_update_ms = std::max(last_update_ms, m.ts_ms);
  switch (m.kind) {
    case AppMessage::Kind::kStep:
      // Datagrams from one sender arrive in order; a smaller step means the rank restarted.
      step = m.step;
      last_step_time_s = m.step_time_s;
      last_data_wait_s = m.data_wait_s;
      break;
    case AppMessage::Kind::kCollective:
      last_coll_seq = m.seq;
      last_coll_op = m.op;
      last_coll_duration_s = m.duration_s;
      coll_bytes_total += m.bytes;
      coll_seconds_total += m.duration_s;
      ++coll_count;
      break;
    case AppMessage::Kind::kPhase:
      phase = m.phase;
      break;
  }
}

}  // namespace loom::monitor
