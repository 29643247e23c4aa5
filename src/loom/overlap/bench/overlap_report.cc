#include "loom/overlap/bench/overlap_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "loom/overlap/bench/bench_metrics.h"
#include "loom/overlap/bench/json_fields.h"
#include "loom/overlap/bench/own_ratio.h"

namespace loom::overlap {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json QuartilesJson(const std::vector<double>& v) {
  Quartiles q = ComputeQuartiles(v);
  return {{"median", JsonNumber(q.median)},
          {"p25", JsonNumber(q.p25)},
          {"p75", JsonNumber(q.p75)},
          {"iqr", JsonNumber(q.iqr)},
          {"n", q.n}};
}

// Every numeric field of `b` maxed into `a` (recursively); strings kept from `a` (rank 0).
void MaxInto(json& a, const json& b) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key())) {
      a[it.key()] = *it;
    } else if (it->is_object()) {
      MaxInto(a[it.key()], *it);
    } else if (it->is_number() && a[it.key()].is_number()) {
      a[it.key()] = std::max(a[it.key()].get<double>(), it->get<double>());
    }
  }
}

OverlapMode ModeOf(const std::string& resolved) {
  auto mode = ParseOverlapMode(resolved.substr(0, resolved.find('/')));
  return mode.ok() ? *mode : OverlapMode::kAuto;
}

int SplitsOf(const std::string& variant, int auto_splits) {
  if (variant.rfind("fused_s", 0) == 0) return std::atoi(variant.c_str() + 7);
  if (variant.rfind("layers_s", 0) == 0) return std::atoi(variant.c_str() + 8);
  return variant == "auto" ? auto_splits : 1;
}

double Med(const json& stats) { return JsonDouble(stats, "median"); }

}  // namespace

json AnalyzeArm(const json& arm, BenchOp op, int world, double max_steal,
                const std::vector<std::string>& variants) {
  const json& trials = arm.at("trials");
  std::vector<size_t> keep;
  int dropped = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (JsonDouble(trials[i], "steal") > max_steal) {
      ++dropped;
    } else {
      keep.push_back(i);
    }
  }
  const bool filter_off = keep.empty() && !trials.empty();
  if (filter_off) {
    for (size_t i = 0; i < trials.size(); ++i) keep.push_back(i);
    dropped = 0;
  }
  std::vector<double> tc, tm, steal, load;
  for (size_t i : keep) {
    tc.push_back(JsonDouble(trials[i], "t_comp_s"));
    tm.push_back(JsonDouble(trials[i], "t_comm_s"));
    steal.push_back(JsonDouble(trials[i], "steal"));
    load.push_back(JsonDouble(trials[i], "loadavg"));
  }
  auto times = [&](const std::string& v, const char* field) {
    std::vector<double> t;
    for (size_t i : keep) t.push_back(JsonDouble(trials[i]["x"][v], field));
    return t;
  };
  const std::vector<double> seq = times("sequential", "wall_s");
  const std::vector<double> dec = times("decomposed", "wall_s");
  int auto_splits = 1;
  json out = {{"dropped_trials", dropped},      {"kept_trials", keep.size()},
              {"steal_filter_off", filter_off}, {"t_comp_s", QuartilesJson(tc)},
              {"t_comm_s", QuartilesJson(tm)},  {"steal", QuartilesJson(steal)},
              {"loadavg", QuartilesJson(load)}, {"variants", json::object()}};
  const double r_measured = Med(out["t_comm_s"]) / Med(out["t_comp_s"]);
  out["ratio_measured"] = JsonNumber(r_measured);
  const json resolved = arm.value("resolved_mode", json::object());
  if (arm.contains("auto_splits")) auto_splits = arm["auto_splits"];
  std::string best_fused;
  double best_fused_t = std::numeric_limits<double>::infinity();
  for (const std::string& v : variants) {
    const std::vector<double> tx = times(v, "wall_s");
    const std::vector<double> proxy = times(v, "proxy_cpu_s");
    const std::string mode_name = resolved.value(v, v);
    const OverlapMode mode = ModeOf(mode_name);
    const int splits = SplitsOf(v, auto_splits);
    std::vector<double> e, exposed, frac, frac_var, duty;
    for (size_t i = 0; i < tx.size(); ++i) {
      e.push_back(OverlapEfficiency(tc[i], tm[i], tx[i]));
      exposed.push_back(ExposedComm(tx[i], tc[i]));
      frac.push_back(FractionOfIdeal(tc[i], tm[i], tx[i]));
      frac_var.push_back(VariantIdealSeconds(op, mode, splits, tc[i], tm[i], world) / tx[i]);
      duty.push_back(tx[i] > 0 ? proxy[i] / tx[i] : kNaN);
    }
    json m = {
        {"t_x_s", QuartilesJson(tx)},
        {"efficiency", JsonNumber(Quantile(e, 0.5))},
        {"exposed_comm_s", JsonNumber(Quantile(exposed, 0.5))},
        {"speedup_vs_sequential", JsonNumber(Quantile(Ratios(seq, tx), 0.5))},
        {"speedup_vs_decomposed", JsonNumber(Quantile(Ratios(dec, tx), 0.5))},
        {"fraction_of_ideal", JsonNumber(Quantile(frac, 0.5))},
        {"fraction_of_variant_ideal", JsonNumber(Quantile(frac_var, 0.5))},
        {"variant_ideal_s", JsonNumber(VariantIdealSeconds(op, mode, splits, Med(out["t_comp_s"]),
                                                           Med(out["t_comm_s"]), world))},
        {"proxy_duty", JsonNumber(Quantile(duty, 0.5))},
        {"mode_run", mode_name},
        {"per_trial", {{"t_x_s", tx}, {"efficiency", e}}}};
    const double med = Med(m["t_x_s"]);
    if (v.rfind("fused_s", 0) == 0 && med < best_fused_t) {
      best_fused_t = med;
      best_fused = v;
    }
    out["variants"][v] = std::move(m);
  }
  out["best_fused"] = best_fused;
  if (!best_fused.empty()) out["variants"]["fused_best"] = out["variants"][best_fused];
  // The R each trial really ran at, and fused/decomposed against the closed form at that R.
  out["own_ratio"] = AnalyzeOwnRatio(trials, keep, op, world, variants, RatioBand{});
  if (!best_fused.empty()) {
    out["own_ratio"]["pairs"]["fused_best"] = out["own_ratio"]["pairs"][best_fused];
  }
  return out;
}

Result<json> BuildOverlapReport(const OverlapBenchConfig& config, const std::vector<json>& ranks) {
  if (static_cast<int>(ranks.size()) != config.world) {
    return InvalidArgumentError("bench overlap: expected " + std::to_string(config.world) +
                                " rank results, got " + std::to_string(ranks.size()));
  }
  std::vector<const json*> by_rank(config.world, nullptr);
  for (const json& r : ranks) {
    const int rank = r.value("rank", -1);
    if (rank < 0 || rank >= config.world || by_rank[rank] != nullptr) {
      return InvalidArgumentError("bench overlap: bad or repeated rank " + std::to_string(rank));
    }
    by_rank[rank] = &r;
  }
  json report = {{"config", config.ToJson()}, {"workloads", json::array()}};
  const json& w0 = by_rank[0]->at("workloads");
  for (size_t wi = 0; wi < w0.size(); ++wi) {
    json w = w0[wi];
    auto op = ParseBenchOp(w["workload"]["op"].get<std::string>());
    LOOM_RETURN_IF_ERROR(op.status());
    const std::vector<std::string> variants = w["variants"];
    for (size_t ai = 0; ai < w["arms"].size(); ++ai) {
      json& arm = w["arms"][ai];
      for (int r = 1; r < config.world; ++r) {
        const json& other = by_rank[r]->at("workloads").at(wi).at("arms").at(ai);
        if (other["trials"].size() != arm["trials"].size()) {
          return InvalidArgumentError("bench overlap: rank " + std::to_string(r) +
                                      " has a different trial count in " +
                                      w["workload"]["name"].get<std::string>());
        }
        for (size_t t = 0; t < arm["trials"].size(); ++t)
          MaxInto(arm["trials"][t], other["trials"][t]);
      }
      std::vector<int32_t> sorted = config.splits;
      std::sort(sorted.begin(), sorted.end());
      arm["auto_splits"] = sorted[sorted.size() / 2];
      arm["metrics"] = AnalyzeArm(arm, *op, config.world, config.max_steal, variants);
    }
    report["workloads"].push_back(std::move(w));
  }
  return report;
}

int64_t PeerRateMbps(double bytes_per_second) {
  if (!(bytes_per_second > 0)) return 0;
  return std::max<int64_t>(1, std::llround(bytes_per_second * 8 / 1e6));
}

namespace {

bool PeerMatchesWorkload(const json& peer, const json& w) {
  if (peer.value("op", "") != w.value("op", "")) return false;
  const json& s = peer.value("shape", json::object());
  if (w["op"] == "moe") {
    return s.value("routing", "") == w.value("routing", "") &&
           s.value("hidden", -1) == w.value("hidden", -2) &&
           s.value("ffn", -1) == w.value("ffn", -2) &&
           s.value("tokens_per_rank", -1) == w.value("tokens_per_rank", -2);
  }
  return s.value("m_shard", -1) == w.value("m_shard", -2) && s.value("k", -1) == w.value("k", -2) &&
         s.value("n_local", -1) == w.value("n_local", -2);
}

}  // namespace

int AttachPeers(json* report, const std::vector<json>& peer_docs) {
  int matched = 0;
  for (const json& p : peer_docs) {
    const bool unshaped = !p.contains("rate_mbps") || p["rate_mbps"].is_null();
    const double rate = unshaped ? 0 : p["rate_mbps"].get<double>();
    bool hit = false;
    for (json& w : (*report)["workloads"]) {
      if (!PeerMatchesWorkload(p, w["workload"])) continue;
      for (json& arm : w["arms"]) {
        const int64_t want = PeerRateMbps(arm.value("bytes_per_second", 0.0));
        const bool ok = unshaped ? want == 0
                                 : want > 0 && std::fabs(rate - static_cast<double>(want)) <=
                                                   std::max(1.0, 0.02 * want);
        if (!ok) continue;
        arm["peers"][p.value("impl", "?")] = {{"t_x_s", p.value("t_x_s", json::object())},
                                              {"t_comp_s", p.value("t_comp_s", json::object())},
                                              {"t_comm_s", p.value("t_comm_s", json::object())},
                                              {"efficiency", p.value("efficiency", json::object())},
                                              {"rate_mbps", p.value("rate_mbps", json(nullptr))},
                                              {"transport", p.value("transport", "")},
                                              {"trials", p.value("trials", 0)}};
        hit = true;
      }
    }
    matched += hit ? 1 : 0;
  }
  return matched;
}

namespace {

// The arm of workload `w` with ratio `r` (nullptr if absent).
const json* ArmAt(const json& w, double r) {
  for (const json& arm : w["arms"]) {
    if (arm["ratio"].is_number() && std::fabs(arm["ratio"].get<double>() - r) < 1e-9) return &arm;
  }
  return nullptr;
}
const json* FirstWorkload(const json& report, const std::string& op) {
  for (const json& w : report["workloads"]) {
    if (w["workload"]["op"] == op) return &w;
  }
  return nullptr;
}
double VariantMetric(const json& arm, const std::string& v, const char* key) {
  const json& vs = arm["metrics"]["variants"];
  if (!vs.contains(v)) return kNaN;
  const json& m = vs[v];
  if (std::string(key) == "t_x") return Med(m["t_x_s"]);
  return JsonDouble(m, key);
}

// The best-S pairs of every `op` workload's arm at R = `r` whose own R lies in the band, pooled:
// medians of measured fused/decomposed, the closed form at their own R, and their ratio.
json PooledInBand(const json& report, const std::string& op, double r) {
  std::vector<double> meas, cf, vs;
  json band = nullptr;
  int arms = 0;
  for (const json& w : report["workloads"]) {
    if (w["workload"]["op"] != op) continue;
    const json* arm = ArmAt(w, r);
    if (!arm || !(*arm)["metrics"].contains("own_ratio")) continue;
    const json& own = (*arm)["metrics"]["own_ratio"];
    if (!own["pairs"].contains("fused_best")) continue;
    ++arms;
    band = own["band"];
    const json& p = own["pairs"]["fused_best"];
    for (size_t i = 0; i < p["in_band_flags"].size(); ++i) {
      if (!p["in_band_flags"][i].get<bool>()) continue;
      meas.push_back(p["measured"][i].is_number() ? p["measured"][i].get<double>() : kNaN);
      cf.push_back(p["closed_form"][i].is_number() ? p["closed_form"][i].get<double>() : kNaN);
      vs.push_back(p["vs_closed_form_own_tc"][i].is_number()
                       ? p["vs_closed_form_own_tc"][i].get<double>()
                       : kNaN);
    }
  }
  if (arms == 0) return nullptr;
  return {{"band", band},
          {"arms", arms},
          {"n", meas.size()},
          {"fused_vs_decomposed", JsonNumber(Quantile(meas, 0.5))},
          {"closed_form", JsonNumber(Quantile(cf, 0.5))},
          {"vs_closed_form_own_tc", JsonNumber(Quantile(vs, 0.5))}};
}

}  // namespace

json BuildOverlapSummary(const json& report, double tile_gemm_ratio) {
  json s = json::object();
  for (const char* op : {"ag_gemm", "gemm_rs", "moe"}) {
    const json* w = FirstWorkload(report, op);
    const json* arm = w ? ArmAt(*w, 1.0) : nullptr;
    const std::string key = std::string(op) + "_fused_vs_decomposed_R1";
    s[key] = arm ? JsonNumber(VariantMetric(*arm, "fused_best", "speedup_vs_decomposed"))
                 : json(nullptr);
    s[std::string(op) + "_efficiency_R1"] =
        arm ? JsonNumber(VariantMetric(*arm, "fused_best", "efficiency")) : json(nullptr);
    s[std::string(op) + "_fraction_of_ideal_R1"] =
        arm ? JsonNumber(VariantMetric(*arm, "fused_best", "fraction_of_ideal")) : json(nullptr);
    if (arm) s[std::string(op) + "_best_splits_R1"] = (*arm)["metrics"]["best_fused"];
    // The same arm judged at the R it really ran at (the GEMM speed drifts during an arm).
    const json* own =
        arm && (*arm)["metrics"].contains("own_ratio") ? &(*arm)["metrics"]["own_ratio"] : nullptr;
    s[std::string(op) + "_own_ratio_R1"] =
        own ? own->at("r_trial_stats").value("median", json(nullptr)) : json(nullptr);
    s[key + "_vs_closed_form"] =
        own && own->at("pairs").contains("fused_best")
            ? own->at("pairs")["fused_best"].value("vs_closed_form_median", json(nullptr))
            : json(nullptr);
    s[key + "_in_band"] = PooledInBand(report, op, 1.0);
  }
  // MoE: the per-layer fused schedule over the cross-layer one at the same S (> 1: cross-layer
  // faster), every MoE workload's R = 1 arm, and the per-layer schedule's own speedup.
  json cross = json::object();
  for (const json& w : report["workloads"]) {
    const json* arm = w["workload"]["op"] == "moe" ? ArmAt(w, 1.0) : nullptr;
    if (!arm) continue;
    for (const auto& [name, v] : (*arm)["metrics"]["variants"].items()) {
      if (name.rfind("layers_s", 0) != 0) continue;
      std::string fused = "fused_s";  // piecewise: GCC 12 -Wrestrict
      fused += name.substr(8);
      cross[w["workload"]["name"].get<std::string>()] = {
          {"splits", std::atoi(name.c_str() + 8)},
          {"per_layer_over_cross_layer",
           JsonNumber(Med(v["t_x_s"]) / VariantMetric(*arm, fused, "t_x"))},
          {"per_layer_vs_decomposed", v["speedup_vs_decomposed"]}};
    }
  }
  s["moe_cross_layer_R1"] = cross.empty() ? json(nullptr) : cross;
  s["tile_gemm_vs_openblas"] = JsonNumber(tile_gemm_ratio);
  // auto / fused vs the better of sequential and decomposed, worst over every arm.
  double auto_worst = kNaN, fused_worst = kNaN;
  std::string auto_where, fused_where;
  for (const json& w : report["workloads"]) {
    for (const json& arm : w["arms"]) {
      const double best = std::min(VariantMetric(arm, "sequential", "t_x"),
                                   VariantMetric(arm, "decomposed", "t_x"));
      const double a = VariantMetric(arm, "auto", "t_x") / best;
      const double f = VariantMetric(arm, "fused_best", "t_x") / best;
      const std::string where =
          w["workload"]["name"].get<std::string>() + " " + arm["label"].get<std::string>();
      if (std::isfinite(a) && !(a <= auto_worst)) {
        auto_worst = a;
        auto_where = where;
      }
      if (std::isfinite(f) && !(f <= fused_worst)) {
        fused_worst = f;
        fused_where = where;
      }
    }
  }
  s["auto_worst_vs_best_of_seq_dec"] = JsonNumber(auto_worst);
  // The same for auto's choice alone: the variant of the mode auto resolved to, measured in the
  // same trials (separates a bad choice from run-to-run noise between two identical variants).
  double choice_worst = kNaN;
  std::string choice_where;
  for (const json& w : report["workloads"]) {
    for (const json& arm : w["arms"]) {
      const std::string chosen = arm.value("resolved_mode", json::object()).value("auto", "");
      const OverlapMode mode = ModeOf(chosen);
      std::string v = mode == OverlapMode::kSequential   ? "sequential"
                      : mode == OverlapMode::kDecomposed ? "decomposed"
                      : mode == OverlapMode::kFused
                          ? "fused_s" + std::to_string(arm.value("auto_splits", 0))
                          : "";
      const double best = std::min(VariantMetric(arm, "sequential", "t_x"),
                                   VariantMetric(arm, "decomposed", "t_x"));
      const double x = v.empty() ? kNaN : VariantMetric(arm, v, "t_x") / best;
      if (std::isfinite(x) && !(x <= choice_worst)) {
        choice_worst = x;
        choice_where = w["workload"]["name"].get<std::string>() + " " +
                       arm["label"].get<std::string>() + " (" + chosen + ")";
      }
    }
  }
  s["auto_choice_worst_vs_best_of_seq_dec"] = JsonNumber(choice_worst);
  s["auto_choice_worst_at"] = choice_where;
  s["auto_worst_at"] = auto_where;
  s["fused_worst_vs_best_of_seq_dec"] = JsonNumber(fused_worst);
  s["fused_worst_at"] = fused_where;
  return s;
}

namespace {

std::string Ms(double s) {
  char b[32];
  if (!std::isfinite(s)) return "-";
  std::snprintf(b, sizeof b, s < 0.01 ? "%.2f" : "%.1f", s * 1e3);
  return b;
}
std::string Fx(double v, const char* fmt = "%.2f") {
  char b[32];
  if (!std::isfinite(v)) return "-";
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// Per paced arm: the R its trials ran at and each fused S against the closed form at its own R.
std::string FormatOwnRatio(const json& w) {
  std::string out =
      "  own R (t_comm / that round's t_comp) and fused/dec vs the closed form there:";
  for (const json& arm : w["arms"]) {
    if (!arm["ratio"].is_number() || !arm["metrics"].contains("own_ratio")) continue;
    const json& own = arm["metrics"]["own_ratio"];
    const json& rs = own["r_trial_stats"];
    out += "\n    " + arm["label"].get<std::string>() + ": R own " + Fx(JsonDouble(rs, "median")) +
           " (IQR " + Fx(JsonDouble(rs, "p25")) + "-" + Fx(JsonDouble(rs, "p75")) +
           "), round compute max/min " + Fx(JsonDouble(own["round_compute_spread"], "median")) +
           ";";
    for (const auto& [name, p] : own["pairs"].items()) {
      if (name == "fused_best") continue;
      const json& in = p["in_band"];
      out += " S=" + name.substr(7) + " R_pair " + Fx(JsonDouble(p["r_pair_stats"], "median")) +
             " f/dec " + Fx(JsonDouble(p, "measured_median")) + " cf " +
             Fx(JsonDouble(p, "closed_form_median")) + " x/cf " +
             Fx(JsonDouble(p, "vs_closed_form_median")) + " x/cf(own t_c) " +
             Fx(JsonDouble(p, "vs_closed_form_own_tc_median")) + " [in " +
             Fx(own["band"][0].get<double>()) + "-" + Fx(own["band"][1].get<double>()) + ": n " +
             std::to_string(in.value("n", 0)) + " f/dec " + Fx(JsonDouble(in, "measured_median")) +
             " cf " + Fx(JsonDouble(in, "closed_form_median")) + "];";
    }
  }
  return out + "\n";
}

// One workload's table (rows: R values and unlimited) and its per-S detail.
std::string FormatWorkload(const json& w) {
  std::string out;
  char line[512];
  out += "\n## " + w["workload"]["name"].get<std::string>() +
         "  (times: median ms over trials; link modelled at B MB/s by the paced proxy; "
         "peers over a tc-tbf veth at the same rate)\n";
  std::snprintf(line, sizeof line,
                "%-9s %8s %8s %8s %9s %9s %14s %14s %8s %8s %8s %8s %9s %6s %6s %6s %6s %6s %5s "
                "%5s %6s %6s\n",
                "R", "B MB/s", "t_comp", "t_comm", "seq", "dec", "fused(S)", "auto(mode)", "mpi",
                "mpi_dec", "gloo", "gloo_dec", "torch_dec", "E", "f/dec", "f/seq", "ideal",
                "a/best", "duty", "drop", "R_own", "f/cf");
  out += line;
  for (const json& arm : w["arms"]) {
    const json& m = arm["metrics"];
    const json& vs = m["variants"];
    auto tx = [&](const std::string& v) { return vs.contains(v) ? Med(vs[v]["t_x_s"]) : kNaN; };
    auto peer = [&](const char* impl) {
      return arm.contains("peers") && arm["peers"].contains(impl)
                 ? Ms(Med(arm["peers"][impl]["t_x_s"]))
                 : std::string("-");
    };
    const std::string best = m.value("best_fused", "");
    const std::string fused = Ms(tx("fused_best")) + "(" + best.substr(best.rfind('s') + 1) + ")";
    std::string mode = vs.contains("auto") ? vs["auto"].value("mode_run", "?") : "?";
    const std::string automode = Ms(tx("auto")) + "(" + mode.substr(0, 3) + ")";
    const double bps = arm.value("bytes_per_second", 0.0);
    const std::string label = arm["label"].get<std::string>() == "unlimited"
                                  ? "unlimited*"
                                  : arm["label"].get<std::string>();
    const double best_sd = std::min(tx("sequential"), tx("decomposed"));
    const json own = m.value("own_ratio", json::object());
    const double own_r =
        own.contains("r_trial_stats") ? JsonDouble(own["r_trial_stats"], "median") : kNaN;
    // Not for the unlimited arm: its closed form is 1 (nothing to hide) and the ratio is noise.
    const double own_cf =
        arm["ratio"].is_number() && own.contains("pairs") && own["pairs"].contains("fused_best")
            ? JsonDouble(own["pairs"]["fused_best"], "vs_closed_form_median")
            : kNaN;
    std::snprintf(
        line, sizeof line,
        "%-9s %8s %8s %8s %9s %9s %14s %14s %8s %8s %8s %8s %9s %6s %6s %6s %6s %6s %5s %5s "
        "%6s %6s\n",
        label.c_str(), bps > 0 ? Fx(bps / 1e6, "%.1f").c_str() : "mem",
        Ms(Med(m["t_comp_s"])).c_str(), Ms(Med(m["t_comm_s"])).c_str(),
        Ms(tx("sequential")).c_str(), Ms(tx("decomposed")).c_str(), fused.c_str(), automode.c_str(),
        peer("mpi").c_str(), peer("mpi_decomposed").c_str(), peer("gloo").c_str(),
        peer("gloo_decomposed").c_str(), peer("torch_decomposed").c_str(),
        Fx(vs.contains("fused_best") ? JsonDouble(vs["fused_best"], "efficiency") : kNaN).c_str(),
        Fx(vs.contains("fused_best") ? JsonDouble(vs["fused_best"], "speedup_vs_decomposed") : kNaN)
            .c_str(),
        Fx(vs.contains("fused_best") ? JsonDouble(vs["fused_best"], "speedup_vs_sequential") : kNaN)
            .c_str(),
        Fx(vs.contains("fused_best") ? JsonDouble(vs["fused_best"], "fraction_of_ideal") : kNaN)
            .c_str(),
        Fx(tx("auto") / best_sd).c_str(),
        Fx(vs.contains("fused_best") ? JsonDouble(vs["fused_best"], "proxy_duty") : kNaN, "%.3f")
            .c_str(),
        (std::to_string(m.value("dropped_trials", 0)) + "/" + std::to_string(arm["trials"].size()))
            .c_str(),
        Fx(own_r).c_str(), Fx(own_cf).c_str());
    out += line;
  }
  // Per-S detail and measured R.
  out += "  per S (median ms):";
  for (const json& arm : w["arms"]) {
    out += "\n    " + arm["label"].get<std::string>() + " (R measured " +
           Fx(JsonDouble(arm["metrics"], "ratio_measured")) + ", steal " +
           Fx(100 * Med(arm["metrics"]["steal"]), "%.1f") + "%):";
    for (const auto& [name, v] : arm["metrics"]["variants"].items()) {
      if (name.rfind("fused_s", 0) == 0) out += " S=" + name.substr(7) + " " + Ms(Med(v["t_x_s"]));
      if (name.rfind("layers_s", 0) == 0) {
        out += " per-layer S=" + name.substr(8) + " " + Ms(Med(v["t_x_s"]));
      }
    }
  }
  out += "\n" + FormatOwnRatio(w);
  return out;
}

}  // namespace

std::string FormatOverlapReport(const json& report, const json& summary) {
  std::string out;
  char line[512];
  for (const json& w : report["workloads"]) out += FormatWorkload(w);
  out +=
      "\n* unlimited = negative control (memory-speed link): the proxy copies at memcpy speed "
      "on the ranks' own cores, so there is nothing to hide and overlap cannot pay.\n";
  out +=
      "E = (t_comp + t_comm - t_x)/min(t_comp, t_comm) of the best fused S; f/dec, f/seq: "
      "speedup of fused(best S) over decomposed / sequential (median of per-trial ratios); "
      "ideal = max(t_comp, t_comm)/t_x; a/best = auto / min(seq, dec); duty = proxy thread "
      "CPU / t_x; drop = trials dropped for steal; R_own = median over trials of t_comm / the "
      "round's t_comp (median of its compute times); f/cf = fused(best S)/dec measured over the "
      "closed form at each pair's own R (median).\n";
  auto target = [&](const char* name, const char* cmp, double goal) {
    const json& v = summary.contains(name) ? summary[name] : json(nullptr);
    std::string met = "-";
    if (v.is_number()) {
      const double x = v.get<double>();
      met = (std::string(cmp) == ">=" ? x >= goal : x <= goal) ? "yes" : "NO";
    }
    std::snprintf(line, sizeof line, "%-36s %8s %s %5.2f  %s\n", name,
                  v.is_number() ? Fx(v.get<double>(), "%.3f").c_str() : "n/a", cmp, goal,
                  met.c_str());
    out += line;
  };
  out += "\ntargets\n";
  target("ag_gemm_efficiency_R1", ">=", 0.9);
  target("ag_gemm_fused_vs_decomposed_R1", ">=", 1.3);
  target("gemm_rs_fused_vs_decomposed_R1", ">=", 1.3);
  target("moe_fused_vs_decomposed_R1", ">=", 1.3);
  target("auto_worst_vs_best_of_seq_dec", "<=", 1.05);
  target("auto_choice_worst_vs_best_of_seq_dec", "<=", 1.05);
  target("tile_gemm_vs_openblas", ">=", 0.9);
  out +=
      "own R at the R = 1 arms (best-S pairs of every workload with both variants' own R in the "
      "band):\n";
  for (const char* op : {"ag_gemm", "gemm_rs", "moe"}) {
    const std::string key = std::string(op) + "_fused_vs_decomposed_R1_in_band";
    if (!summary.contains(key) || !summary[key].is_object()) continue;
    const json& b = summary[key];
    std::snprintf(line, sizeof line,
                  "  %-8s R in [%.2f, %.2f]: %d pairs over %d arms, fused/dec %s (>= 1.3: %s), "
                  "closed form %s, measured/closed form at own t_c %s\n",
                  op, b["band"][0].get<double>(), b["band"][1].get<double>(), b.value("n", 0),
                  b.value("arms", 0), Fx(JsonDouble(b, "fused_vs_decomposed"), "%.3f").c_str(),
                  std::isfinite(JsonDouble(b, "fused_vs_decomposed"))
                      ? (JsonDouble(b, "fused_vs_decomposed") >= 1.3 ? "yes" : "NO")
                      : "-",
                  Fx(JsonDouble(b, "closed_form"), "%.3f").c_str(),
                  Fx(JsonDouble(b, "vs_closed_form_own_tc"), "%.3f").c_str());
    out += line;
  }
  if (summary.contains("auto_worst_at")) {
    out += "  (auto worst at " + summary["auto_worst_at"].get<std::string>() +
           "; fused(best S) worst vs best of seq/dec " +
           (summary["fused_worst_vs_best_of_seq_dec"].is_number()
                ? Fx(summary["fused_worst_vs_best_of_seq_dec"].get<double>(), "%.3f")
                : std::string("n/a")) +
           " at " + summary.value("fused_worst_at", "") + ")\n";
  }
  return out;
}

std::vector<SweepSeries> SpeedupSweep(const json& report) {
  // (op, mode) -> R -> speedups over the op's workloads.
  std::map<std::string, std::map<double, std::vector<double>>> acc;
  for (const json& w : report["workloads"]) {
    const std::string op = w["workload"]["op"];
    for (const json& arm : w["arms"]) {
      if (!arm["ratio"].is_number()) continue;
      const double r = arm["ratio"];
      for (const char* v : {"decomposed", "fused_best", "auto"}) {
        const double sp = VariantMetric(arm, v, "speedup_vs_sequential");
        if (std::isfinite(sp)) {
          acc[op + " " + (std::string(v) == "fused_best" ? "fused" : v)][r].push_back(sp);
        }
      }
    }
  }
  std::vector<SweepSeries> out;
  for (const auto& [name, by_r] : acc) {
    SweepSeries s{name, {}};
    for (const auto& [r, v] : by_r) s.points.push_back({r, Quantile(v, 0.5)});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace loom::overlap
