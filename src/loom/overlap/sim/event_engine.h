// Internal: the list-scheduling event engine behind simulator.h. A program is a set of worker
// pools (each with in-order issue of its items), one serial FIFO link, and dependencies
// item -> message (a tile waits for chunks) and message/item -> item (a send waits for tiles).
// Times are exact for this model: every start is max(resource free, dependencies done).
// Thread-safety: value types; Run() is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/sim/simulator.h"

namespace loom::overlap::internal {

enum class PoolKind { kCompute, kReduce };

struct SimPool {
  PoolKind kind = PoolKind::kCompute;
  int workers = 1;
};

struct SimItem {
  int pool = 0;
  double cost_s = 0;
  std::vector<int> wait_msgs;   // link messages that must have arrived
  std::vector<int> wait_items;  // items that must have finished
  int peer = -1;                // for the trace
  int64_t bytes = 0;            // for reduce items' trace
};

struct SimMessage {
  int64_t bytes = 0;
  std::vector<int> wait_items;  // items that must finish before the send
  int peer = -1;
};

struct SimProgram {
  std::vector<SimPool> pools;
  std::vector<SimItem> items;        // in issue order per pool
  std::vector<SimMessage> messages;  // in FIFO order
};

struct SimResult {
  double makespan_s = 0;
  double link_busy_s = 0;
  double compute_busy_s = 0;  // sum of kCompute item costs
  std::vector<double> item_start, item_end, msg_send, msg_arrive;
  SimTrace trace;
};

// Errors: kInternal if the dependencies deadlock (a program bug), kInvalidArgument for bad
// indices.
Result<SimResult> RunProgram(const SimProgram& program, const LinkModel& link, bool record_trace);

}  // namespace loom::overlap::internal
