// Heartbeat: what each executor tells the robust driver every period about its machine and the
// rank it runs (MegaScale's robust-training daemon). The driver folds them into a MachineView per
// machine; the policy decides on those views.
//
//   Heartbeat hb;  hb.machine = "m3";  hb.state = 'T';  hb.step = 41;
//   std::string line = EncodeHeartbeat(hb);            // one JSON line
//   LOOM_ASSIGN_OR_RETURN(Heartbeat back, ParseHeartbeat(line));
//
// `last_coll_seq` reproduces MegaScale's hang localisation: after a hang, the rank that lags in
// collective sequence numbers (or reports nothing) is the culprit.
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

struct Heartbeat {
  std::string machine;
  int64_t ts_ms = 0;         // executor wall clock
  int attempt = -1;          // which launch of the job the rank belongs to (-1: no rank running)
  int rank = -1;
  int pid = 0;
  char state = '?';          // /proc state of the rank: R S D T Z; '-' when it has exited
  double cpu_rate = 0;       // rank CPU seconds per second over the last period
  int64_t step = -1;         // last completed step reported by the trainer (-1: none yet)
  double step_time_s = 0;    // its duration
  // Mean compute (forward + backward) time per step over the last period, as the trainer
  // reports it (-1: no step reported one in the period).
  double compute_s = -1;
  int64_t last_coll_seq = -1;
  std::string last_coll_op;
  int64_t coll_bytes = 0;    // total collective bytes so far
  int64_t app_age_ms = -1;   // since the trainer last reported anything (-1: never)
  std::vector<std::string> log_hits;  // lines with error keywords since the last heartbeat
};

std::string EncodeHeartbeat(const Heartbeat& hb);
// Errors name the missing or mistyped field.
Result<Heartbeat> ParseHeartbeat(std::string_view json_line);

}  // namespace loom::robust
