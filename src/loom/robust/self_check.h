// Self-checks the robust driver runs on every machine during DIAGNOSE (MegaScale's stop-time
// checks, DLRover's node check on a CPU): a timed single-core GEMM and a memory-bandwidth copy.
// A machine is failing when it is below `fraction` of the fleet median on either (a slow machine
// is only visible relative to its peers).
//
//   SelfCheckResult r = RunSelfCheck(0.5);
//   auto failing = FailingSelfChecks(results_by_machine, 0.75, &evidence);
//
// Thread-safety: RunSelfCheck may run concurrently in different processes; it uses the calling
// thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loom::robust {

struct SelfCheckResult {
  double gemm_gflops = 0;   // fp32, 192^3 blocks, best of the repetitions
  double membw_gbps = 0;    // memcpy of 64 MiB, read + write bytes per second, best
  double seconds = 0;       // total run time
};

// Runs both checks for about `budget_s` seconds in total.
SelfCheckResult RunSelfCheck(double budget_s);

// Machines whose GEMM or memory bandwidth is below `fraction` x the median over `results`;
// one evidence line per failing machine is appended to `evidence`.
std::vector<std::string> FailingSelfChecks(const std::map<std::string, SelfCheckResult>& results,
                                           double fraction, std::vector<std::string>* evidence);

}  // namespace loom::robust
