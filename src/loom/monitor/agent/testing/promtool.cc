// PromtoolCheckMetrics: see promtool.h.
#include "loom/monitor/agent/testing/promtool.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace loom::monitor::testing {

PromtoolResult PromtoolCheckMetrics(const std::string& text) {
  PromtoolResult r;
  r.found = std::system("command -v promtool > /dev/null 2>&1") == 0;
  if (!r.found) {
    r.output = "promtool not found: install Debian package 'prometheus' (scripts/setup)";
    return r;
  }
  char in[] = "/tmp/loom_promtool_in_XXXXXX";
  int fd = ::mkstemp(in);
  if (fd < 0) return r;
  ::close(fd);
  std::string out_path = std::string(in) + ".out";
  { std::ofstream(in) << text; }
  std::string cmd = std::string("promtool check metrics < ") + in + " > " + out_path + " 2>&1";
  int status = std::system(cmd.c_str());
  r.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::stringstream ss;
  ss << std::ifstream(out_path).rdbuf();
  r.output = ss.str();
  ::unlink(in);
  ::unlink(out_path.c_str());
  return r;
}

}  // namespace loom::monitor::testing
