// `loom bench overlap` (issue 7): tile-level compute-communication overlap (AG+GEMM, GEMM+RS, MoE)
// in modes sequential | decomposed | fused(S) | auto over a paced link at R = t_comm/t_comp in
// {0.25, 0.5, 1, 2} plus the unlimited negative control, interleaved trials, beside the real
// peers (OpenMPI, Gloo over a tc-tbf-shaped veth; scripts/bench/overlap_peers.sh). The work is in
// loom/overlap/bench (worker, metrics, report); this file parses flags, starts the ranks, runs
// the peers and writes the JSON and SVG.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/base/file_util.h"
#include "loom/base/json_util.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/comm/launcher.h"
#include "loom/overlap/bench/bench_config.h"
#include "loom/overlap/bench/bench_worker.h"
#include "loom/overlap/bench/overlap_report.h"
#include "loom/overlap/gemm/gemm_efficiency.h"
#include "loom/base/svg_chart.h"

namespace loom::cli {
namespace {

using nlohmann::json;
using overlap::OverlapBenchConfig;

struct BenchOverlapArgs {
  std::string ops = "ag_gemm,gemm_rs,moe";
  std::string ratios = "0.25,0.5,1,2";
  std::string splits = "1,2,4,8,16";
  int trials = 11;
  int warmup = 2;
  int world = 2;
  bool quick = false;
  bool tiny = false;
  double max_steal = 0.25;
  int64_t moe_tokens = 0;
  bool calibrate_once = false;  // one t_comp calibration per workload instead of one per arm
  bool hold_ratio = false;      // re-size the link before every round from a t_comp estimate
  int hold_ratio_probe_reps = 0;  // 0: the previous round's compute times; N: an N-call probe
  std::string json;
  std::string svg;
  std::string peers = "auto";
  bool peers_quick = false;
  std::string peer_impls = "mpi,mpi_decomposed,gloo,gloo_decomposed,torch_decomposed";
  std::string peers_script = std::string(LOOM_SOURCE_DIR) + "/scripts/bench/overlap_peers.sh";
  std::string dir;
  std::string from_dir;  // re-render from a previous run's --dir (no ranks, no peer runs)
  // Hidden worker mode.
  bool worker = false;
  std::string worker_config;
  std::string worker_dir;
  std::string job;
};

Result<OverlapBenchConfig> MakeConfig(const BenchOverlapArgs& a) {
  OverlapBenchConfig c;
  c.ops.clear();
  for (const std::string& op : Split(a.ops)) {
    LOOM_ASSIGN_OR_RETURN(overlap::BenchOp o, overlap::ParseBenchOp(op));
    c.ops.push_back(o);
  }
  c.ratios.clear();
  for (const std::string& r : Split(a.ratios)) {
    char* end = nullptr;
    const double v = std::strtod(r.c_str(), &end);
    if (end == r.c_str() || *end != '\0') return InvalidArgumentError("bad ratio '" + r + "'");
    c.ratios.push_back(v);
  }
  c.splits.clear();
  for (const std::string& s : Split(a.splits)) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0') return InvalidArgumentError("bad split '" + s + "'");
    c.splits.push_back(static_cast<int32_t>(v));
  }
  c.trials = a.trials;
  c.warmup = a.warmup;
  c.world = a.world;
  c.quick = a.quick || a.tiny;
  c.tiny = a.tiny;
  c.max_steal = a.max_steal;
  c.moe_tokens = a.moe_tokens;
  c.calibrate_each_arm = !a.calibrate_once;
  c.hold_ratio_each_round = a.hold_ratio;
  c.hold_ratio_probe_reps = a.hold_ratio_probe_reps;
  LOOM_RETURN_IF_ERROR(overlap::ValidateConfig(c));
  return c;
}

int RunWorker(const BenchOverlapArgs& a) {
  auto text = ReadFileToString(a.worker_config);
  auto config = text.ok() ? ParseJson(*text, a.worker_config) : Result<json>(text.status());
  Result<OverlapBenchConfig> c = config.ok() ? OverlapBenchConfig::FromJson(*config)
                                             : Result<OverlapBenchConfig>(config.status());
  const char* rank_env = std::getenv("LOOM_RANK");
  const int rank = rank_env ? std::atoi(rank_env) : 0;
  Status s = c.status();
  if (s.ok()) {
    s = overlap::RunOverlapBenchRank(
        *c, {.job = a.job,
             .rank = rank,
             .out_path = a.worker_dir + "/rank" + std::to_string(rank) + ".json"});
  }
  if (!s.ok()) {
    std::fprintf(stderr, "loom bench overlap rank %d: %s\n", rank, s.ToString().c_str());
    return kExitFailure;
  }
  return 0;
}

// Runs the peer script once per workload at that workload's link rates (+ 0 = unshaped).
// Returns a line saying what happened.
std::string RunPeerScript(const BenchOverlapArgs& a, const OverlapBenchConfig& c,
                          const json& report, const std::string& peer_dir) {
  if (::geteuid() != 0) return "peers skipped: not root (network namespaces need CAP_NET_ADMIN)";
  if (std::system("ip netns list >/dev/null 2>&1") != 0) return "peers skipped: no `ip netns`";
  if (!PathExists(a.peers_script)) return "peers skipped: no script at " + a.peers_script;
  int runs = 0, failed = 0;
  for (const json& w : report["workloads"]) {
    const json& wl = w["workload"];
    std::string rates;
    for (const json& arm : w["arms"]) {
      if (!rates.empty()) rates += ",";
      rates += std::to_string(overlap::PeerRateMbps(arm.value("bytes_per_second", 0.0)));
    }
    std::vector<std::string> argv = {"bash",   a.peers_script, "--rate-mbps", rates,
                                     "--out",  peer_dir,       "--op",        wl["op"],
                                     "--impl", a.peer_impls,   "--loom",      SelfExe()};
    const bool quick = c.quick || a.peers_quick;  // the script's --quick: 3 trials, 1024 tokens
    if (quick) argv.push_back("--quick");
    if (wl["op"] == "moe") {
      argv.insert(argv.end(), {"--routing", wl["routing"].get<std::string>(), "--", "--hidden",
                               std::to_string(wl["hidden"].get<int64_t>()), "--ffn",
                               std::to_string(wl["ffn"].get<int64_t>())});
      if (!quick) {
        argv.insert(argv.end(), {"--tokens", std::to_string(wl["tokens_per_rank"].get<int64_t>())});
      }
    } else {
      argv.insert(argv.end(), {"--shape", std::to_string(wl["m_shard"].get<int64_t>()) + "," +
                                              std::to_string(wl["k"].get<int64_t>()) + "," +
                                              std::to_string(wl["n_local"].get<int64_t>())});
    }
    std::fprintf(stderr, "peers: %s at %s Mbit/s\n", wl["name"].get<std::string>().c_str(),
                 rates.c_str());
    const int rc = RunForeground(argv, {});
    if (rc == 77) return "peers skipped: the peer script cannot create namespaces here";
    ++runs;
    if (rc != 0) ++failed;
  }
  return "peers: ran " + std::to_string(runs) + " script invocations (" + std::to_string(failed) +
         " with failed arms), results in " + peer_dir;
}

std::vector<json> ReadPeerDocs(const std::string& dir) {
  std::vector<json> docs;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    auto text = ReadFileToString(e.path().string());
    if (!text.ok()) continue;
    json j = json::parse(*text, nullptr, false);
    if (!j.is_discarded() && j.contains("impl") && j.contains("op")) docs.push_back(std::move(j));
  }
  return docs;
}

Status WriteSvg(const std::string& path, const json& report) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  std::vector<ChartSeries> series;
  int i = 0;
  for (const overlap::SweepSeries& s : overlap::SpeedupSweep(report)) {
    series.push_back({s.name, kColors[i++ % 9], s.points, true});
  }
  const std::string svg = SvgLineChart(
      "loom bench overlap: speedup over sequential vs R = t_comm/t_comp (W=2, link modelled by "
      "the paced proxy)",
      "R = t_comm / t_comp", "speedup over sequential", series, 760, 400);
  return WriteFileAtomic(path, svg);
}

int Run(const BenchOverlapArgs& a) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench overlap: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  };
  Result<OverlapBenchConfig> config = MakeConfig(a);
  if (!a.from_dir.empty()) {  // the recorded run's config wins
    auto doc = ReadJsonFile(a.from_dir + "/config.json");
    config =
        doc.ok() ? OverlapBenchConfig::FromJson(*doc) : Result<OverlapBenchConfig>(doc.status());
  }
  if (!config.ok()) return fail(config.status());
  const OverlapBenchConfig& c = *config;
  if (a.peers != "auto" && a.peers != "none" && !PathExists(a.peers)) {
    return fail(InvalidArgumentError("--peers wants auto, none or an existing directory; '" +
                                     a.peers + "' is none of these"));
  }
  const std::string dir = !a.from_dir.empty() ? a.from_dir
                          : a.dir.empty() ? "/tmp/loom-bench-overlap-" + std::to_string(::getpid())
                                          : a.dir;
  if (Status s = MakeDirs(dir); !s.ok()) return fail(s);
  json config_json = c.ToJson();
  config_json["peers"] = a.peers;
  config_json["dir"] = dir;
  PrintBenchHeader("overlap", config_json);

  // Tile GEMM vs one-call OpenBLAS at 64-row tiles (one core, before the ranks start).
  const int64_t gm = c.quick ? 256 : 1024, gk = c.quick ? 1024 : 2048, gn = c.quick ? 256 : 512;
  auto eff = overlap::MeasureTileGemmVsOpenBlas(gm, gk, gn, 64, c.quick ? 3 : 11);
  if (!eff.ok()) return fail(eff.status());
  std::printf(
      "tile GEMM (%s, packed B) vs one-call OpenBLAS SGEMM at %dx%dx%d, 64-row tiles: "
      "x%.3f\n",
      std::string(overlap::GemmIsaName(eff->ratio_isa)).c_str(), static_cast<int>(gm),
      static_cast<int>(gk), static_cast<int>(gn), eff->ratio);
  std::fflush(stdout);

  // The ranks (or a previous run's raw results with --from-dir).
  if (a.from_dir.empty()) {
    const std::string cfg_path = dir + "/config.json";
    if (Status s = WriteFileAtomic(cfg_path, c.ToJson().dump()); !s.ok()) return fail(s);
    comm::LaunchOptions lo;
    lo.nproc = c.world;
    lo.argv = {
        SelfExe(), "bench",        "overlap", "--worker", "--worker-config",
        cfg_path,  "--worker-dir", dir,       "--job",    "ovb-" + std::to_string(::getpid())};
    lo.env = {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
    auto launched = comm::Launch(lo);
    if (!launched.ok()) return fail(launched.status());
    if (launched->exit_code != 0) {
      return fail(InternalError("a rank failed: " + launched->message));
    }
  }
  std::vector<json> ranks;
  for (int r = 0; r < c.world; ++r) {
    auto doc = ReadJsonFile(dir + "/rank" + std::to_string(r) + ".json");
    if (!doc.ok()) return fail(doc.status());
    ranks.push_back(std::move(*doc));
  }
  auto report = overlap::BuildOverlapReport(c, ranks);
  if (!report.ok()) return fail(report.status());

  // Peers.
  std::string peer_note = "peers: none (--peers none)";
  std::string peer_dir;
  if (a.peers == "auto" && !a.from_dir.empty()) {
    peer_dir = dir + "/peers";  // the recorded run's peer results, if any
    peer_note = "peers: read from " + peer_dir + " (--from-dir)";
  } else if (a.peers == "auto") {
    peer_dir = dir + "/peers";
    (void)MakeDirs(peer_dir);
    peer_note = RunPeerScript(a, c, *report, peer_dir);
  } else if (a.peers != "none") {
    peer_dir = a.peers;
    peer_note = "peers: read from " + peer_dir;
  }
  if (!peer_dir.empty()) {
    const std::vector<json> docs = ReadPeerDocs(peer_dir);
    const int matched = overlap::AttachPeers(&*report, docs);
    peer_note += " (" + std::to_string(matched) + " of " + std::to_string(docs.size()) +
                 " peer results matched a row)";
  }

  json summary = overlap::BuildOverlapSummary(*report, eff->ratio);
  std::printf("%s", overlap::FormatOverlapReport(*report, summary).c_str());
  std::printf("%s\n", peer_note.c_str());
  if (!a.json.empty()) {
    json results = *report;
    results["tile_gemm"] = {{"m", gm},
                            {"k", gk},
                            {"n", gn},
                            {"tile_rows", 64},
                            {"ratio", eff->ratio},
                            {"isa", std::string(overlap::GemmIsaName(eff->ratio_isa))}};
    for (const auto& arm : eff->arms) {
      results["tile_gemm"]["arms"][arm.name] = {{"median_gflops", arm.median_gflops},
                                                {"p25_gflops", arm.p25_gflops},
                                                {"p75_gflops", arm.p75_gflops}};
    }
    results["peers_note"] = peer_note;
    results["link_note"] =
        "the link is modelled: a paced proxy thread per rank copies at B bytes/s chosen so that "
        "t_comm/t_comp = R; `unlimited` is the negative control (memory-speed link)";
    if (Status s = WriteBenchJson(a.json, "overlap", config_json, summary, results); !s.ok()) {
      return fail(s);
    }
    std::printf("wrote %s\n", a.json.c_str());
  }
  if (!a.svg.empty()) {
    if (Status s = WriteSvg(a.svg, *report); !s.ok()) return fail(s);
    std::printf("wrote %s\n", a.svg.c_str());
  }
  return 0;
}

}  // namespace

void RegisterBenchOverlap(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand(
      "overlap",
      "tile-level compute-communication overlap (AG+GEMM, GEMM+RS, MoE) over a "
      "modelled link, vs OpenMPI and Gloo");
  auto a = std::make_shared<BenchOverlapArgs>();
  cmd->add_option("--ops", a->ops, "comma-separated: ag_gemm,gemm_rs,moe");
  cmd->add_option("--ratios", a->ratios,
                  "target R = t_comm/t_comp values (an unlimited arm is always added)");
  CLI::Option* splits =
      cmd->add_option("--splits", a->splits, "fused variants' S (splits per shard)");
  CLI::Option* trials = cmd->add_option("--trials", a->trials, "timed interleaved trials per arm")
                            ->check(CLI::Range(1, 10000));
  CLI::Option* warmup =
      cmd->add_option("--warmup", a->warmup, "untimed trials first")->check(CLI::Range(0, 1000));
  cmd->add_option("--world", a->world, "ranks (processes)")->check(CLI::Range(2, 64));
  cmd->add_flag("--quick", a->quick,
                "smoke test (< 2 min): one small shape per op, 5 trials, 1 warm-up, S in {2, 8} "
                "(unless given)");
  cmd->add_flag("--tiny", a->tiny, "test-only shapes")->group("");
  cmd->add_option("--max-steal", a->max_steal,
                  "drop (and count) trials whose CPU steal fraction exceeds this");
  cmd->add_option("--moe-tokens", a->moe_tokens,
                  "MoE tokens per rank (0: the issue's 4096; --quick: 1024)");
  cmd->add_flag("--calibrate-once", a->calibrate_once,
                "size every arm's link from the workload's one t_comp calibration (default: "
                "re-measure t_comp before each paced arm, so R follows the current GEMM speed)");
  cmd->add_flag("--hold-ratio", a->hold_ratio,
                "re-size the link before every round from a t_comp estimate so R stays near its "
                "target while the GEMM speed drifts");
  cmd->add_option("--hold-ratio-probe-reps", a->hold_ratio_probe_reps,
                  "--hold-ratio's t_comp estimate: 0 (default) the previous round's compute "
                  "times; N > 0 the median of N compute-only calls just before the round")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->add_option("--svg", a->svg, "write the R sweep (speedup over sequential vs R) as SVG");
  cmd->add_option("--peers", a->peers,
                  "auto (run the peer script when root with ip netns) | none | DIR of peer JSONs");
  cmd->add_flag("--peers-quick", a->peers_quick,
                "pass --quick to the peer script (3 trials, 1 warm-up; MoE 1024 tokens, so use "
                "with --moe-tokens 1024)");
  cmd->add_option("--peer-impls", a->peer_impls,
                  "peer implementations for the script (torch_decomposed: Python torch.distributed "
                  "gloo)");
  cmd->add_option("--peers-script", a->peers_script, "the peer script");
  cmd->add_option("--dir", a->dir, "scratch directory (default /tmp/loom-bench-overlap-<pid>)");
  cmd->add_option("--from-dir", a->from_dir,
                  "re-render the report of a previous run from its --dir (rank JSONs, config, "
                  "peers/) without running anything but the tile GEMM measurement");
  cmd->add_flag("--worker", a->worker, "internal: run as one rank")->group("");
  cmd->add_option("--worker-config", a->worker_config, "internal")->group("");
  cmd->add_option("--worker-dir", a->worker_dir, "internal")->group("");
  cmd->add_option("--job", a->job, "internal")->group("");
  cmd->callback([a, ctx, trials, warmup, splits] {
    if (a->worker) {
      ctx->exit_code = RunWorker(*a);
      return;
    }
    if (a->quick) {  // smaller defaults unless given explicitly
      if (trials->count() == 0) a->trials = 5;
      if (warmup->count() == 0) a->warmup = 1;
      if (splits->count() == 0) a->splits = "2,8";
    }
    ctx->exit_code = Run(*a);
  });
}

}  // namespace loom::cli
