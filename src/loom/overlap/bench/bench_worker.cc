#include "loom/overlap/bench/bench_worker.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/overlap/bench/own_ratio.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/ag_gemm.h"
#include "loom/overlap/ops/gemm_rs.h"
#include "loom/overlap/ops/moe_pair.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/ops/op_stats.h"
#include "loom/overlap/runtime/runtime.h"
#include "loom/overlap/sim/closed_form.h"

namespace loom::overlap {
namespace {

using nlohmann::json;

void FillUniform(std::vector<float>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : v) x = d(rng);
}

// The inputs and outputs of one workload on this rank (shared by all variants; calls are
// sequential on a rank).
struct WorkloadData {
  std::vector<float> a, b, out;        // AG+GEMM / GEMM+RS
  std::vector<float> x, w1, w2, h, y;  // MoE
  MoeOpShape moe;
  Routing routing;
};

// One variant of one workload: the op(s) behind a uniform interface.
class Driver {
 public:
  virtual ~Driver() = default;
  virtual Status Prepare() = 0;
  virtual Result<OpRunStats> Run() = 0;
  virtual Result<OpRunStats> ComputeOnly() = 0;
  virtual Result<OpRunStats> CommOnly() = 0;
  virtual std::string Resolved() const = 0;
  // Per-part wall times of the last Run / ComputeOnly / CommOnly (MoE: its two layers), or null.
  virtual json Parts() const { return nullptr; }
};

OpConfig MakeOpConfig(const BenchVariant& v, const OverlapBenchConfig& c) {
  OpConfig op;
  op.mode = v.mode;
  op.splits = v.splits;
  op.tile_rows = c.tile_rows;
  return op;
}

template <typename T>
T Options(const BenchVariant& v, const OverlapBenchConfig& c) {
  T options;
  options.op = MakeOpConfig(v, c);
  return options;
}

// AG+GEMM and GEMM+RS drive alike: A and B in, C out (the shape type picks the op).
template <typename Op, typename OpOptions>
class GemmOpDriver final : public Driver {
 public:
  template <typename Shape>
  GemmOpDriver(Runtime* rt, LinkProxy* proxy, const Shape& shape, const BenchVariant& v,
               const OverlapBenchConfig& c, WorkloadData* d)
      : op_(rt, proxy, shape, Options<OpOptions>(v, c)), d_(d) {}
  Status Prepare() override { return op_.Prepare(d_->b.data()); }
  Result<OpRunStats> Run() override { return op_.Run(d_->a.data(), d_->out.data()); }
  Result<OpRunStats> ComputeOnly() override {
    return op_.RunComputeOnly(d_->a.data(), d_->out.data());
  }
  Result<OpRunStats> CommOnly() override { return op_.RunCommOnly(); }
  std::string Resolved() const override {
    return std::string(OverlapModeName(op_.resolved_mode()));
  }

 private:
  Op op_;
  WorkloadData* d_;
};

// The MoE block (MoePair): layer 0 + layer 1, layer by layer or cross-layer (variant).
class MoeDriver final : public Driver {
 public:
  MoeDriver(Runtime* rt, LinkProxy* proxy, const BenchVariant& v, const OverlapBenchConfig& c,
            WorkloadData* d)
      : moe_(rt, proxy, d->moe,
             MoePairOptions{.op = MakeOpConfig(v, c),
                            .cross_layer = v.cross_layer,
                            .decomposed_chunks = 2,
                            .gemm = {}}),
        d_(d) {}
  Status Prepare() override { return moe_.Prepare(d_->w1.data(), d_->w2.data()); }
  Result<OpRunStats> Run() override {
    return moe_.Run(d_->x.data(), d_->routing, d_->h.data(), d_->y.data());
  }
  Result<OpRunStats> ComputeOnly() override {
    return moe_.RunComputeOnly(d_->h.data(), d_->y.data());
  }
  Result<OpRunStats> CommOnly() override { return moe_.RunCommOnly(d_->x.data(), d_->routing); }
  // Each layer's wall, compute, wait and link-busy time of the last Run (cross-layer: layer 0 =
  // its tiles, layer 1 = the rest, see MoePairParts), and the cross-layer fill.
  json Parts() const override {
    const MoePairParts& parts = moe_.parts();
    json p;
    for (int i = 0; i < 2; ++i) {
      const std::string l = "layer" + std::to_string(i);
      p[l + "_s"] = parts.layer[i].wall_s;
      p[l + "_compute_s"] = parts.layer[i].compute_s;
      p[l + "_wait_s"] = parts.layer[i].wait_s;
      p[l + "_link_busy_s"] = parts.layer[i].link.busy_s;
    }
    if (parts.cross_layer) {
      p["fill_s"] = parts.fill_s;
      p["fill_tiles"] = parts.fill_tiles;
    }
    return p;
  }
  std::string Resolved() const override { return moe_.resolved(); }

 private:
  MoePair moe_;
  WorkloadData* d_;
};

std::unique_ptr<Driver> MakeDriver(Runtime* rt, LinkProxy* proxy, const BenchWorkload& w,
                                   const BenchVariant& v, const OverlapBenchConfig& c,
                                   WorkloadData* d) {
  switch (w.op) {
    case BenchOp::kAgGemm:
      return std::make_unique<GemmOpDriver<AgGemm, AgGemmOptions>>(
          rt, proxy, AgGemmOpShape{w.m_shard, w.k, w.n_local}, v, c, d);
    case BenchOp::kGemmRs:
      return std::make_unique<GemmOpDriver<GemmRs, GemmRsOptions>>(
          rt, proxy, GemmRsOpShape{c.world * w.m_shard, w.k, w.n_local}, v, c, d);
    case BenchOp::kMoe:
      return std::make_unique<MoeDriver>(rt, proxy, v, c, d);
  }
  return nullptr;
}

Result<WorkloadData> MakeData(const BenchWorkload& w, const OverlapBenchConfig& c, int rank) {
  WorkloadData d;
  const uint64_t seed = 1000 + 17 * static_cast<uint64_t>(rank);
  const int64_t world = c.world;
  if (w.op == BenchOp::kAgGemm) {
    d.a.resize(w.m_shard * w.k);
    d.b.resize(w.k * w.n_local);
    d.out.resize(world * w.m_shard * w.n_local);
  } else if (w.op == BenchOp::kGemmRs) {
    d.a.resize(world * w.m_shard * w.k);
    d.b.resize(w.k * w.n_local);
    d.out.resize(w.m_shard * w.n_local);
  } else {
    d.moe = MoeOpShape{.world = c.world,
                       .num_experts = w.experts,
                       .top_k = w.top_k,
                       .tokens_per_rank = w.tokens,
                       .hidden = w.hidden,
                       .ffn = w.ffn};
    LOOM_RETURN_IF_ERROR(ValidateMoeShape(d.moe));
    LOOM_ASSIGN_OR_RETURN(d.routing,
                          GenerateRouting(d.moe, rank, RoutingOptions{.kind = w.routing}));
    const int64_t le = d.moe.experts_per_rank();
    d.x.resize(w.tokens * w.hidden);
    d.w1.resize(le * w.hidden * w.ffn);
    d.w2.resize(le * w.ffn * w.hidden);
    d.h.resize(MaxRecvRows(d.moe, c.tile_rows) * w.ffn);
    d.y.resize(w.tokens * w.hidden);
    FillUniform(d.x, seed + 1);
    FillUniform(d.w1, seed + 2);
    FillUniform(d.w2, seed + 3);
    // Keep activations O(1): scale the weights like a 1/sqrt(fan-in) init.
    for (float& v : d.w1) v /= std::sqrt(static_cast<float>(w.hidden));
    for (float& v : d.w2) v /= std::sqrt(static_cast<float>(w.ffn));
    return d;
  }
  FillUniform(d.a, seed + 1);
  FillUniform(d.b, seed + 2);
  return d;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json StatsJson(const OpRunStats& s, const std::string& resolved) {
  return {{"wall_s", s.wall_s},
          {"compute_s", s.compute_s},
          {"wait_s", s.wait_s},
          {"thread_cpu_s", s.thread_cpu_s},
          {"proxy_cpu_s", s.link.thread_cpu_s},
          {"link_busy_s", s.link.busy_s},
          {"link_bytes", s.link.bytes},
          {"mode_run", resolved}};
}

struct Calibration {
  double t_comp_s = 0;
  double link_bytes = 0;
};

// Unlimited link: t_comp of the fused reference variant and the bytes one call sends.
Result<Calibration> Calibrate(Runtime* rt, const BenchWorkload& w, const BenchVariant& ref,
                              const OverlapBenchConfig& c, WorkloadData* d) {
  Calibration cal;
  {
    LinkProxy proxy(rt, LinkOptions{.mode = LinkMode::kUnlimited});
    LOOM_RETURN_IF_ERROR(proxy.Start());
    std::unique_ptr<Driver> drv = MakeDriver(rt, &proxy, w, ref, c, d);
    LOOM_RETURN_IF_ERROR(drv->Prepare());
    // Two warm-up calls (first-touch of the heap, MoE's layout), then reps aligned by barriers
    // as in the trials (both ranks compute at once, as they do there).
    for (int i = 0; i < 2; ++i) LOOM_RETURN_IF_ERROR(drv->Run().status());
    LOOM_RETURN_IF_ERROR(drv->ComputeOnly().status());
    std::vector<double> t;
    for (int i = 0; i < c.calibration_reps; ++i) {
      LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: calibration t_comp"));
      LOOM_ASSIGN_OR_RETURN(OpRunStats s, drv->ComputeOnly());
      t.push_back(s.wall_s);
    }
    LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: calibration"));
    LOOM_ASSIGN_OR_RETURN(OpRunStats comm, drv->CommOnly());
    LOOM_ASSIGN_OR_RETURN(cal.t_comp_s, MaxOverRanks(*rt, Median(t), "calibration t_comp"));
    LOOM_ASSIGN_OR_RETURN(cal.link_bytes, MaxOverRanks(*rt, static_cast<double>(comm.link.bytes),
                                                       "calibration link bytes"));
    proxy.Stop();
  }
  LOOM_RETURN_IF_ERROR(rt->Reset());
  return cal;
}

// A paced link and every variant's op prepared on it.
struct ArmSetup {
  std::unique_ptr<LinkProxy> proxy;
  std::vector<std::unique_ptr<Driver>> drivers;  // destroyed before the proxy
  json resolved = json::object();
};

Result<ArmSetup> SetUpArm(Runtime* rt, const BenchWorkload& w,
                          const std::vector<BenchVariant>& variants, const LinkOptions& link,
                          const OverlapBenchConfig& c, WorkloadData* d, const std::string& label) {
  ArmSetup s;
  s.proxy = std::make_unique<LinkProxy>(rt, link);
  LOOM_RETURN_IF_ERROR(s.proxy->Start());
  for (const BenchVariant& v : variants) {
    s.drivers.push_back(MakeDriver(rt, s.proxy.get(), w, v, c, d));
    Status st = s.drivers.back()->Prepare();
    if (!st.ok()) {
      return Status(st.code(), w.Name() + " " + label + " " + v.Name() + ": " + st.message());
    }
    s.resolved[v.Name()] = s.drivers.back()->Resolved();
  }
  // One untimed call per variant: the first call after Prepare pays first touches of the op's
  // buffers (MoE at 4096 tokens: ~100 MB per rank, ~290 ms more in layer 1 at R = 1), which a
  // --hold-ratio arm, rebuilt before every round, would otherwise put into every trial.
  for (size_t i = 0; i < variants.size(); ++i) {
    LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: arm warm-up " + variants[i].Name()));
    Status st = s.drivers[i]->Run().status();
    if (!st.ok()) {
      return Status(st.code(), w.Name() + " " + label + " " + variants[i].Name() +
                                   " warm-up: " + st.message());
    }
  }
  return s;
}

// Collective: ops gone, proxy stopped, the symmetric heap and signals reset.
Status TearDownArm(Runtime* rt, ArmSetup& s) {
  s.drivers.clear();
  if (s.proxy) s.proxy->Stop();
  s.proxy.reset();
  return rt->Reset();
}

// Holding R through an arm (OverlapBenchConfig::hold_ratio_each_round): the target, the link
// bytes of one call and the arm's calibrated t_comp (the first estimate without a probe); off
// for the unlimited arm.
struct HoldRatio {
  bool on = false;
  double ratio = 1;
  double link_bytes = 0;
  double calibration_t_comp_s = 0;
};

// The short t_comp probe before a round: median of `reps` compute-only calls of the reference,
// max over ranks.
Result<double> ProbeComputeSeconds(Runtime* rt, Driver* ref, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: hold-ratio probe"));
    LOOM_ASSIGN_OR_RETURN(OpRunStats s, ref->ComputeOnly());
    t.push_back(s.wall_s);
  }
  return MaxOverRanks(*rt, Median(t), "hold-ratio probe t_comp");
}

// This rank's compute times of a round (the t_comp probe and every variant but auto), median:
// own_ratio.h's t_comp,round before the max over ranks.
double LocalRoundCompute(const OpRunStats& probe, const json& x) {
  std::vector<double> c = {probe.wall_s};
  for (const auto& [name, v] : x.items()) {
    if (name != "auto") c.push_back(v.value("compute_s", 0.0));
  }
  return RoundComputeSeconds(c);
}

// One arm: a proxy at `link`, every variant prepared, warmup + trials interleaved rounds. With
// `hold.on` the link is re-sized (and the arm rebuilt) before every round from a t_comp estimate:
// a probe (hold_ratio_probe_reps > 0) or the previous round's compute times (0).
Result<json> RunArm(Runtime* rt, const BenchWorkload& w, const std::vector<BenchVariant>& variants,
                    size_t ref_index, const LinkOptions& link, const HoldRatio& hold,
                    const OverlapBenchConfig& c, WorkloadData* d, const std::string& label,
                    bool progress) {
  const bool unlimited = link.mode == LinkMode::kUnlimited;
  json arm = {{"label", label},
              {"link_mode", std::string(LinkModeName(link.mode))},
              {"bytes_per_second", unlimited ? 0.0 : link.bytes_per_second},
              {"hold_ratio_each_round", hold.on}};
  LOOM_ASSIGN_OR_RETURN(ArmSetup setup, SetUpArm(rt, w, variants, link, c, d, label));
  arm["resolved_mode"] = setup.resolved;
  json trials = json::array();
  std::vector<double> round_bps;
  const bool probe = c.hold_ratio_probe_reps > 0;
  double hold_t_s = hold.calibration_t_comp_s;  // without a probe: the previous round's
  const int64_t arm_start_ns = NowNanos();
  for (int t = 0; t < c.warmup + c.trials; ++t) {
    if (hold.on) {
      if (probe) {
        LOOM_ASSIGN_OR_RETURN(hold_t_s, ProbeComputeSeconds(rt, setup.drivers[ref_index].get(),
                                                            c.hold_ratio_probe_reps));
      }
      LinkOptions round_link = link;
      round_link.bytes_per_second =
          LinkBandwidthForRatio(hold.link_bytes, hold_t_s, 1.0, hold.ratio);
      if (round_link.bytes_per_second != setup.proxy->options().bytes_per_second) {
        LOOM_RETURN_IF_ERROR(TearDownArm(rt, setup));
        LOOM_ASSIGN_OR_RETURN(setup, SetUpArm(rt, w, variants, round_link, c, d, label));
      }
    }
    const double bps = unlimited ? 0.0 : setup.proxy->options().bytes_per_second;
    const CpuTicks ticks0 = ReadCpuTicks();
    json x = json::object();
    for (size_t i = 0; i < variants.size(); ++i) {
      LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before " + variants[i].Name()));
      auto st = setup.drivers[i]->Run();
      if (!st.ok()) {
        return Status(st.status().code(), w.Name() + " " + label + " " + variants[i].Name() + ": " +
                                              st.status().message());
      }
      x[variants[i].Name()] = StatsJson(*st, setup.drivers[i]->Resolved());
      if (json parts = setup.drivers[i]->Parts(); !parts.is_null()) {
        x[variants[i].Name()]["parts"] = std::move(parts);
      }
    }
    LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before t_comp"));
    LOOM_ASSIGN_OR_RETURN(OpRunStats comp, setup.drivers[ref_index]->ComputeOnly());
    const json comp_parts = setup.drivers[ref_index]->Parts();
    LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before t_comm"));
    LOOM_ASSIGN_OR_RETURN(OpRunStats comm, setup.drivers[ref_index]->CommOnly());
    const json comm_parts = setup.drivers[ref_index]->Parts();
    const CpuTicks ticks1 = ReadCpuTicks();
    double load[1] = {0};
    if (getloadavg(load, 1) < 1) load[0] = -1;
    const double used_t_s = hold_t_s;  // the estimate this round's B came from
    if (hold.on && !probe) {           // the next round's estimate
      LOOM_ASSIGN_OR_RETURN(hold_t_s, MaxOverRanks(*rt, LocalRoundCompute(comp, x),
                                                   "hold-ratio previous round t_comp"));
    }
    if (t < c.warmup) continue;
    json trial = {{"t_comp_s", comp.wall_s},
                  {"t_comp_thread_cpu_s", comp.thread_cpu_s},
                  {"t_comm_s", comm.wall_s},
                  {"t_comm_proxy_cpu_s", comm.link.thread_cpu_s},
                  {"steal", StealFraction(ticks0, ticks1)},
                  {"loadavg", load[0]},
                  {"bytes_per_second", bps},
                  {"x", x}};
    if (!comp_parts.is_null()) trial["t_comp_parts"] = comp_parts;
    if (!comm_parts.is_null()) trial["t_comm_parts"] = comm_parts;
    if (hold.on) {
      trial["hold_t_comp_s"] = used_t_s;
      trial["hold_source"] = probe ? "probe" : "previous_round";
      if (!probe) trial["round_compute_s"] = hold_t_s;  // max over ranks of each rank's median
    }
    trials.push_back(std::move(trial));
    round_bps.push_back(bps);
  }
  if (hold.on) arm["bytes_per_second"] = Median(round_bps);  // the rate the peers get
  if (progress && rt->rank() == 0) {
    std::fprintf(stderr, "  %s %s (B %.1f MB/s%s): %d rounds in %.1f s\n", w.Name().c_str(),
                 label.c_str(), arm["bytes_per_second"].get<double>() / 1e6,
                 hold.on ? ", median of per-round B" : "", c.warmup + c.trials,
                 static_cast<double>(NowNanos() - arm_start_ns) * 1e-9);
  }
  arm["trials"] = trials;
  LOOM_RETURN_IF_ERROR(TearDownArm(rt, setup));
  return arm;
}

Result<json> RunWorkload(Runtime* rt, const BenchWorkload& w, const OverlapBenchConfig& c,
                         bool progress) {
  LOOM_ASSIGN_OR_RETURN(WorkloadData d, MakeData(w, c, rt->rank()));
  const std::vector<BenchVariant> variants = MakeVariants(c, w.op);
  const size_t ref_index = variants.size() - 1;  // auto's S; fused reference below
  BenchVariant ref{OverlapMode::kFused, variants[ref_index].splits};
  size_t ref_fused = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].mode == OverlapMode::kFused && variants[i].splits == ref.splits &&
        variants[i].cross_layer) {
      ref_fused = i;
    }
  }
  LOOM_ASSIGN_OR_RETURN(Calibration cal, Calibrate(rt, w, ref, c, &d));
  json out = {{"workload", w.ToJson()},
              {"variants", json::array()},
              {"reference_variant", ref.Name()},
              {"calibration", {{"t_comp_s", cal.t_comp_s}, {"link_bytes", cal.link_bytes}}},
              {"arms", json::array()}};
  for (const BenchVariant& v : variants) out["variants"].push_back(v.Name());
  for (size_t i = 0; i < c.ratios.size(); ++i) {
    const double r = c.ratios[i];
    // The first arm follows the workload's calibration directly; later ones re-measure t_comp
    // (unless calibrate_each_arm is off) so that B tracks the machine's current GEMM speed.
    Calibration arm_cal = cal;
    if (c.calibrate_each_arm && i > 0) {
      LOOM_ASSIGN_OR_RETURN(arm_cal, Calibrate(rt, w, ref, c, &d));
    }
    LinkOptions link;
    link.mode = LinkMode::kCopy;
    // B = link_bytes / (R · t_comp): the closed-form helper with flops = t_comp · flops_per_s.
    link.bytes_per_second = LinkBandwidthForRatio(arm_cal.link_bytes, arm_cal.t_comp_s, 1.0, r);
    char label[32];
    std::snprintf(label, sizeof label, "R=%g", r);
    const HoldRatio hold{.on = c.hold_ratio_each_round,
                         .ratio = r,
                         .link_bytes = cal.link_bytes,
                         .calibration_t_comp_s = arm_cal.t_comp_s};
    LOOM_ASSIGN_OR_RETURN(json arm,
                          RunArm(rt, w, variants, ref_fused, link, hold, c, &d, label, progress));
    arm["ratio"] = r;
    arm["calibration_t_comp_s"] = arm_cal.t_comp_s;
    out["arms"].push_back(std::move(arm));
  }
  LinkOptions unlimited;
  unlimited.mode = LinkMode::kUnlimited;
  LOOM_ASSIGN_OR_RETURN(json arm, RunArm(rt, w, variants, ref_fused, unlimited, HoldRatio{}, c, &d,
                                         "unlimited", progress));
  arm["ratio"] = nullptr;
  out["arms"].push_back(std::move(arm));
  return out;
}

}  // namespace

CpuTicks ReadCpuTicks() {
  CpuTicks t;
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return t;
  std::istringstream ss(line.substr(4));
  double v[10] = {0};
  for (int i = 0; i < 10 && (ss >> v[i]); ++i) {
  }
  // user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user).
  for (int i = 0; i < 8; ++i) t.total += v[i];
  t.steal = v[7];
  return t;
}

double StealFraction(const CpuTicks& before, const CpuTicks& after) {
  const double total = after.total - before.total;
  return total > 0 ? (after.steal - before.steal) / total : 0.0;
}

Status RunOverlapBenchRank(const OverlapBenchConfig& config, const BenchRankOptions& options) {
  LOOM_RETURN_IF_ERROR(ValidateConfig(config));
  const long ncpu = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const int cpu = static_cast<int>(options.rank % ncpu);
  if (options.pin_cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);  // best effort (a cgroup may forbid it)
  }
  const std::vector<BenchWorkload> workloads = MakeWorkloads(config);
  RuntimeOptions ro;
  ro.heap_bytes = 0;
  for (const BenchWorkload& w : workloads) {
    ro.heap_bytes = std::max(ro.heap_bytes, HeapBytesFor(w, config));
  }
  ro.timeout = std::chrono::milliseconds(180000);
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt,
                        CreateProcessRuntime(options.job, options.rank, config.world, ro));
  json out = {{"rank", options.rank},
              {"world", config.world},
              {"cpu", options.pin_cpu ? cpu : -1},
              {"heap_bytes", ro.heap_bytes},
              {"workloads", json::array()}};
  const bool progress = options.progress && options.rank == 0;
  for (const BenchWorkload& w : workloads) {
    if (progress) std::fprintf(stderr, "%s\n", w.Name().c_str());
    LOOM_ASSIGN_OR_RETURN(json r, RunWorkload(rt.get(), w, config, progress));
    out["workloads"].push_back(std::move(r));
  }
  LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: end"));
  return WriteFileAtomic(options.out_path, out.dump() + "\n");
}

}  // namespace loom::overlap
