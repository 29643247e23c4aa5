// `loom trace replay <dir>` and `loom trace whatif <dir> ...`: dPRO-style replay and what-if
// analysis of the per-rank traces a `loom train trace.steps=A-B` run wrote (rank*.trace.json,
// any of the dialects loom/trace/ingest reads). Reads the traces, matches collectives, aligns
// clocks, fits the iteration model (loom/trace/dfg/trace_builder.h), builds the global DFG and
// replays it (loom/trace/replay); `whatif` then rewrites the model (loom/trace/whatif) and
// replays again.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "loom/base/file_util.h"
#include "loom/cli/commands.h"
#include "loom/cli/parse_bytes.h"
#include "loom/cli/trace_run_loader.h"
#include "loom/trace/chakra/export_chakra.h"
#include "loom/trace/dfg/trace_builder.h"
#include "loom/trace/ingest/clock_align.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_reader.h"
#include "loom/trace/replay/baselines.h"
#include "loom/trace/replay/dfg_json.h"
#include "loom/trace/replay/replayer.h"
#include "loom/trace/replay/synthetic_trace.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::cli {
namespace {

namespace dfg = trace::dfg;
namespace ingest = trace::ingest;
namespace replay = trace::replay;
namespace whatif = trace::whatif;
using nlohmann::json;

struct TraceArgs : TraceRunArgs {
  std::string json_out;
  std::string trace_out;
  // whatif
  std::string bandwidth;
  std::string link;  // RATE_MBps[,BURST,LINE_MBps]
  double link_alpha_us = -1;  // >= 0: the shaped links' latency
  std::string bucket;
  std::string overlap;
  std::vector<std::string> stragglers;
  int world = 0;
  std::vector<std::string> compress;
  std::string codecs_json;
  std::vector<int> compress_buckets;
  int64_t compress_min_elements = 65536;  // the trainer's compress.min_elements default
};

using Loaded = LoadedTraceRun;

double Ms(double ns) { return ns / 1e6; }

json PathJson(const dfg::Graph& g, const replay::ReplayResult& r) {
  const replay::CriticalPath& cp = r.critical_path;
  json nodes = json::array();
  for (const replay::PathStep& s : cp.steps) {
    nodes.push_back({{"name", g.nodes()[s.node].name},
                     {"start_ms", Ms(s.start_ns)},
                     {"dur_ms", Ms(s.end_ns - s.start_ns)}});
  }
  return {{"compute_ms", Ms(cp.compute_ns)},
          {"comm_ms", Ms(cp.comm_ns)},
          {"gap_ms", Ms(cp.gap_ns)},
          {"wait_ms", Ms(cp.wait_ns)},
          {"nodes", nodes}};
}

json ModelJson(const Loaded& l) {
  const dfg::TraceModel& m = l.model;
  json offsets = json::array();
  for (const ingest::RankOffset& r : l.alignment.ranks) {
    offsets.push_back({{"rank", r.rank}, {"offset_us", r.offset_ns / 1e3}, {"bounded", r.bounded}});
  }
  json links = json::array();
  for (const dfg::LinkFit& f : m.rank_links) {
    links.push_back({{"alpha_us", f.alpha_ns / 1e3}, {"gbps", f.GBps()}, {"samples", f.samples}});
  }
  return {{"ranks", m.spec.world_size},
          {"rank_links", links},
          {"steps", m.steps},
          {"buckets", m.spec.num_buckets()},
          {"gradient_bytes", m.spec.TotalGradBytes()},
          {"collective", std::string(dfg::CollectiveKindName(m.spec.collective))},
          {"link",
           {{"alpha_us", m.link.alpha_ns / 1e3},
            {"gbps", m.link.GBps()},
            {"beta_identified", m.link.beta_identified},
            {"r2", m.link.r2},
            {"samples", m.link.samples}}},
          {"kappa",
           {{"value", m.kappa.kappa},
            {"identified", m.kappa.identified},
            {"samples", m.kappa.samples}}},
          {"clock_offsets", offsets},
          {"notes", m.notes}};
}

Status Finish(const TraceArgs& a, const dfg::Graph& g, const replay::ReplayResult& r, json doc) {
  if (!a.trace_out.empty()) {
    LOOM_RETURN_IF_ERROR(replay::WriteSyntheticTrace(g, r, a.trace_out));
    std::printf("synthetic trace: %s\n", a.trace_out.c_str());
  }
  if (!a.json_out.empty()) {
    LOOM_RETURN_IF_ERROR(WriteFileAtomic(a.json_out, doc.dump(2) + "\n"));
    std::printf("wrote %s\n", a.json_out.c_str());
  }
  return OkStatus();
}

// Replays every step with its own durations (and the window's link and κ): separates the
// replay's mechanics from how per-step noise aggregates (a sum of medians is not the median of
// a sum, and the slowest rank changes from step to step).
struct PerStep {
  std::vector<double> errors;  // |predicted − measured| / measured
  double Quantile(double q) const {
    if (errors.empty()) return 0;
    std::vector<double> v = errors;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
  }
};

PerStep ReplayEachStep(const Loaded& l) {
  PerStep ps;
  for (int64_t n : l.model.steps) {
    dfg::TraceModelOptions o = l.options;
    o.first_step = o.last_step = n;
    o.skip_first = 0;
    o.kappa = l.model.spec.kappa;
    o.link_alpha_ns = l.model.spec.alpha_ns;
    o.link_ns_per_byte = l.model.spec.ns_per_byte;
    auto m = dfg::BuildModelFromTraces(l.traces, l.match, o);
    if (!m.ok() || m->measured_iteration_ns <= 0) continue;
    for (size_t r = 0; r < m->spec.ranks.size(); ++r) {
      m->spec.ranks[r].egress_alpha_ns = l.model.spec.ranks[r].egress_alpha_ns;
      m->spec.ranks[r].egress_ns_per_byte = l.model.spec.ranks[r].egress_ns_per_byte;
    }
    auto g = dfg::BuildGraph(m->spec);
    if (!g.ok()) continue;
    auto r = replay::Replay(*g);
    if (!r.ok()) continue;
    ps.errors.push_back(std::abs(r->iteration_ns - m->measured_iteration_ns) /
                        m->measured_iteration_ns);
  }
  return ps;
}

Status RunReplay(const TraceArgs& a) {
  LOOM_ASSIGN_OR_RETURN(Loaded l, LoadTraceRun(a));
  PrintTraceModel(l);
  LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(l.model.spec));
  LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g));
  const double meas = l.model.measured_iteration_ns;
  const double err = meas > 0 ? (r.iteration_ns - meas) / meas : 0;
  const replay::AnalyticalEstimate an = replay::Analytical(l.model.spec);
  std::printf("measured iteration: %.3f ms (%s of %zu steps)\n", Ms(meas), a.stat.c_str(),
              l.model.steps.size());
  std::printf("predicted iteration: %.3f ms (%zu nodes, %lld events)\n", Ms(r.iteration_ns),
              g.nodes().size(), static_cast<long long>(r.events));
  std::printf("replay error: %+.2f %%\n", 100 * err);
  std::printf(
      "baselines: compute+comm %.3f ms (%+.1f %%), compute+max(0,comm-overlappable) "
      "%.3f ms (%+.1f %%)\n",
      Ms(an.sum_ns), meas > 0 ? 100 * (an.sum_ns - meas) / meas : 0, Ms(an.overlap_ns),
      meas > 0 ? 100 * (an.overlap_ns - meas) / meas : 0);
  std::printf("critical path: %s\n", replay::SummarizeCriticalPath(g, r).c_str());
  const PerStep ps = ReplayEachStep(l);
  if (!ps.errors.empty()) {
    std::printf(
        "per-step replay (each step's own durations; the window's link and kappa): "
        "median |error| %.2f %%, p90 %.2f %%, max %.2f %% over %zu steps\n",
        100 * ps.Quantile(0.5), 100 * ps.Quantile(0.9), 100 * ps.Quantile(1.0), ps.errors.size());
  }
  json doc = {{"command", "trace replay"},
              {"per_step_abs_error",
               {{"median", ps.Quantile(0.5)},
                {"p90", ps.Quantile(0.9)},
                {"max", ps.Quantile(1.0)},
                {"steps", ps.errors.size()}}},
              {"dir", a.dir},
              {"model", ModelJson(l)},
              {"measured_ms", Ms(meas)},
              {"predicted_ms", Ms(r.iteration_ns)},
              {"replay_error", err},
              {"baselines", {{"sum_ms", Ms(an.sum_ns)}, {"overlap_ms", Ms(an.overlap_ns)}}},
              {"critical_path", PathJson(g, r)}};
  return Finish(a, g, r, std::move(doc));
}

Result<whatif::WhatIf> ParseWhatIf(const TraceArgs& a) {
  whatif::WhatIf w;
  if (!a.bandwidth.empty()) {
    std::string s = a.bandwidth;
    if (!s.empty() && (s.back() == 'x' || s.back() == 'X')) s.pop_back();
    char* end = nullptr;
    w.bandwidth_scale = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(w.bandwidth_scale > 0)) {
      return InvalidArgumentError("--bandwidth '" + a.bandwidth + "' is not a factor like 0.5x");
    }
  }
  if (!a.link.empty()) {
    std::smatch m;
    if (!std::regex_match(a.link, m,
                          std::regex(R"(([0-9]*\.?[0-9]+)(?:,([^,]+),([0-9]*\.?[0-9]+))?)"))) {
      return InvalidArgumentError("--link-shape '" + a.link +
                                  "' is not RATE_MBps or RATE_MBps,BURST,LINE_MBps");
    }
    whatif::LinkShape shape{std::stod(m[1]) * 1e6, 0, 0};
    if (m[2].matched) {
      LOOM_ASSIGN_OR_RETURN(int64_t burst, ParseBytes(m[2]));
      shape.burst_bytes = static_cast<double>(burst);
      shape.line_bytes_per_s = std::stod(m[3]) * 1e6;
    }
    w.link_shape = shape;
  }
  if (a.link_alpha_us >= 0) {
    if (!w.link_shape) {
      return InvalidArgumentError("--link-alpha-us needs --link-shape (the link it describes)");
    }
    w.link_shape->alpha_ns = a.link_alpha_us * 1e3;
  }
  if (!a.bucket.empty()) {
    auto b = ParseBytes(a.bucket);
    if (!b.ok() || *b <= 0) {
      return InvalidArgumentError("--bucket '" + a.bucket + "' is not a size like 8MiB");
    }
    w.bucket_bytes = *b;
  }
  if (a.overlap == "on" || a.overlap == "off")
    w.overlap = a.overlap == "on";
  else if (!a.overlap.empty())
    return InvalidArgumentError("--overlap must be on or off");
  for (const std::string& s : a.stragglers) {
    std::smatch m;
    if (!std::regex_match(s, m, std::regex(R"((\d+):([0-9]*\.?[0-9]+)x?)"))) {
      return InvalidArgumentError("--straggler '" + s + "' is not RANK:FACTOR like 1:1.5");
    }
    w.stragglers.push_back({std::stoi(m[1]), std::stod(m[2])});
  }
  w.world_size = a.world;
  if (!a.compress.empty()) {
    double ratio = 0;
    if (a.compress.size() > 1) {
      char* end = nullptr;
      ratio = std::strtod(a.compress[1].c_str(), &end);
      if (*end != '\0' || !(ratio > 0)) {
        return InvalidArgumentError("--compress ratio '" + a.compress[1] + "' is not a number > 0");
      }
    }
    if (!a.codecs_json.empty()) {
      LOOM_ASSIGN_OR_RETURN(w.compression,
                            whatif::CodecFromBenchJson(a.codecs_json, a.compress[0], ratio));
    } else {
      LOOM_ASSIGN_OR_RETURN(w.compression, whatif::DefaultCodec(a.compress[0], ratio));
    }
    w.compress_buckets = a.compress_buckets;
    w.compress_min_elements = a.compress_min_elements;
  }
  return w;
}

Status RunWhatIfCmd(const TraceArgs& a) {
  LOOM_ASSIGN_OR_RETURN(whatif::WhatIf w, ParseWhatIf(a));
  LOOM_ASSIGN_OR_RETURN(Loaded l, LoadTraceRun(a));
  PrintTraceModel(l);
  LOOM_ASSIGN_OR_RETURN(whatif::WhatIfResult r, whatif::RunWhatIf(l.model.spec, w));
  const double meas = l.model.measured_iteration_ns;
  std::printf("what-if: %s\n", w.Describe().c_str());
  std::printf("measured iteration: %.3f ms\n", Ms(meas));
  std::printf("predicted base: %.3f ms (replay error %+.2f %%)\n", Ms(r.base.iteration_ns),
              meas > 0 ? 100 * (r.base.iteration_ns - meas) / meas : 0);
  std::printf("predicted what-if: %.3f ms (%+.1f %% vs base)\n", Ms(r.predicted.iteration_ns),
              r.base.iteration_ns > 0
                  ? 100 * (r.predicted.iteration_ns - r.base.iteration_ns) / r.base.iteration_ns
                  : 0);
  std::printf(
      "baselines (what-if): compute+comm %.3f ms, compute+max(0,comm-overlappable) %.3f ms\n",
      Ms(r.analytical.sum_ns), Ms(r.analytical.overlap_ns));
  std::printf("critical path (base): %s\n",
              replay::SummarizeCriticalPath(r.base_graph, r.base).c_str());
  std::printf("critical path (what-if): %s\n",
              replay::SummarizeCriticalPath(r.graph, r.predicted).c_str());
  json doc = {{"command", "trace whatif"},
              {"dir", a.dir},
              {"whatif", w.Describe()},
              {"model", ModelJson(l)},
              {"measured_ms", Ms(meas)},
              {"base_ms", Ms(r.base.iteration_ns)},
              {"predicted_ms", Ms(r.predicted.iteration_ns)},
              {"speedup", r.speedup()},
              {"baselines",
               {{"sum_ms", Ms(r.analytical.sum_ns)}, {"overlap_ms", Ms(r.analytical.overlap_ns)}}},
              {"critical_path", PathJson(r.graph, r.predicted)},
              {"base_critical_path", PathJson(r.base_graph, r.base)}};
  return Finish(a, r.graph, r.predicted, std::move(doc));
}

// `loom trace export-dfg <dir> <out.json>`: the global DFG `loom trace replay` builds and replays,
// as neutral JSON (loom/trace/replay/dfg_json.h) for peer replayers such as dPRO's
// (scripts/peers/dpro_replay.py), with loom's replay, the measured iteration and the baselines.
struct ExportDfgArgs : TraceRunArgs {
  std::string out;
};

Status RunExportDfg(const ExportDfgArgs& a) {
  LOOM_ASSIGN_OR_RETURN(Loaded l, LoadTraceRun(a));
  PrintTraceModel(l);
  LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(l.model.spec));
  LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g));
  const replay::AnalyticalEstimate an = replay::Analytical(l.model.spec);
  const replay::DfgJsonInfo info{.source = a.dir,
                                 .measured_iteration_ns = l.model.measured_iteration_ns,
                                 .baseline_sum_ns = an.sum_ns,
                                 .baseline_overlap_ns = an.overlap_ns};
  LOOM_RETURN_IF_ERROR(replay::WriteDfgJson(g, &r, info, a.out));
  std::printf("measured iteration: %.3f ms; loom replay: %.3f ms\n",
              Ms(l.model.measured_iteration_ns), Ms(r.iteration_ns));
  std::printf("wrote %s (%zu nodes, %zu edges, %zu devices, %zu links)\n", a.out.c_str(),
              g.nodes().size(), g.edges().size(), g.devices().size(), g.links().size());
  return OkStatus();
}

void AddCommon(CLI::App* cmd, TraceArgs* a) {
  AddTraceRunOptions(cmd, a);
  cmd->add_option("--json", a->json_out, "write the result as JSON");
  cmd->add_option("--trace-out", a->trace_out, "write the replay as a Kineto JSON trace");
}

int Report(const Status& s, const char* what) {
  if (s.ok()) return 0;
  std::fprintf(stderr, "loom trace %s: %s\n", what, s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitUsage
             : kExitFailure;
}

}  // namespace

void RegisterTrace(CLI::App& trace, CliContext* ctx) {
  auto ra = std::make_shared<TraceArgs>();
  auto* rep =
      trace.add_subcommand("replay", "replay a traced run: measured vs predicted iteration");
  AddCommon(rep, ra.get());
  rep->callback([ra, ctx] { ctx->exit_code = Report(RunReplay(*ra), "replay"); });

  auto wa = std::make_shared<TraceArgs>();
  auto* wi = trace.add_subcommand("whatif", "predict a traced run under another configuration");
  AddCommon(wi, wa.get());
  wi->add_option("--bandwidth", wa->bandwidth, "scale link bandwidth, e.g. 0.5x");
  wi->add_option("--link-shape", wa->link,
                 "replace every link: RATE_MBps (payload) or RATE_MBps,BURST,LINE_MBps (a tc tbf "
                 "token bucket over a LINE_MBps link), e.g. 119.5,256KiB,300");
  wi->add_option("--link-alpha-us", wa->link_alpha_us,
                 "with --link-shape: the new links' per-message latency in us (default: the "
                 "profile's fitted alpha)");
  wi->add_option("--bucket", wa->bucket,
                 "regroup gradients into buckets of at most this, e.g. 8MiB");
  wi->add_option("--overlap", wa->overlap, "on or off: overlap communication with backward");
  wi->add_option("--straggler", wa->stragglers, "RANK:FACTOR slows a rank's compute (repeatable)");
  wi->add_option("--world", wa->world, "extrapolate to this many ranks");
  wi->add_option("--compress", wa->compress, "CODEC [RATIO]: none, fp16, bf16, int8, int4")
      ->expected(1, 2);
  wi->add_option("--codecs-json", wa->codecs_json,
                 "`loom bench codecs --json` file for codec costs");
  wi->add_option("--compress-buckets", wa->compress_buckets, "only these bucket indices")
      ->delimiter(',');
  wi->add_option("--compress-min-elements", wa->compress_min_elements,
                 "buckets under this many elements stay uncompressed, as the trainer's "
                 "compress.min_elements (default 65536; 0 = compress all)");
  wi->callback([wa, ctx] { ctx->exit_code = Report(RunWhatIfCmd(*wa), "whatif"); });

  auto da = std::make_shared<ExportDfgArgs>();
  auto* dx = trace.add_subcommand(
      "export-dfg", "write the global DFG of a traced run as JSON (for peer replayers, e.g. dPRO)");
  AddTraceRunOptions(dx, da.get());
  dx->add_option("out", da->out, "output JSON path")->required();
  dx->callback([da, ctx] { ctx->exit_code = Report(RunExportDfg(*da), "export-dfg"); });

  // Chakra execution traces (ASTRA-sim's input) from any ingest dialect: <prefix>.<rank>.et.
  auto ea = std::make_shared<std::pair<std::string, std::string>>();
  auto* ex = trace.add_subcommand("export-chakra",
                                  "write Chakra execution traces (<prefix>.<rank>.et) of a run");
  ex->add_option("dir", ea->first, "directory with the per-rank trace JSON files")->required();
  ex->add_option("prefix", ea->second, "output path prefix")->required();
  ex->callback([ea, ctx] {
    Status s = [&]() -> Status {
      LOOM_ASSIGN_OR_RETURN(std::vector<trace::ingest::RankTrace> traces,
                            trace::ingest::ReadTraceDir(ea->first));
      const std::string parent = std::filesystem::path(ea->second).parent_path().string();
      if (!parent.empty()) LOOM_RETURN_IF_ERROR(MakeDirs(parent));
      LOOM_RETURN_IF_ERROR(trace::chakra::ExportChakraAll(traces, ea->second, {}));
      for (const auto& t : traces) {
        std::printf("%s\n", trace::chakra::ChakraRankPath(ea->second, t.rank).c_str());
      }
      return OkStatus();
    }();
    ctx->exit_code = Report(s, "export-chakra");
  });
}

}  // namespace loom::cli
