// Launcher: starts N local ranks of a command (like `torchrun --standalone`) and supervises them.
//
//   LaunchOptions o;  o.nproc = 2;  o.argv = {"loom", "train"};
//   LOOM_ASSIGN_OR_RETURN(LaunchResult r, Launch(o));
//   return r.exit_code;
//
// Each rank gets LOOM_RANK, LOOM_WORLD_SIZE, LOOM_LOCAL_RANK, LOOM_LOCAL_WORLD_SIZE, LOOM_RUN_ID,
// LOOM_STORE (a fresh FileStore directory, removed afterwards, unless one is given), and
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = cores / N unless already set; with `torch_env` also
// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (for PyTorch peers). Every line a rank
// prints is prefixed with "[rank N] ". SIGINT/SIGTERM/SIGHUP are forwarded to all ranks. When a
// rank fails, the others get `report_window` to exit with their own error, then SIGTERM, then
// SIGKILL after `grace`; the result names the first rank that failed and how. Ranks die with the launcher (PR_SET_PDEATHSIG).
// Thread-safety: Launch() blocks the calling thread; run one at a time per process (it installs
// signal handlers).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/comm/subprocess.h"

namespace loom::comm {

struct LaunchOptions {
  int nproc = 1;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // extra variables for every rank
  std::string store_url;                   // empty: a fresh file store, removed afterwards
  std::string run_id;                      // empty: generated
  bool torch_env = false;                  // also set RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT
  bool prefix_output = true;               // "[rank N] " before every line
  std::chrono::milliseconds grace{5000};   // SIGTERM -> SIGKILL delay when stopping ranks
  // After a rank fails, how long the others may take to notice and exit with their own error
  // (which usually names the failed peer) before they get SIGTERM.
  std::chrono::milliseconds report_window{2000};
  std::chrono::milliseconds timeout{0};    // whole-job limit; 0: none
  int stdout_fd = 1;                       // where ranks' prefixed stdout lines go
  int stderr_fd = 2;                       // where ranks' prefixed stderr lines go
};

struct RankExit {
  int rank = 0;
  ExitStatus status;
  double seconds = 0;  // from launch to exit
};

struct LaunchResult {
  int exit_code = 0;                  // 0, the first failed rank's code, or 128 + signal
  std::vector<RankExit> ranks;        // by rank
  std::optional<int> first_failure;   // rank that failed first, if any
  std::string message;                // one line saying what happened
};

Result<LaunchResult> Launch(const LaunchOptions& options);

}  // namespace loom::comm
