// RankAppState: the latest application state of one rank, folded from its AppMessages (what the
// agent exposes per rank and what the robust executor puts in heartbeats).
//
//   std::map<int, RankAppState> ranks;
//   for (const AppMessage& m : receiver.Drain()) ranks[m.rank].Apply(m);
//
// Fields the rank never reported stay at their "missing" values (-1, NaN, empty).
// Thread-safety: value type.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "loom/monitor/app/app_message.h"

namespace loom::monitor {

struct RankAppState {
  int64_t step = -1;
  double last_step_time_s = NAN;
  double last_data_wait_s = NAN;
  int64_t last_coll_seq = -1;
  std::string last_coll_op;
  double last_coll_duration_s = NAN;
  int64_t coll_bytes_total = 0;
  int64_t coll_count = 0;
  double coll_seconds_total = 0;
  int64_t last_update_ms = 0;  // ts_ms of the newest message applied (0: never)
  std::string phase;           // empty until a phase message arrives
  int64_t messages = 0;

  void Apply(const AppMessage& m);
};

}  // namespace loom::monitor
