// Helpers shared by the subcommands that run as ranks (`loom train`, `loom bench ...`).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/comm/communicator.h"
#include "loom/comm/store.h"
#include "loom/comm/world.h"

namespace loom::cli {

struct RankContext {
  comm::WorldInfo world;
  std::unique_ptr<comm::Store> store;
  std::unique_ptr<comm::Communicator> comm;
};

// Reads the world from the environment and connects: Gloo through the launcher's store, or an
// in-process communicator of size 1 when there is no launcher. `purpose` namespaces store keys.
Result<RankContext> ConnectRank(const std::string& purpose);

// True when a launcher (loom launch, mpirun, srun) started this process.
bool UnderLauncher();

// Runs this binary again as `nproc` local ranks with the same arguments (plus `extra_env`), and
// returns the exit code to use; failures are reported on stderr prefixed with `who`.
int RelaunchAsRanks(const std::vector<std::string>& argv, int nproc, const std::string& who);

// Runs a command with this process's stdin/stdout/stderr (plus `env`) and returns its exit code
// (128 + signal when killed).
int RunForeground(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

// Path of the running executable.
std::string SelfExe();

}  // namespace loom::cli
