// Runs a system tool (ip, tc, nft) without a shell, optionally inside a named network namespace,
// capturing stdout and stderr together.
//
//   LOOM_ASSIGN_OR_RETURN(CommandOutput out, RunCommand({"tc", "qdisc", "show", "dev", "lva1"},
//                                                       "loom-a-42"));
//   LOOM_RETURN_IF_ERROR(RunChecked({"ip", "link", "set", "dev", "lva1", "up"}, "loom-a-42"));
//
// Thread-safety: reentrant (each call forks its own child).
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

struct CommandOutput {
  int exit_code = -1;  // 128 + signal if the tool was killed
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv (looked up in PATH); with `netns` set, runs `ip netns exec NETNS argv...`.
// Errors: NotFound if the tool (or the namespace) does not exist, DeadlineExceeded after
// `timeout_ms` (the tool is killed). A non-zero exit code is not an error here.
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const std::string& netns = "", int timeout_ms = 10000);

// RunCommand, and an error naming the command and its output if it exits non-zero.
Result<std::string> RunChecked(const std::vector<std::string>& argv, const std::string& netns = "",
                               int timeout_ms = 10000);

// "ip netns exec NS tc qdisc show" (for messages).
std::string CommandLine(const std::vector<std::string>& argv, const std::string& netns = "");

// NotFound unless /var/run/netns/NETNS exists (empty name = current namespace, always OK).
Status CheckNetns(const std::string& netns);

}  // namespace loom::monitor
