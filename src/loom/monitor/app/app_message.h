// AppMessage: one application metric the trainer pushes to the local metrics agent, and its wire
// form (one short text line, one datagram per message).
//
//   std::string line = EncodeAppMessage({.kind = AppMessage::Kind::kStep, .rank = 3, ...});
//   LOOM_ASSIGN_OR_RETURN(AppMessage m, ParseAppMessage(line));
//
// Wire format (space-separated key=value after a kind tag, version "v1"):
//   v1 step rank=3 ts=1700000000123 step=42 t=0.513 wait=0.012
//   v1 coll rank=3 ts=1700000000123 op=allreduce bytes=4194304 seq=981 dur=0.0031
//   v1 phase rank=3 ts=1700000000123 phase=ckpt_save
// Every field is required; unknown or duplicate keys, non-numbers, negative durations, and op /
// phase strings with characters outside [A-Za-z0-9_.-] are errors naming the field.
// Thread-safety: value type and free functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom::monitor {

struct AppMessage {
  enum class Kind { kStep, kCollective, kPhase };
  Kind kind = Kind::kStep;
  int rank = 0;
  int64_t ts_ms = 0;  // wall clock of the sender, ms since the Unix epoch
  // kStep
  int64_t step = -1;
  double step_time_s = 0;
  double data_wait_s = 0;  // NaN when the trainer does not know it ("nan" on the wire)
  // Compute time of the step outside collective waits (forward + backward): NVRx's "section
  // time", which names a straggler in synchronous training. NaN: not reported (optional field).
  double compute_s = NAN;
  // kCollective
  std::string op;
  int64_t bytes = 0;
  int64_t seq = -1;
  double duration_s = 0;
  // kPhase: "ckpt_save", "ckpt_load", "eval", "train"
  std::string phase;
};

std::string_view AppMessageKindName(AppMessage::Kind kind);  // "step", "coll", "phase"

std::string EncodeAppMessage(const AppMessage& m);
Result<AppMessage> ParseAppMessage(std::string_view line);

}  // namespace loom::monitor
