// Shared pieces of `loom bench ...`: the header every benchmark prints (host, CPU, commit, build
// type, threads, resolved config), order statistics, and the --json writer (a document with a
// top-level "summary" object holding the headline figures).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/base/status.h"
#include "loom/comm/launcher.h"

namespace loom::cli {

struct Stats {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  size_t n = 0;
};
Stats Summarize(std::vector<double> v);

// Host facts for the header and the JSON: hostname, CPU model, cores, commit, build type.
nlohmann::json HostInfo();
// Prints "# loom bench <name>" and the host facts and config as comment lines.
void PrintBenchHeader(const std::string& name, const nlohmann::json& config);
// Writes {"bench", "host", "config", "summary", "results"} to `path` atomically.
Status WriteBenchJson(const std::string& path, const std::string& name,
                      const nlohmann::json& config, const nlohmann::json& summary,
                      const nlohmann::json& results);

// Runs one benchmark arm through the launcher with stdout and stderr going to `log`; an error
// names the arm, the failure and the log.
Status RunArm(const std::string& name, comm::LaunchOptions o, const std::string& log);

// The scratch directory of a benchmark that runs `loom train` (`requested`, or
// /tmp/loom-bench-<name>-<pid>) with the King James corpus written to <dir>/corpus.txt, so every
// arm (and a Python peer) reads the same bytes.
struct TrainBenchDir {
  std::string dir;
  std::string corpus_path;
};
Result<TrainBenchDir> MakeTrainBenchDir(const std::string& name, const std::string& requested);

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> Split(const std::string& s);

}  // namespace loom::cli
