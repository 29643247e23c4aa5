// Internal: a streaming (SAX) walk over a Chrome/Kineto-style JSON trace file that hands each
// event object, one at a time, to a callback, plus the top-level metadata the dialects need.
//
// Only the current event is held (its scalar fields and first-level args); nested arrays and
// objects the dialects do not need are skipped without being stored. Memory is O(1) in the file
// size: a 1 MiB read buffer, the current event, and the top-level scalars.
//
// Thread-safety: one JsonEventStream per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::trace::ingest::internal {

// A JSON scalar as parsed, keeping the raw text of floats so that µs floats such as
// 1700000000123.456 convert to ns exactly (a double would round them to 0.25 µs).
struct Scalar {
  enum class Type : uint8_t { kNone, kNull, kBool, kInt, kFloat, kString };
  Type type = Type::kNone;
  int64_t i = 0;     // kInt, kBool
  double d = 0;      // kFloat (and kInt as double)
  std::string text;  // kString value, or the raw text of a kFloat

  bool is_number() const { return type == Type::kInt || type == Type::kFloat; }
  bool present() const { return type != Type::kNone; }
  void Reset() {
    type = Type::kNone;
    text.clear();
  }
  // The value as text ("12", "1.5", "abc"); empty for null/none.
  std::string AsText() const;
};

struct RawArg {
  std::string key;
  Scalar value;
};

// One event object of the trace, as written.
struct RawEvent {
  int64_t index = 0;        // 0-based position in the events array
  int64_t byte_offset = 0;  // offset of the event's '{' in the file
  std::string name, ph, cat, bp;
  Scalar ts, dur, pid, tid, id;
  std::vector<RawArg> args;  // first-level scalar args; args_used entries are valid
  size_t args_used = 0;
  // Product of the first inner list of args "Input Dims" ([[n, m], ...] -> n*m); -1 if absent.
  int64_t input_dims_product = -1;
  std::string input_type;  // first string of args "Input type" (["float", ...] -> "float")

  const Scalar* Arg(std::string_view key) const;
  void Reset();
};

// Top-level facts, filled as the parser meets them (they may come before or after the events).
struct TopLevel {
  bool is_array = false;  // legacy torch: the file is a bare array of events
  bool is_object = false;
  bool has_trace_events = false;  // "traceEvents" key seen
  bool has_loom = false;          // "loom" key seen (loom's own export)
  std::vector<std::string> keys;  // the first few top-level keys (for error messages)
  Scalar base_time_ns;            // "baseTimeNanoseconds"
  Scalar trace_name;              // "traceName"
  Scalar display_time_unit;       // "displayTimeUnit" (display only)
  Scalar time_unit;               // "time_unit"/"timeUnit" (top level or inside "loom")
  Scalar dist_rank, dist_world_size, dist_backend;  // "distributedInfo"
  Scalar loom_rank, loom_world_size, loom_run_id, loom_clock_offset_ns, loom_clock_rounds,
      loom_rtt_ns;  // "loom"
};

// Called for each event; return a non-OK status to stop parsing with that error.
using RawEventSink = std::function<Status(const RawEvent&, const TopLevel&)>;

// Streams `path`. Errors: kNotFound etc. for the file, kDataLoss for truncated or malformed JSON
// (message names the byte offset and the last event index), or whatever the sink returns.
// `describe_rank` is called to name the rank in error messages ("rank 1").
Status StreamJsonEvents(const std::string& path, const RawEventSink& sink, TopLevel* top,
                        const std::function<std::string(const TopLevel&)>& describe_rank);

// "123" µs -> 123000 ns; "1.5" -> 1500; exact for decimal text; false if not a number or out of
// range. Used for ts/dur, which Chrome/Kineto/legacy traces all write in microseconds.
bool MicrosToNanos(const Scalar& v, int64_t* ns);

}  // namespace loom::trace::ingest::internal
