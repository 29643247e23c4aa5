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
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/ag_gemm.h"
#include "loom/overlap/ops/gemm_rs.h"
#include "loom/overlap/ops/moe_layer0.h"
#include "loom/overlap/ops/moe_layer1.h"
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

// Layer-1 stats added into layer 0's (times and link counters; the mode of layer 0 kept).
OpRunStats AddStats(OpRunStats a, const OpRunStats& b) {
  a.wall_s += b.wall_s;
  a.compute_s += b.compute_s;
  a.wait_s += b.wait_s;
  a.comm_s += b.comm_s;
  a.thread_cpu_s += b.thread_cpu_s;
  a.link.messages += b.link.messages;
  a.link.bytes += b.link.bytes;
  a.link.busy_s += b.link.busy_s;
  a.link.thread_cpu_s += b.link.thread_cpu_s;
  a.link.max_late_s = std::max(a.link.max_late_s, b.link.max_late_s);
  return a;
}

class MoeDriver final : public Driver {
 public:
  MoeDriver(Runtime* rt, LinkProxy* proxy, const BenchVariant& v, const OverlapBenchConfig& c,
            WorkloadData* d)
      : l0_(rt, proxy, d->moe, Options<MoeLayer0Options>(v, c)),
        l1_(rt, proxy, d->moe, Options<MoeLayer1OpOptions>(v, c)),
        d_(d) {}
  Status Prepare() override {
    LOOM_RETURN_IF_ERROR(l0_.Prepare(d_->w1.data()));
    return l1_.Prepare(d_->w2.data());
  }
  Result<OpRunStats> Run() override {
    LOOM_ASSIGN_OR_RETURN(OpRunStats s0, l0_.Run(d_->x.data(), d_->routing, d_->h.data()));
    LOOM_ASSIGN_OR_RETURN(OpRunStats s1, l1_.Run(d_->h.data(), d_->routing, d_->y.data()));
    return AddStats(s0, s1);
  }
  Result<OpRunStats> ComputeOnly() override {
    LOOM_ASSIGN_OR_RETURN(OpRunStats s0, l0_.RunComputeOnly(d_->h.data()));
    LOOM_ASSIGN_OR_RETURN(OpRunStats s1, l1_.RunComputeOnly(d_->h.data(), d_->y.data()));
    return AddStats(s0, s1);
  }
  Result<OpRunStats> CommOnly() override {
    LOOM_ASSIGN_OR_RETURN(OpRunStats s0, l0_.RunCommOnly(d_->x.data(), d_->routing));
    LOOM_ASSIGN_OR_RETURN(OpRunStats s1, l1_.RunCommOnly(d_->routing));
    return AddStats(s0, s1);
  }
  std::string Resolved() const override {
    return std::string(OverlapModeName(l0_.resolved_mode())) + "/" +
           std::string(OverlapModeName(l1_.resolved_mode()));
  }

 private:
  MoeLayer0 l0_;
  MoeLayer1 l1_;
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

// One arm: a proxy at `link`, every variant prepared, warmup + trials interleaved rounds.
Result<json> RunArm(Runtime* rt, const BenchWorkload& w, const std::vector<BenchVariant>& variants,
                    size_t ref_index, const LinkOptions& link, const OverlapBenchConfig& c,
                    WorkloadData* d, const std::string& label, bool progress) {
  json arm = {
      {"label", label},
      {"link_mode", std::string(LinkModeName(link.mode))},
      {"bytes_per_second", link.mode == LinkMode::kUnlimited ? 0.0 : link.bytes_per_second}};
  {
    LinkProxy proxy(rt, link);
    LOOM_RETURN_IF_ERROR(proxy.Start());
    std::vector<std::unique_ptr<Driver>> drivers;
    json resolved = json::object();
    for (const BenchVariant& v : variants) {
      drivers.push_back(MakeDriver(rt, &proxy, w, v, c, d));
      Status s = drivers.back()->Prepare();
      if (!s.ok()) {
        return Status(s.code(), w.Name() + " " + label + " " + v.Name() + ": " + s.message());
      }
      resolved[v.Name()] = drivers.back()->Resolved();
    }
    arm["resolved_mode"] = resolved;
    json trials = json::array();
    const int64_t arm_start_ns = NowNanos();
    for (int t = 0; t < c.warmup + c.trials; ++t) {
      const CpuTicks ticks0 = ReadCpuTicks();
      json x = json::object();
      for (size_t i = 0; i < variants.size(); ++i) {
        LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before " + variants[i].Name()));
        auto st = drivers[i]->Run();
        if (!st.ok()) {
          return Status(st.status().code(), w.Name() + " " + label + " " + variants[i].Name() +
                                                ": " + st.status().message());
        }
        x[variants[i].Name()] = StatsJson(*st, drivers[i]->Resolved());
      }
      LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before t_comp"));
      LOOM_ASSIGN_OR_RETURN(OpRunStats comp, drivers[ref_index]->ComputeOnly());
      LOOM_RETURN_IF_ERROR(rt->barrier_all("bench overlap: before t_comm"));
      LOOM_ASSIGN_OR_RETURN(OpRunStats comm, drivers[ref_index]->CommOnly());
      const CpuTicks ticks1 = ReadCpuTicks();
      double load[1] = {0};
      if (getloadavg(load, 1) < 1) load[0] = -1;
      if (t < c.warmup) continue;
      trials.push_back({{"t_comp_s", comp.wall_s},
                        {"t_comp_thread_cpu_s", comp.thread_cpu_s},
                        {"t_comm_s", comm.wall_s},
                        {"t_comm_proxy_cpu_s", comm.link.thread_cpu_s},
                        {"steal", StealFraction(ticks0, ticks1)},
                        {"loadavg", load[0]},
                        {"x", x}});
    }
    if (progress && rt->rank() == 0) {
      std::fprintf(stderr, "  %s %s (B %.1f MB/s): %d rounds in %.1f s\n", w.Name().c_str(),
                   label.c_str(),
                   link.mode == LinkMode::kUnlimited ? 0.0 : link.bytes_per_second / 1e6,
                   c.warmup + c.trials, static_cast<double>(NowNanos() - arm_start_ns) * 1e-9);
    }
    arm["trials"] = trials;
    proxy.Stop();
  }
  LOOM_RETURN_IF_ERROR(rt->Reset());
  return arm;
}

Result<json> RunWorkload(Runtime* rt, const BenchWorkload& w, const OverlapBenchConfig& c,
                         bool progress) {
  LOOM_ASSIGN_OR_RETURN(WorkloadData d, MakeData(w, c, rt->rank()));
  const std::vector<BenchVariant> variants = MakeVariants(c);
  const size_t ref_index = variants.size() - 1;  // auto's S; fused reference below
  BenchVariant ref{OverlapMode::kFused, variants[ref_index].splits};
  size_t ref_fused = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].mode == OverlapMode::kFused && variants[i].splits == ref.splits) ref_fused = i;
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
    LOOM_ASSIGN_OR_RETURN(json arm,
                          RunArm(rt, w, variants, ref_fused, link, c, &d, label, progress));
    arm["ratio"] = r;
    arm["calibration_t_comp_s"] = arm_cal.t_comp_s;
    out["arms"].push_back(std::move(arm));
  }
  LinkOptions unlimited;
  unlimited.mode = LinkMode::kUnlimited;
  LOOM_ASSIGN_OR_RETURN(
      json arm, RunArm(rt, w, variants, ref_fused, unlimited, c, &d, "unlimited", progress));
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
