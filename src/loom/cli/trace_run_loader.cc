#include "loom/cli/trace_run_loader.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "loom/cli/parse_bytes.h"
#include "loom/trace/evaluation/profile.h"

namespace loom::cli {
namespace {

namespace dfg = trace::dfg;
namespace ingest = trace::ingest;

// A run directory holds its traces in trace/; a trace directory holds them itself.
std::string TraceDirOf(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path sub = std::filesystem::path(dir) / "trace";
  const std::regex name(R"(rank[0-9]+\.trace\.json)");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (std::regex_match(e.path().filename().string(), name)) return dir;
  }
  return std::filesystem::is_directory(sub, ec) ? sub.string() : dir;
}

Result<std::vector<std::string>> FindTraces(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFoundError("trace directory '" + dir + "' does not exist or is not a directory");
  }
  const std::regex name(R"(rank[0-9]+\.trace\.json)");
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && std::regex_match(e.path().filename().string(), name)) {
      paths.push_back(e.path().string());
    }
  }
  if (paths.empty()) {
    return NotFoundError("no rank<N>.trace.json files in '" + dir +
                         "' (run `loom train ... trace.steps=A-B`; traces go to <run_dir>/trace)");
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}


Status ParseSteps(const std::string& s, dfg::TraceModelOptions* o) {
  if (s.empty()) return OkStatus();
  std::smatch m;
  if (!std::regex_match(s, m, std::regex(R"((\d+)(?:-(\d+))?)"))) {
    return InvalidArgumentError("--steps '" + s + "' is not a step range like 5-15");
  }
  o->first_step = std::stoll(m[1]);
  o->last_step = m[2].matched ? std::stoll(m[2]) : o->first_step;
  return OkStatus();
}


}  // namespace

void AddTraceRunOptions(CLI::App* cmd, TraceRunArgs* a) {
  cmd->add_option("dir", a->dir, "directory with rank<N>.trace.json files (or a run directory)")
      ->required();
  cmd->add_option("--steps", a->steps, "step window A-B (default: every complete step)");
  cmd->add_option("--link", a->topology, "link topology: per-sender (default) or shared");
  cmd->add_option("--kappa", a->kappa, "compute slowdown while comm runs (default: fitted)");
  cmd->add_option("--link-gbps", a->link_gbps, "link bandwidth in GB/s (default: fitted)");
  cmd->add_option("--stat", a->stat, "per-step samples to one value: median (default) or mean");
  cmd->add_option("--split", a->split, "backward pieces per bucket of at most this size (1MiB)");
  cmd->add_option("--link-model", a->link_model,
                  "egress link: auto (token bucket when the trace shows a shaped link; default), "
                  "alpha-beta or token-bucket");
}

Result<LoadedTraceRun> LoadTraceRun(const TraceRunArgs& a) {
  LoadedTraceRun l;
  const std::string dir = TraceDirOf(a.dir);
  LOOM_ASSIGN_OR_RETURN(l.paths, FindTraces(dir));
  dfg::TraceModelOptions o;
  LOOM_RETURN_IF_ERROR(ParseSteps(a.steps, &o));
  if (a.topology == "shared")
    o.topology = dfg::LinkTopology::kShared;
  else if (a.topology != "per-sender") {
    return InvalidArgumentError("--link '" + a.topology + "' is not per-sender or shared");
  }
  o.kappa = a.kappa;
  if (a.link_gbps > 0) o.link_ns_per_byte = 1.0 / a.link_gbps;
  if (a.stat == "mean")
    o.statistic = dfg::TraceModelOptions::Statistic::kMean;
  else if (a.stat != "median")
    return InvalidArgumentError("--stat '" + a.stat + "' is not median or mean");
  LOOM_ASSIGN_OR_RETURN(o.split_bytes, ParseBytes(a.split));
  LOOM_ASSIGN_OR_RETURN(o.link_model, dfg::ParseLinkModel(a.link_model));
  // Read, match, align and fit: the same pipeline `loom bench replay` uses.
  LOOM_ASSIGN_OR_RETURN(trace::evaluation::ProfiledRun p, trace::evaluation::LoadProfile(dir, o));
  l.traces = std::move(p.traces);
  l.match = std::move(p.match);
  l.alignment = std::move(p.alignment);
  l.alignment_note = std::move(p.alignment_note);
  l.model = std::move(p.model);
  l.options = o;
  return l;
}

void PrintTraceModel(const LoadedTraceRun& l) {
  const dfg::TraceModel& m = l.model;
  std::printf("traces: %d ranks in %s; steps %lld-%lld (%zu used)\n", m.spec.world_size,
              std::filesystem::path(l.paths[0]).parent_path().c_str(),
              static_cast<long long>(m.steps.front()), static_cast<long long>(m.steps.back()),
              m.steps.size());
  for (const ingest::RankOffset& r : l.alignment.ranks) {
    if (r.rank != 0) {
      std::printf("clock offset: rank %d %+.1f us%s\n", r.rank, r.offset_ns / 1e3,
                  r.bounded ? "" : " (unbounded)");
    }
  }
  if (!l.alignment_note.empty()) std::printf("note: %s\n", l.alignment_note.c_str());
  std::printf("model: %d bucket(s), %.2f MiB gradients, %s ring of %d steps, %zu backward pieces\n",
              m.spec.num_buckets(), m.spec.TotalGradBytes() / 1048576.0,
              std::string(dfg::CollectiveKindName(m.spec.collective)).c_str(), m.spec.RingSteps(),
              m.spec.grads.size());
  std::printf("link fit: %s\n", m.link.ToString().c_str());
  for (size_t r = 0; r < m.rank_links.size(); ++r) {
    if (m.rank_links[r].samples > 0) {
      std::printf("link fit rank%zu.egress: %s\n", r, m.rank_links[r].ToString().c_str());
    }
  }
  std::printf("compute slowdown: %s\n", m.kappa.ToString().c_str());
  for (const std::string& n : m.notes) std::printf("note: %s\n", n.c_str());
}


}  // namespace loom::cli
