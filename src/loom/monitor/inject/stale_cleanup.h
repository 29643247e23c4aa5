// Removes what injectors that died without reverting (SIGKILL, power loss of the shell) left
// behind. RAII and signal handlers cover every other exit; this covers `kill -9` of the injector.
//
//   LOOM_ASSIGN_OR_RETURN(StaleCleanupReport r, CleanupStaleInjections("loom-a-42"));
//   for (const std::string& what : r.removed) std::puts(what.c_str());
//
// Ownership is read from the names Inject gives: cgroup v1 directories
// loom-inject-<target pid>-<injector pid>-<n> (freezer, cpu, memory hierarchies) and nftables
// tables loom_inject_<injector pid>_<n>. Only those whose injector process no longer exists are
// touched: frozen cgroups are thawed, memory limits lifted, member processes moved to the parent
// cgroup, then the cgroup or table is removed. Leftover tbf qdiscs and downed links carry no
// owner and are not touched (delete the namespace, or `tc qdisc del` / `ip link set up`).
//
// Thread-safety: reentrant; racing cleanups may report each other's removals as errors.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

struct StaleCleanupReport {
  std::vector<std::string> removed;  // "cgroup /sys/fs/cgroup/...", "nft table inet ... in NS"
  std::vector<std::string> live;     // owned by an injector that still runs: left alone
  std::vector<std::string> errors;   // what could not be removed, and why
};

// Cleans the cgroup v1 hierarchies (those mounted) and the nft tables of `netns` ("" = the
// current namespace; nft tables are skipped when the `nft` tool is missing).
Result<StaleCleanupReport> CleanupStaleInjections(const std::string& netns);

// The injector pid encoded in an injection name ("loom-inject-12-345-0" -> 345,
// "loom_inject_345_0" -> 345), or -1 if the name is not one of ours.
int InjectorPidOf(const std::string& name);

}  // namespace loom::monitor
