// /proc/<pid>/stat parsing: see proc_stat.h.
#include "loom/monitor/agent/proc_stat.h"

#include <unistd.h>

#include <charconv>
#include <string>

#include "loom/monitor/agent/proc_file.h"

namespace loom::monitor {

Result<ProcStat> ParseProcStat(std::string_view text, long clk_tck, long page_size) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return InvalidArgumentError("proc stat: no '(comm)' field");
  }
  ProcStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  auto [p, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), st.pid);
  if (ec != std::errc() || p != pid_text.data() + pid_text.size()) {
    return InvalidArgumentError("proc stat: field 'pid' is not an integer");
  }
  // Fields after the comm, numbered as in proc(5): 3 state, 14 utime, 15 stime, 24 rss.
  std::string_view rest = text.substr(close + 1);
  int field = 2;
  int64_t utime = -1, stime = -1, rss = -1;
  size_t i = 0;
  while (i < rest.size() && field < 24) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    if (j == i) break;
    ++field;
    std::string_view tok = rest.substr(i, j - i);
    if (field == 3) {
      if (tok.size() != 1) return InvalidArgumentError("proc stat: field 'state' is not one char");
      st.state = tok[0];
    } else if (field == 14 || field == 15 || field == 24) {
      int64_t v = 0;
      auto [q, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (ec2 != std::errc() || q != tok.data() + tok.size()) {
        return InvalidArgumentError("proc stat: field " + std::to_string(field) +
                                    " is not an integer");
      }
      (field == 14 ? utime : field == 15 ? stime : rss) = v;
    }
    i = j;
  }
  if (field < 24) {
    return InvalidArgumentError("proc stat: only " + std::to_string(field) +
                                " fields (need 24)");
  }
  st.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(clk_tck);
  st.rss_bytes = rss * page_size;
  return st;
}

Result<ProcStat> ReadProcStat(int pid) {
  static const long clk_tck = ::sysconf(_SC_CLK_TCK);
  static const long page_size = ::sysconf(_SC_PAGESIZE);
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::string text;
  LOOM_RETURN_IF_ERROR(ReadProcFile(path, &text, 4096));
  Result<ProcStat> st = ParseProcStat(text, clk_tck, page_size);
  if (!st.ok()) return st.status().WithContext(path);
  return st;
}

}  // namespace loom::monitor
