// ProcStat: one process's scheduler state, CPU time and resident memory, read from
// /proc/<pid>/stat (state 'T' reveals a SIGSTOP'ed rank).
//
//   LOOM_ASSIGN_OR_RETURN(ProcStat st, ReadProcStat(pid));
//   if (st.state == 'T') ...  // stopped
//
// ParseProcStat() takes the file's text so tests can feed synthetic lines.
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstdint>
#include <string_view>

#include "loom/base/status.h"

namespace loom::monitor {

struct ProcStat {
  int pid = 0;
  char state = '?';          // R S D T t Z X I (see proc(5))
  double cpu_seconds = 0;    // utime + stime
  int64_t rss_bytes = 0;
};

// Parses the one-line content of /proc/<pid>/stat. `clk_tck` and `page_size` convert ticks and
// pages. The comm field may contain spaces and parentheses: the last ')' ends it.
Result<ProcStat> ParseProcStat(std::string_view text, long clk_tck, long page_size);

// Reads /proc/<pid>/stat. NotFound when the process is gone.
Result<ProcStat> ReadProcStat(int pid);

// 1 when `state` means the process is stopped (T, t), else 0.
inline int IsStoppedState(char state) { return state == 'T' || state == 't' ? 1 : 0; }

}  // namespace loom::monitor
