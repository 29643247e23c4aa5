// `loom bench ckpt`: see bench_ckpt.h. Arms are interleaved per repetition (loom, DCP-1.13,
// torch.save, gather-to-rank-0); medians and p10/p90 over repetitions are reported, each also as
// a fraction of the same run's memcpy / O_DIRECT probes, with the targets.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/cli/bench_ckpt.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"

namespace loom::cli {
namespace {

using nlohmann::json;

struct BenchCkptArgs {
  int64_t total_mib = 1024;
  int64_t hidden = 1024;
  int reps = 3;
  int nproc = 2;
  std::string workloads = "dense,flat";
  std::string peers = "dcp,torchsave,gather0";
  std::string dir;
  std::string python = "/usr/bin/python3";
  std::string peer = std::string(LOOM_SOURCE_DIR) + "/bench/ckpt_peer.py";
  std::string json;
  bool worker = false;
  BenchCkptWorkerArgs w;
};

// The last line of `log` that is a JSON object (the peer prints its result last).
Result<json> LastJsonLine(const std::string& log) {
  std::ifstream in(log);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    const size_t brace = line.find("{\"");  // the launcher may prefix "[rank 0] "
    if (brace != std::string::npos) last = line.substr(brace);
  }
  json j = json::parse(last, nullptr, false);
  if (j.is_discarded()) return InternalError("no JSON result in " + log);
  return j;
}

// Values of `key` over reps (loom results: a JSON pointer; peers: an array per rep).
struct Series {
  std::map<std::string, std::vector<double>> v;
  void Add(const std::string& k, double x) { v[k].push_back(x); }
  double Median(const std::string& k) const {
    auto it = v.find(k);
    return it == v.end() ? 0 : Summarize(it->second).median;
  }
  json ToJson() const {
    json j = json::object();
    for (const auto& [k, xs] : v) {
      Stats s = Summarize(xs);
      j[k] = {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"n", s.n}};
    }
    return j;
  }
};

void AddLoom(const json& r, Series* s) {
  s->Add("stall_first_s", r["saves"][0]["stall_s"]);
  s->Add("persist_first_s", r["saves"][0]["persist_s"]);
  s->Add("plan_first_s", r["saves"][0]["plan_s"]);
  s->Add("stall_s", r["saves"][1]["stall_s"]);
  s->Add("persist_s", r["saves"][1]["persist_s"]);
  s->Add("plan_cached_s", r["saves"][1]["plan_s"]);
  s->Add("plan_gathers", r["plan_gathers"]);
  s->Add("load_cold_s", r["load_cold_s"]);
  s->Add("load_warm_s", r["load_warm_s"]);
  s->Add("load_read_amplification", r["load_read_amplification"]);
  s->Add("peak_rss_kib", r["peak_rss_kib"]);
  s->Add("bytes", r["bytes"]);
  s->Add("files", r["files"]);
  for (const auto& [k, v] : r["probe"].items()) s->Add("probe." + k, v);
  for (const auto& [k, v] : r["reshard"].items()) {
    s->Add("reshard." + k + ".s", v["s"]);
    s->Add("reshard." + k + ".amp", v["read_amplification"]);
  }
  if (r.contains("hf")) {
    s->Add("hf.export_s", r["hf"]["export_s"]);
    for (const char* k : {"hf_to_tp2", "hf_to_tp2/coop", "hf_full_read", "hf_full_read/coop"}) {
      s->Add(std::string("hf.") + k + ".s", r["hf"][k]["s"]);
      s->Add(std::string("hf.") + k + ".amp", r["hf"][k]["read_amplification"]);
    }
  }
}

void AddPeer(const json& r, Series* s) {
  for (const char* k : {"save_s", "stall_s", "load_warm_s", "load_cold_s", "reshard_load_s"}) {
    if (r.contains(k)) {
      for (double x : r[k]) s->Add(k, x);
    }
  }
  s->Add("peak_rss_kib", r.value("peak_rss_kib", 0.0));
  s->Add("bytes", r.value("bytes", 0.0));
  s->Add("files", r.value("files", 0.0));
}

double GBs(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0; }

int Run(const BenchCkptArgs& a) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench ckpt: %s\n", s.ToString().c_str());
    return kExitFailure;
  };
  const std::string dir =
      a.dir.empty() ? "/tmp/loom-bench-ckpt-" + std::to_string(::getpid()) : a.dir;
  if (Status s = MakeDirs(dir); !s.ok()) return fail(s);
  const auto peers = Split(a.peers);
  if (!peers.empty() && !PathExists(a.peer)) {
    return fail(NotFoundError("peer script " + a.peer + " (use --peer, or --peers '')"));
  }
  json config = {{"total_mib", a.total_mib}, {"hidden", a.hidden}, {"reps", a.reps},
                 {"nproc", a.nproc},         {"workloads", a.workloads}, {"peers", a.peers},
                 {"dir", dir},               {"peer_script", a.peer}};
  PrintBenchHeader("ckpt", config);
  std::map<std::string, Series> series;  // "<workload>/<impl>"
  json raw = json::array();
  for (int rep = 0; rep < a.reps; ++rep) {
    for (const std::string& w : Split(a.workloads)) {
      const std::string out = dir + "/loom-" + w + ".json";
      comm::LaunchOptions lo;
      lo.nproc = a.nproc;
      lo.argv = {SelfExe(), "bench", "ckpt", "--worker", "--workload", w,
                 "--total-mib", std::to_string(a.total_mib), "--hidden", std::to_string(a.hidden),
                 "--dir", dir, "--rep", std::to_string(rep), "--worker-out", out};
      std::fprintf(stderr, "rep %d/%d %s: loom\n", rep + 1, a.reps, w.c_str());
      if (Status s = RunArm("loom", lo, dir + "/loom-" + w + ".log"); !s.ok()) return fail(s);
      auto text = ReadFileToString(out);
      if (!text.ok()) return fail(text.status());
      json r = json::parse(*text);
      AddLoom(r, &series[w + "/loom"]);
      raw.push_back({{"rep", rep}, {"impl", "loom"}, {"workload", w}, {"result", r}});
      for (const std::string& p : peers) {
        if (p == "gather0" && w == "dense") continue;  // the status quo for flat ZeRO state only
        std::fprintf(stderr, "rep %d/%d %s: %s\n", rep + 1, a.reps, w.c_str(), p.c_str());
        comm::LaunchOptions po;
        po.nproc = 1;
        po.argv = {a.python, a.peer, "--peer", p, "--workload", w, "--dir", dir + "/peer",
                   "--total-mib", std::to_string(a.total_mib), "--hidden",
                   std::to_string(a.hidden), "--reps", "1", "--world", std::to_string(a.nproc)};
        const std::string log = dir + "/peer-" + p + "-" + w + ".log";
        if (Status s = RunArm(p, po, log); !s.ok()) return fail(s);
        auto pr = LastJsonLine(log);
        if (!pr.ok()) return fail(pr.status());
        AddPeer(*pr, &series[w + "/" + p]);
        raw.push_back({{"rep", rep}, {"impl", p}, {"workload", w}, {"result", *pr}});
      }
    }
  }

  // Probes: medians over every loom run.
  Series probes;
  for (auto& [key, s] : series) {
    if (!key.ends_with("/loom")) continue;
    for (const auto& [k, xs] : s.v) {
      if (k.starts_with("probe.")) probes.v[k].insert(probes.v[k].end(), xs.begin(), xs.end());
    }
  }
  const double pb = probes.Median("probe.probe_bytes");
  const double memcpy_gbs = GBs(pb, probes.Median("probe.memcpy_warm_s"));
  const double first_touch_gbs = GBs(pb, probes.Median("probe.memcpy_first_touch_s"));
  const double write_gbs = GBs(pb, probes.Median("probe.odirect_write_s"));
  const double read_gbs = GBs(pb, probes.Median("probe.odirect_read_s"));
  std::printf("\nlimits (same run, %d ranks x %.0f MiB each): memcpy warm %.2f GB/s, "
              "memcpy into fresh pages %.2f GB/s, O_DIRECT write %.2f GB/s, O_DIRECT read "
              "%.2f GB/s\n", a.nproc, pb / a.nproc / 1048576, memcpy_gbs, first_touch_gbs,
              write_gbs, read_gbs);

  std::printf("\n%-6s %-10s %9s %9s %9s %9s %9s %9s %9s %6s\n", "work", "impl", "stall s",
              "persist s", "save GB/s", "cold s", "cold GB/s", "warm s", "RSS MiB", "files");
  for (const std::string& w : Split(a.workloads)) {
    for (const std::string& impl : std::vector<std::string>{"loom", "dcp", "torchsave", "gather0"}) {
      auto it = series.find(w + "/" + impl);
      if (it == series.end()) continue;
      const Series& s = it->second;
      const double bytes = s.Median("bytes");
      const bool loom = impl == "loom";
      const double stall = s.Median("stall_s");
      const double persist = loom ? s.Median("persist_s") : s.Median("save_s");
      std::printf("%-6s %-10s %9.3f %9.3f %9.2f %9.3f %9.2f %9.3f %9.0f %6.0f\n", w.c_str(),
                  impl.c_str(), stall, persist, GBs(bytes, persist), s.Median("load_cold_s"),
                  GBs(bytes, s.Median("load_cold_s")), s.Median("load_warm_s"),
                  s.Median("peak_rss_kib") / 1024, s.Median("files"));
    }
  }

  std::printf("\n%-30s %9s %8s %9s %8s   %s\n", "reshard load (cold)", "indep. s", "read amp",
              "coop. s", "read amp", "peer");
  double amp_max = 0, amp_max_indep = 0;
  for (const auto& [key, s] : series) {
    if (!key.ends_with("/loom")) continue;
    for (const auto& [k, xs] : s.v) {
      if (!k.starts_with("reshard.") || !k.ends_with(".s") || k.find("/coop") != k.npos) continue;
      const std::string name = k.substr(8, k.size() - 10);
      const double amp = s.Median("reshard." + name + ".amp");
      const double coop_amp = s.Median("reshard." + name + "/coop.amp");
      amp_max = std::max(amp_max, coop_amp);
      amp_max_indep = std::max(amp_max_indep, amp);
      std::string peer = "-";
      if (name == "tp2_to_1" && series.count("dense/dcp")) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "dcp-1.13 %.3f s", series["dense/dcp"].Median("reshard_load_s"));
        peer = buf;
      }
      std::printf("%-30s %9.3f %8.3f %9.3f %8.3f   %s\n", (key.substr(0, key.find('/')) + " " + name).c_str(),
                  Summarize(xs).median, amp, s.Median("reshard." + name + "/coop.s"), coop_amp,
                  peer.c_str());
    }
  }
  const Series* dl = series.count("dense/loom") ? &series["dense/loom"] : nullptr;
  if (dl != nullptr && dl->v.count("hf.export_s")) {
    std::printf("safetensors: export %.3f s (%.2f GB/s); TP=2 load from it %.3f s (read amp "
                "%.3f), cooperative %.3f s (read amp %.3f); every rank reading every tensor "
                "%.3f s\n",
                dl->Median("hf.export_s"), GBs(dl->Median("bytes"), dl->Median("hf.export_s")),
                dl->Median("hf.hf_to_tp2.s"), dl->Median("hf.hf_to_tp2.amp"),
                dl->Median("hf.hf_to_tp2/coop.s"), dl->Median("hf.hf_to_tp2/coop.amp"),
                dl->Median("hf.hf_full_read.s"));
  }

  // Summary and targets, on the dense workload (the W1) when measured.
  const std::string w0 = series.count("dense/loom") ? "dense" : Split(a.workloads).front();
  const Series& l = series[w0 + "/loom"];
  const double bytes = l.Median("bytes");
  json summary = {
      {"workload", w0},
      {"stall_vs_memcpy", l.Median("stall_s") / probes.Median("probe.memcpy_warm_s")},
      {"persist_vs_odirect_write", GBs(bytes, l.Median("persist_s")) / write_gbs},
      {"cold_load_vs_odirect_read", GBs(bytes, l.Median("load_cold_s")) / read_gbs},
      {"read_amplification_max", amp_max},
      {"read_amplification_max_independent_reads", amp_max_indep},
      {"plan_first_s", l.Median("plan_first_s")},
      {"plan_cached_s", l.Median("plan_cached_s")},
      {"plan_gathers_per_two_saves", l.Median("plan_gathers")}};
  if (series.count(w0 + "/dcp")) {
    const Series& d = series[w0 + "/dcp"];
    summary["save_speedup_vs_dcp"] = d.Median("save_s") / l.Median("persist_s");
    summary["stall_speedup_vs_dcp"] = d.Median("stall_s") / l.Median("stall_s");
    summary["load_speedup_vs_dcp"] = d.Median("load_cold_s") / l.Median("load_cold_s");
  }
  std::printf("\n%-28s %9s %9s %s\n", ("target (" + w0 + ")").c_str(), "value", "target", "met");
  auto target = [&](const char* name, double target, bool at_most) {
    if (!summary.contains(name)) return;
    const double v = summary[name].get<double>();
    const bool met = at_most ? v <= target : v >= target;
    std::printf("%-28s %9.3f %s%8.2f %s\n", name, v, at_most ? "<=" : ">=", target,
                met ? "yes" : "NO");
  };
  target("stall_vs_memcpy", 1.3, true);
  target("persist_vs_odirect_write", 0.8, false);
  target("cold_load_vs_odirect_read", 0.7, false);
  target("read_amplification_max", 1.05, true);
  target("save_speedup_vs_dcp", 3, false);
  target("load_speedup_vs_dcp", 3, false);
  std::printf("plan: first %.1f ms, cached %.1f ms; plan gathers in 2 saves: %.0f (cached saves "
              "exchange only 24 bytes per rank)\n",
              1e3 * l.Median("plan_first_s"), 1e3 * l.Median("plan_cached_s"),
              l.Median("plan_gathers"));
  if (!a.json.empty()) {
    json results = {{"raw", raw}, {"series", json::object()}};
    for (const auto& [k, s] : series) results["series"][k] = s.ToJson();
    results["probes"] = probes.ToJson();
    if (Status s = WriteBenchJson(a.json, "ckpt", config, summary, results); !s.ok()) {
      return fail(s);
    }
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace

void RegisterBenchCkpt(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand(
      "ckpt", "checkpoint save/load vs PyTorch 1.13 DCP, torch.save and gather-to-rank-0");
  auto a = std::make_shared<BenchCkptArgs>();
  cmd->add_option("--total-mib", a->total_mib, "checkpoint size (params + 2 Adam states)");
  cmd->add_option("--hidden", a->hidden, "model width h");
  cmd->add_option("--reps", a->reps, "repetitions (arms interleaved)");
  cmd->add_option("--nproc", a->nproc, "ranks");
  cmd->add_option("--workloads", a->workloads, "comma-separated: dense,flat");
  cmd->add_option("--peers", a->peers, "comma-separated: dcp,torchsave,gather0 ('' for none)");
  cmd->add_option("--dir", a->dir, "scratch directory on the disk to measure (default /tmp/...)");
  cmd->add_option("--python", a->python, "Python with torch (Debian's /usr/bin/python3)");
  cmd->add_option("--peer", a->peer, "the peer script");
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->add_flag("--worker", a->worker, "internal: run loom's arm as one rank")
      ->group("");
  cmd->add_option("--workload", a->w.workload, "internal")->group("");
  cmd->add_option("--rep", a->w.rep, "internal")->group("");
  cmd->add_option("--worker-out", a->w.out, "internal")->group("");
  cmd->callback([a, ctx] {
    if (a->worker) {
      BenchCkptWorkerArgs w = a->w;
      w.dir = a->dir;
      w.total_mib = a->total_mib;
      w.hidden = a->hidden;
      ctx->exit_code = RunBenchCkptWorker(w);
      return;
    }
    ctx->exit_code = Run(*a);
  });
}

}  // namespace loom::cli
