// Executor: the per-machine daemon of robust training (MegaScale's robust-training daemon). It
// connects to the driver, runs the rank the driver assigns (one per machine), receives the
// trainer's application metrics (step, collectives) on a Unix socket, and sends a heartbeat every
// period: process state from /proc (T = stopped), CPU rate, step, last collective sequence
// number, collective bytes, error keywords seen in the rank's output. On the driver's commands
// it kills the rank, dumps its stacks (eu-stack) or runs the self-checks.
//
//   ExecutorOptions o;  o.driver = "10.0.0.1:7070";  o.machine = "m3";
//   return RunExecutor(o).ok() ? 0 : 1;      // `loom robust executor --driver ... --machine ...`
//
// Protocol (newline-delimited JSON, docs in src/loom/robust/README.md):
//   executor -> driver: hello, heartbeat, exit, dump, selfcheck
//   driver -> executor: start {attempt, rank, argv, env}, kill, dump, selfcheck, exit
// Thread-safety: RunExecutor blocks its thread until the driver says exit or goes away.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

struct ExecutorOptions {
  std::string driver;                         // HOST:PORT of `loom robust`
  std::string machine;                        // this machine's name in the job
  std::chrono::milliseconds heartbeat{1000};  // heartbeat period
  std::string socket_dir = "/tmp";            // where the app-metrics socket is created
  // Case-sensitive whole words that make an output line a "log hit" in the next heartbeat.
  std::vector<std::string> log_keywords = {"error", "Error", "ERROR", "Traceback",
                                           "Segmentation fault", "NaN"};
};

// Returns OK when the driver told it to exit; an error when the driver went away.
Status RunExecutor(const ExecutorOptions& options);

}  // namespace loom::robust
