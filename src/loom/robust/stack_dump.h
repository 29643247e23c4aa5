// Stack dumps of a rank before it is killed (evidence first: pytorch/pytorch#122694), with
// elfutils' `eu-stack`, which also works on a stopped (SIGSTOP) process.
//
//   LOOM_ASSIGN_OR_RETURN(std::string text, DumpStacks(pid, std::chrono::seconds(10)));
//
// Thread-safety: free function; runs one child process.
#pragma once

#include <chrono>
#include <string>

#include "loom/base/status.h"

namespace loom::robust {

// All threads' stacks of `pid` as eu-stack prints them. Errors when eu-stack is missing, fails,
// or does not finish within `timeout` (it is then killed).
Result<std::string> DumpStacks(int pid, std::chrono::milliseconds timeout);

}  // namespace loom::robust
