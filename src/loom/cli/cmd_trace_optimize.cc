// `loom trace optimize <dir>`: dPRO-style strategy search on the replayer of a traced run —
// simulated annealing over bucket boundaries x per-bucket codec x overlap
// (loom/trace/optimize/optimizer.h), and the exact DP for bucket boundaries alone
// (loom/trace/optimize/fusion_dp.h). Prints base vs best predicted iteration time, the chosen
// strategy, replays and search time.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/cli/commands.h"
#include "loom/cli/trace_run_loader.h"
#include "loom/trace/optimize/fusion_dp.h"
#include "loom/trace/optimize/optimizer.h"

namespace loom::cli {
namespace {

namespace dfg = trace::dfg;
namespace opt = trace::optimize;
using nlohmann::json;

struct OptimizeArgs : TraceRunArgs {
  std::vector<std::string> codecs{"none", "fp16", "int8", "int4"};
  std::string codec_bench;
  int max_replays = 400;
  uint64_t seed = 1;
  double time_budget_s = 60;
  bool no_overlap_search = false;
  bool seed_with_dp = false;
  bool no_dp = false;
  std::string json_out;
};

double Ms(double ns) { return ns / 1e6; }

json StrategyJson(const dfg::ModelSpec& base, const opt::Strategy& s) {
  return {{"buckets", s.num_buckets()},
          {"bucket_begin", s.bucket_begin},
          {"bucket_bytes", s.BucketBytes(base)},
          {"codecs", s.codecs},
          {"overlap", s.overlap},
          {"describe", s.Describe(base)}};
}

// The fusion-only DP on the traced model; its failure is a note, not an error.
json RunFusionDp(const dfg::ModelSpec& spec, double base_ns) {
  auto plan = opt::OptimalFusion(spec);
  if (!plan.ok()) {
    std::printf("fusion-only DP: not run (%s)\n", plan.status().message().c_str());
    return {{"error", plan.status().message()}};
  }
  opt::Strategy s = opt::Strategy::FromSpec(spec);
  s.bucket_begin = plan->bucket_begin;
  s.codecs.assign(s.num_buckets(), spec.bucket_codec.empty() ? "none" : spec.bucket_codec[0].name);
  std::printf("fusion-only DP: %.3f ms replayed (%+.1f%% vs base), %s; %s; %d bucket replays, "
              "%.3f s\n",
              Ms(plan->replayed_ns), 100 * (plan->replayed_ns / base_ns - 1),
              s.Describe(spec).c_str(),
              plan->exact ? "exact for this model" : ("heuristic: " + plan->inexact_reason).c_str(),
              plan->bucket_replays, plan->search_seconds);
  return {{"replayed_ms", Ms(plan->replayed_ns)},
          {"objective_ms", Ms(plan->objective_ns)},
          {"strategy", StrategyJson(spec, s)},
          {"exact", plan->exact},
          {"inexact_reason", plan->inexact_reason},
          {"bucket_replays", plan->bucket_replays},
          {"search_seconds", plan->search_seconds}};
}

Status RunOptimize(const OptimizeArgs& a) {
  LOOM_ASSIGN_OR_RETURN(LoadedTraceRun l, LoadTraceRun(a));
  PrintTraceModel(l);
  const dfg::ModelSpec& spec = l.model.spec;
  opt::OptimizeOptions o;
  o.space.codecs = a.codecs;
  o.space.try_overlap_off = !a.no_overlap_search;
  LOOM_ASSIGN_OR_RETURN(o.codec_models, opt::CodecTable::Load(a.codecs, a.codec_bench));
  o.seed = a.seed;
  o.max_replays = a.max_replays;
  o.time_budget_s = a.time_budget_s;
  o.seed_with_fusion_dp = a.seed_with_dp;
  LOOM_ASSIGN_OR_RETURN(opt::SearchResult r, opt::Optimize(spec, o));

  const double meas = l.model.measured_iteration_ns;
  std::printf("base:      %.3f ms predicted (measured %.3f ms): %s\n", Ms(r.base_ns), Ms(meas),
              r.base.Describe(spec).c_str());
  std::printf("best:      %.3f ms predicted (%+.1f%%, %.3fx): %s\n", Ms(r.predicted_ns),
              100 * (r.predicted_ns / r.base_ns - 1), r.speedup(), r.best.Describe(spec).c_str());
  std::printf("search:    simulated annealing, %d replays, %d steps, %zu accepted moves, %.3f s "
              "(seed %llu, codecs",
              r.replays, r.steps, r.accepted.size(), r.search_seconds,
              static_cast<unsigned long long>(a.seed));
  for (const std::string& c : a.codecs) std::printf(" %s", c.c_str());
  std::printf("%s)\n", a.codec_bench.empty() ? ", assumed codec costs" : ", measured codec costs");
  json dp = a.no_dp ? json(nullptr) : RunFusionDp(spec, r.base_ns);

  if (!a.json_out.empty()) {
    json moves = json::array();
    for (const opt::AcceptedMove& m : r.accepted) {
      moves.push_back({{"step", m.step},
                       {"move", m.move},
                       {"cost_ms", Ms(m.cost_ns)},
                       {"improved_best", m.improved_best}});
    }
    json codecs = json::array();
    for (const dfg::CodecModel& c : o.codec_models.models) {
      codecs.push_back({{"name", c.name},
                        {"ratio", c.ratio},
                        {"encode_a_ns", c.encode_a_ns},
                        {"encode_ns_per_elem", c.encode_ns_per_elem},
                        {"decode_a_ns", c.decode_a_ns},
                        {"decode_ns_per_elem", c.decode_ns_per_elem}});
    }
    json doc = {{"dir", a.dir},
                {"measured_ms", Ms(meas)},
                {"base_ms", Ms(r.base_ns)},
                {"predicted_ms", Ms(r.predicted_ns)},
                {"speedup", r.speedup()},
                {"base", StrategyJson(spec, r.base)},
                {"best", StrategyJson(spec, r.best)},
                {"replays", r.replays},
                {"steps", r.steps},
                {"search_seconds", r.search_seconds},
                {"seed", a.seed},
                {"codec_models", codecs},
                {"codec_costs", a.codec_bench.empty() ? "assumed" : a.codec_bench},
                {"accepted", moves},
                {"fusion_dp", dp}};
    LOOM_RETURN_IF_ERROR(WriteFileAtomic(a.json_out, doc.dump(2) + "\n"));
    std::printf("wrote %s\n", a.json_out.c_str());
  }
  return OkStatus();
}

}  // namespace

void RegisterTraceOptimize(CLI::App& trace, CliContext* ctx) {
  auto a = std::make_shared<OptimizeArgs>();
  auto* cmd = trace.add_subcommand(
      "optimize", "search bucket boundaries x codecs x overlap on the replayer of a traced run");
  AddTraceRunOptions(cmd, a.get());
  cmd->add_option("--codecs", a->codecs, "per-bucket codec choices (none,fp16,int8,int4)")
      ->delimiter(',');
  cmd->add_option("--codec-bench", a->codec_bench,
                  "`loom bench codecs --json` file for measured codec costs");
  cmd->add_option("--max-replays", a->max_replays, "distinct strategies replayed (400)");
  cmd->add_option("--seed", a->seed, "annealing seed (1)");
  cmd->add_option("--time-budget", a->time_budget_s, "search wall-clock cap in seconds (60)");
  cmd->add_flag("--no-overlap-search", a->no_overlap_search, "never try overlap off");
  cmd->add_flag("--seed-with-dp", a->seed_with_dp, "start the annealing at the fusion DP's buckets");
  cmd->add_flag("--no-dp", a->no_dp, "skip the fusion-only DP");
  cmd->add_option("--json", a->json_out, "write the result as JSON");
  cmd->callback([a, ctx] {
    const Status s = RunOptimize(*a);
    if (s.ok()) {
      ctx->exit_code = 0;
      return;
    }
    std::fprintf(stderr, "loom trace optimize: %s\n", s.ToString().c_str());
    ctx->exit_code = s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
                         ? kExitUsage
                         : kExitFailure;
  });
}

}  // namespace loom::cli
