// The target process of a pid fault: existence checks with clear errors and its /proc state.
//
//   LOOM_RETURN_IF_ERROR(CheckTargetPid(spec.pid));   // NotFound "pid 4242 does not exist"
//   char state = ProcState(pid).value();              // 'R', 'S', 'T', 'D', 'Z', ...
//
// Thread-safety: reentrant functions.
#pragma once

#include <cstdint>

#include "loom/base/status.h"

namespace loom::monitor {

// OK if `pid` names an existing process other than init and ourselves; NotFound if there is no
// such process; InvalidArgument for pid <= 1 or our own pid.
Status CheckTargetPid(int pid);

// True if a process (or zombie) with this pid exists.
bool ProcessExists(int pid);

// True if the process exists and is neither a zombie nor dead (state Z or X).
bool ProcessAlive(int pid);

// The state letter from /proc/PID/stat (field 3).
Result<char> ProcState(int pid);

// kill(pid, sig); NotFound if the process does not exist.
Status SendSignal(int pid, int sig);

// utime + stime of /proc/PID/stat in clock ticks.
Result<int64_t> ProcCpuTicks(int pid);

}  // namespace loom::monitor
