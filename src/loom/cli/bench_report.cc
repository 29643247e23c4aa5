#include "loom/cli/bench_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

#include "loom/base/file_util.h"
#include "loom/train/text_dataset.h"

namespace loom::cli {

Stats Summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    double pos = q * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  s.median = at(0.5);
  s.p10 = at(0.1);
  s.p90 = at(0.9);
  return s;
}

namespace {

// The source tree's commit when it is available (a "-dirty" suffix for uncommitted changes),
// else the commit CMake saw when it configured the build (which can be older).
std::string SourceCommit() {
  std::string cmd = std::string("git -C '") + LOOM_SOURCE_DIR +
                    "' describe --always --dirty --abbrev=7 2>/dev/null";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[64] = {0};
    bool ok = std::fgets(buf, sizeof(buf), p) != nullptr;
    if (::pclose(p) == 0 && ok) {
      std::string c(buf);
      while (!c.empty() && (c.back() == '\n' || c.back() == '\r')) c.pop_back();
      if (!c.empty()) return c;
    }
  }
  return std::string(LOOM_GIT_COMMIT) + " (configure time)";
}

}  // namespace

nlohmann::json HostInfo() {
  char host[256] = "?";
  ::gethostname(host, sizeof(host) - 1);
  std::string cpu = "?";
  if (auto info = ReadFileToString("/proc/cpuinfo"); info.ok()) {
    size_t p = info->find("model name");
    if (p != std::string::npos) {
      size_t c = info->find(':', p), nl = info->find('\n', p);
      cpu = info->substr(c + 2, nl - c - 2);
    }
  }
  double load = 0;
  if (auto l = ReadFileToString("/proc/loadavg"); l.ok()) load = std::atof(l->c_str());
  return {{"hostname", host},
          {"cpu", cpu},
          {"cores", std::thread::hardware_concurrency()},
          {"loadavg_1m", load},
          {"commit", SourceCommit()},
          {"build_type", LOOM_BUILD_TYPE}};
}

void PrintBenchHeader(const std::string& name, const nlohmann::json& config) {
  nlohmann::json h = HostInfo();
  std::printf("# loom bench %s\n", name.c_str());
  std::printf("# host %s | %s | %d cores | load %.2f | commit %s | %s build\n",
              h["hostname"].get<std::string>().c_str(), h["cpu"].get<std::string>().c_str(),
              h["cores"].get<int>(), h["loadavg_1m"].get<double>(),
              h["commit"].get<std::string>().c_str(), h["build_type"].get<std::string>().c_str());
  std::printf("# config %s\n", config.dump().c_str());
  std::fflush(stdout);
}

Status WriteBenchJson(const std::string& path, const std::string& name,
                      const nlohmann::json& config, const nlohmann::json& summary,
                      const nlohmann::json& results) {
  nlohmann::json doc = {{"bench", name},
                        {"host", HostInfo()},
                        {"config", config},
                        {"summary", summary},
                        {"results", results}};
  return WriteFileAtomic(path, doc.dump(2) + "\n");
}

Status RunArm(const std::string& name, comm::LaunchOptions o, const std::string& log) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError("cannot write " + log);
  o.stdout_fd = fd;
  o.stderr_fd = fd;
  auto r = comm::Launch(o);
  ::close(fd);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return InternalError(name + " failed: " + r->message + " (output in " + log + ")");
  }
  return OkStatus();
}

Result<TrainBenchDir> MakeTrainBenchDir(const std::string& name, const std::string& requested) {
  TrainBenchDir out;
  out.dir = requested.empty() ? "/tmp/loom-bench-" + name + "-" + std::to_string(::getpid())
                              : requested;
  LOOM_RETURN_IF_ERROR(MakeDirs(out.dir));
  LOOM_ASSIGN_OR_RETURN(std::string corpus, train::LoadBibleText());
  out.corpus_path = out.dir + "/corpus.txt";
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(out.corpus_path, corpus));
  return out;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace loom::cli
