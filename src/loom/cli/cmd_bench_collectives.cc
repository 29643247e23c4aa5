// `loom bench collectives`: loom's all-reduce, reduce-scatter and all-gather against Gloo's own
// algorithms and OpenMPI on the same ranks, nccl-tests style (-b -e -f -n -w -c -o -d).
//
// Without a launcher it starts its ranks itself: under mpirun (OpenMPI over TCP, so every arm
// uses the same transport) when mpirun exists, else with loom's launcher (no MPI arm).
// --compress int4:g128:hadamard,... adds one compressed arm per codec to all-reduce and
// reduce-scatter (bench_compressed_arm.h): checked by its error against an fp64 reference instead
// of exactly, and reported with its bytes on the wire and its speedup over the best Gloo arm.
// Every arm reports CPU seconds per call (process CPU time, all threads, mean over ranks).
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/base/thread_policy.h"
#include "loom/cli/bench_arm.h"
#include "loom/cli/bench_compressed_arm.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/parse_bytes.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/comm/gloo/gloo_native.h"
#include "loom/comm/launcher.h"
#include "loom/compress/codec.h"

namespace loom::cli {
namespace {

struct CollArgs {
  std::string min_bytes = "1K";
  std::string max_bytes = "256M";
  int factor = 4;
  int iters = 5;
  int warmup = 2;
  int reps = 5;
  int check = 1;
  std::string op = "sum";
  std::string dtype = "float";
  std::string ops = "allreduce,reduce_scatter,allgather";
  int nproc = 2;
  std::string mpi = "auto";     // auto | on | off
  std::string mpi_btl = "tcp";  // tcp | vader (shared memory)
  std::string sched = "batch";  // every arm's threads: batch (as loom train) | normal
  std::string json;
  std::string loom_segments;  // extra loom arms with these ring segment sizes (tuning)
  std::string compress;       // codec specs: one compressed arm each (allreduce, reduce_scatter)
};

constexpr int kCol = 24;  // table column width per arm

double ProcessCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Result<std::vector<std::unique_ptr<compress::Codec>>> MakeCodecs(const std::string& specs) {
  std::vector<std::unique_ptr<compress::Codec>> codecs;
  for (const std::string& item : Split(specs)) {
    // "ps:<codec>": the same codec through the parameter-server push_pull (all-reduce only).
    // "tl:", "ring:", "sum:": other compressed routes (bench_compressed_arm.h).
    LOOM_ASSIGN_OR_RETURN(compress::CodecSpec spec, compress::ParseCodecSpec(CodecPartOf(item)));
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<compress::Codec> codec, compress::MakeCodec(spec));
    codecs.push_back(std::move(codec));
  }
  return codecs;
}

const char* OpName(BenchOp op) {
  switch (op) {
    case BenchOp::kAllReduce: return "allreduce";
    case BenchOp::kReduceScatter: return "reduce_scatter";
    case BenchOp::kAllGather: return "allgather";
  }
  return "?";
}

// loom's arm: the Communicator's default algorithm choice.
class LoomArm final : public BenchArm {
 public:
  LoomArm(comm::Communicator* c, BenchOp op, float* in, float* out, size_t count,
          int64_t segment_bytes = 0)
      : BenchArm(segment_bytes ? "loom_seg" + std::to_string(segment_bytes >> 10) + "K" : "loom"),
        c_(c), op_(op), in_(in), out_(out), count_(count),
        opts_{.segment_bytes = segment_bytes} {}
  Status Run() override {
    const int64_t n = static_cast<int64_t>(count_), block = n / c_->size();
    switch (op_) {
      case BenchOp::kAllReduce:
        return c_->AllReduce(TensorView::Of(out_, n), comm::ReduceOp::kSum, opts_);
      case BenchOp::kReduceScatter:
        return c_->ReduceScatter(TensorView::Of(in_, n), TensorView::Of(out_, block),
                                 comm::ReduceOp::kSum, opts_);
      case BenchOp::kAllGather:
        return c_->AllGather(TensorView::Of(in_, block), TensorView::Of(out_, n), opts_);
    }
    return OkStatus();
  }

 private:
  comm::Communicator* c_;
  BenchOp op_;
  float* in_;
  float* out_;
  size_t count_;
  comm::CommOptions opts_;
};

class GlooArm final : public BenchArm {
 public:
  GlooArm(std::string name, std::unique_ptr<comm::GlooNativeCollective> impl)
      : BenchArm(std::move(name)), impl_(std::move(impl)) {}
  Status Run() override { return impl_->Run(); }

 private:
  std::unique_ptr<comm::GlooNativeCollective> impl_;
};

std::vector<std::pair<std::string, std::string>> GlooAlgorithmsFor(BenchOp op) {
  switch (op) {
    case BenchOp::kAllReduce:
      return {{"gloo_ring", "allreduce_ring"},
              {"gloo_bcube", "allreduce_bcube"},
              {"gloo_ring_chunked", "allreduce_ring_chunked"},
              {"gloo_halving_doubling", "allreduce_halving_doubling"}};
    case BenchOp::kReduceScatter:
      return {{"gloo_halving_doubling", "reduce_scatter_halving_doubling"}};
    case BenchOp::kAllGather:
      return {{"gloo_ring", "allgather_ring"}};
  }
  return {};
}

// Fills the buffers so that one run of `op` has a known result, then checks it.
void FillInputs(BenchOp op, int rank, std::vector<float>& in, std::vector<float>& out) {
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((rank + 1) * ((i % 5) + 1));
  if (op == BenchOp::kAllReduce) std::memcpy(out.data(), in.data(), in.size() * 4);
}

bool CheckResult(BenchOp op, int rank, int P, const std::vector<float>& out, size_t count) {
  const float rank_sum = static_cast<float>(P * (P + 1) / 2);
  const size_t block = count / P;
  for (size_t i = 0; i < (op == BenchOp::kReduceScatter ? block : count); ++i) {
    float expect;
    if (op == BenchOp::kAllReduce) {
      expect = rank_sum * static_cast<float>((i % 5) + 1);
    } else if (op == BenchOp::kReduceScatter) {
      expect = rank_sum * static_cast<float>(((rank * block + i) % 5) + 1);
    } else {
      size_t src = i / block, j = i % block;
      expect = static_cast<float>((src + 1) * ((j % 5) + 1));
    }
    if (out[i] != expect) return false;
  }
  return true;
}

double MemcpyGBps() {
  std::vector<char> a(64 << 20, 1), b(64 << 20, 0);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    Stopwatch sw;
    std::memcpy(b.data(), a.data(), a.size());
    best = std::max(best, static_cast<double>(a.size()) / sw.Seconds() / 1e9);
  }
  return best;
}

// The arms of one (op, size) and what was measured for them. Arms in order: loom's fp32 arms
// [0, n_loom_arms), fp32 peers (Gloo, MPI) [n_loom_arms, first_compressed), compressed arms
// [first_compressed, end).
struct SizeRun {
  BenchOp op = BenchOp::kAllReduce;
  size_t count = 0;  // floats in the full buffer, a multiple of the world size
  std::vector<float> in, out;
  std::vector<std::unique_ptr<BenchArm>> arms;
  size_t n_loom_arms = 1;
  size_t first_compressed = 0;
  std::unique_ptr<GaussianWorkload> workload;   // compressed arms' inputs and reference
  std::vector<std::vector<double>> times, cpu;  // per arm, per repetition: s per call
  std::vector<double> slowest;                  // per arm: slowest single call (s), all ranks
  std::vector<double> rel_error;                // per compressed arm
  bool all_ok = true;

  bool IsCompressed(size_t k) const { return k >= first_compressed; }
  CompressedArm& Compressed(size_t k) { return static_cast<CompressedArm&>(*arms[k]); }
  const CompressedArm& Compressed(size_t k) const {
    return static_cast<const CompressedArm&>(*arms[k]);
  }
};

Status AddArms(const CollArgs& a, comm::Communicator& c,
               const std::vector<std::unique_ptr<compress::Codec>>& codecs, SizeRun& r) {
  const size_t count = r.count, block = count / c.size();
  r.in.assign(r.op == BenchOp::kAllGather ? block : count, 0.f);
  r.out.assign(count, 0.f);
  r.arms.push_back(std::make_unique<LoomArm>(&c, r.op, r.in.data(), r.out.data(), count));
  for (const std::string& item : Split(a.loom_segments)) {
    LOOM_ASSIGN_OR_RETURN(int64_t seg, ParseBytes(item));
    r.arms.push_back(std::make_unique<LoomArm>(&c, r.op, r.in.data(), r.out.data(), count, seg));
  }
  r.n_loom_arms = r.arms.size();
  for (auto& [label, algo] : GlooAlgorithmsFor(r.op)) {
    float* gin = r.op == BenchOp::kAllReduce ? r.out.data() : r.in.data();
    auto g = comm::GlooNativeCollective::Create(c, algo, gin, r.out.data(), count);
    if (g.ok()) r.arms.push_back(std::make_unique<GlooArm>(label, std::move(*g)));
  }
  if (MpiEnabled()) {
    auto m = MakeMpiArm(r.op, r.in.data(), r.out.data(), count);
    if (m.ok()) r.arms.push_back(std::move(*m));
  }
  r.first_compressed = r.arms.size();
  if (r.op == BenchOp::kAllGather || codecs.empty()) return OkStatus();
  r.workload = std::make_unique<GaussianWorkload>(r.op, c.rank(), c.size(), count);
  const std::vector<std::string> specs = Split(a.compress);
  for (size_t i = 0; i < codecs.size(); ++i) {
    if (AllReduceOnlySpec(specs[i]) && r.op != BenchOp::kAllReduce) continue;
    r.arms.push_back(std::make_unique<CompressedArm>(
        &c, r.op, specs[i], codecs[i].get(), r.workload.get(), r.in.data(), r.out.data(), count));
  }
  return OkStatus();
}

// The check (exact for fp32 arms, the error for compressed ones), then the timed repetitions.
Status TimeArms(const CollArgs& a, comm::Communicator& c, SizeRun& r) {
  const int rank = c.rank(), P = c.size();
  auto fill = [&](size_t k) {
    if (r.IsCompressed(k)) {
      r.Compressed(k).Fill();
    } else {
      FillInputs(r.op, rank, r.in, r.out);
    }
  };
  for (size_t k = 0; k < r.arms.size(); ++k) {
    if (r.IsCompressed(k)) {
      Result<double> err = r.Compressed(k).MeasureError();
      if (!err.ok()) return err.status().WithContext(r.arms[k]->name());
      r.rel_error.push_back(*err);
      continue;
    }
    fill(k);
    LOOM_RETURN_IF_ERROR(r.arms[k]->Run().WithContext(r.arms[k]->name()));
    if (a.check && !CheckResult(r.op, rank, P, r.out, r.count)) {
      std::fprintf(stderr, "rank %d: %s %s gave a wrong result at %lld bytes\n", rank,
                   r.arms[k]->name().c_str(), OpName(r.op), static_cast<long long>(r.count * 4));
      r.all_ok = false;
    }
  }
  r.times.assign(r.arms.size(), {});
  r.cpu.assign(r.arms.size(), {});
  r.slowest.assign(r.arms.size(), 0.0);
  for (int rep = 0; rep < a.reps; ++rep) {
    // Arms interleaved within each repetition, and the order rotated between repetitions so
    // that no arm always runs first after the barrier.
    for (size_t j = 0; j < r.arms.size(); ++j) {
      const size_t k = (j + rep) % r.arms.size();
      fill(k);
      for (int w = 0; w < (rep == 0 ? a.warmup : 0); ++w) (void)r.arms[k]->Run();
      LOOM_RETURN_IF_ERROR(c.Barrier());
      const double cpu0 = ProcessCpuSeconds();
      Stopwatch sw;
      double slowest = 0;  // the tail: one stalled call shows here, not in the mean
      for (int it = 0; it < a.iters; ++it) {
        const double t0 = sw.Seconds();
        LOOM_RETURN_IF_ERROR(r.arms[k]->Run().WithContext(r.arms[k]->name()));
        slowest = std::max(slowest, sw.Seconds() - t0);
      }
      double t = sw.Seconds() / a.iters;
      double cpu = (ProcessCpuSeconds() - cpu0) / a.iters;
      // The slowest rank defines the collective's time; CPU time is the mean over ranks.
      LOOM_RETURN_IF_ERROR(c.AllReduce(TensorView::Of(&t, 1), comm::ReduceOp::kMax));
      LOOM_RETURN_IF_ERROR(c.AllReduce(TensorView::Of(&cpu, 1), comm::ReduceOp::kAvg));
      LOOM_RETURN_IF_ERROR(c.AllReduce(TensorView::Of(&slowest, 1), comm::ReduceOp::kMax));
      r.times[k].push_back(t);
      r.cpu[k].push_back(cpu);
      r.slowest[k] = std::max(r.slowest[k], slowest);
    }
  }
  return OkStatus();
}

// Prints one table row (time and busbw per arm, ratio), the CPU row and one line per compressed
// arm, and returns the JSON row. `ratio` = best fp32 peer / loom fp32, as without compression.
nlohmann::json ReportSize(const SizeRun& r, int P, bool print_header, double* ratio,
                          nlohmann::json& summary) {
  const double bus_factor = r.op == BenchOp::kAllReduce ? 2.0 * (P - 1) / P : (P - 1.0) / P;
  const double total_bytes = static_cast<double>(r.count) * 4;
  const size_t n = r.arms.size();
  std::vector<Stats> st(n);
  double best_peer = 1e30, best_gloo = 1e30;
  std::string best_gloo_name;
  for (size_t k = 0; k < n; ++k) {
    st[k] = Summarize(r.times[k]);
    if (k < r.n_loom_arms || r.IsCompressed(k)) continue;
    best_peer = std::min(best_peer, st[k].median);
    if (r.arms[k]->name().rfind("gloo_", 0) == 0 && st[k].median < best_gloo) {
      best_gloo = st[k].median;
      best_gloo_name = r.arms[k]->name();
    }
  }
  if (print_header) {
    std::printf("%12s", "bytes");
    for (auto& arm : r.arms) std::printf(" %*s", kCol, arm->name().c_str());
    std::printf(" %8s\n", "ratio");
  }
  std::printf("%12lld", static_cast<long long>(total_bytes));
  nlohmann::json row = {{"op", OpName(r.op)}, {"bytes", total_bytes}, {"check_ok", r.all_ok}};
  for (size_t k = 0; k < n; ++k) {
    const double busbw = total_bytes / st[k].median / 1e9 * bus_factor;
    std::printf(" %*.1f %6.2f GB/s", kCol - 12, st[k].median * 1e6, busbw);
    nlohmann::json arm = {{"time_us_median", st[k].median * 1e6},
                          {"time_us_p10", st[k].p10 * 1e6},
                          {"time_us_p90", st[k].p90 * 1e6},
                          {"algbw_GBps", total_bytes / st[k].median / 1e9},
                          {"busbw_GBps", busbw},
                          {"cpu_s_per_call", Summarize(r.cpu[k]).median},
                          {"slowest_call_us", r.slowest[k] * 1e6},
                          {"wire_bytes_per_rank", bus_factor * total_bytes}};
    if (r.IsCompressed(k)) {
      const CompressedArm& ca = r.Compressed(k);
      const double calls = static_cast<double>(std::max<int64_t>(ca.calls(), 1));
      arm["wire_bytes_per_rank"] = ca.WireBytesPerCall();
      arm["fp32_wire_bytes_per_rank"] = ca.Fp32WireBytesPerCall();
      arm["wire_ratio"] = ca.WireBytesPerCall() / ca.Fp32WireBytesPerCall();
      arm["rel_l2_error"] = r.rel_error[k - r.first_compressed];
      arm["encode_s_per_call"] = ca.stats().encode_s / calls;
      arm["decode_s_per_call"] = ca.stats().decode_s / calls;
      arm["comm_s_per_call"] = ca.stats().comm_s / calls;
      if (!best_gloo_name.empty()) {
        arm["speedup_vs_gloo_best"] = best_gloo / st[k].median;
        arm["gloo_best"] = best_gloo_name;
      }
      summary["compressed"][OpName(r.op)][ca.name()] = {
          {"bytes", total_bytes},
          {"speedup_vs_gloo_best", arm.value("speedup_vs_gloo_best", 0.0)},
          {"rel_l2_error", arm["rel_l2_error"]},
          {"wire_ratio", arm["wire_ratio"]}};
    }
    row["arms"][r.arms[k]->name()] = arm;
  }
  *ratio = r.first_compressed > r.n_loom_arms ? best_peer / st[0].median : 1.0;
  row["ratio_best_peer_over_loom"] = *ratio;
  std::printf(" %7.2fx%s\n", *ratio, r.all_ok ? "" : "  WRONG RESULT");
  std::printf("%12s", "cpu ms/call");
  for (size_t k = 0; k < n; ++k) {
    std::printf(" %*.2f", kCol, Summarize(r.cpu[k]).median * 1e3);
  }
  std::printf("\n%12s", "slowest ms");
  for (size_t k = 0; k < n; ++k) std::printf(" %*.2f", kCol, r.slowest[k] * 1e3);
  std::printf("\n");
  for (size_t k = r.first_compressed; k < n; ++k) {
    const nlohmann::json& arm = row["arms"][r.arms[k]->name()];
    std::printf("%12s %s: %.3f MB/rank/call on the wire (%.3fx fp32), rel err %.2e", "",
                r.arms[k]->name().c_str(), arm["wire_bytes_per_rank"].get<double>() / 1e6,
                arm["wire_ratio"].get<double>(), arm["rel_l2_error"].get<double>());
    if (arm.contains("speedup_vs_gloo_best")) {
      std::printf(", %.2fx vs %s", arm["speedup_vs_gloo_best"].get<double>(),
                  best_gloo_name.c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  return row;
}

int RunRank(const CollArgs& a) {
  auto ctx = ConnectRank("bench-collectives");
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench collectives: %s\n", s.ToString().c_str());
    return kExitFailure;
  };
  if (!ctx.ok()) return fail(ctx.status());
  if (Status s = MpiInit(); !s.ok()) return fail(s);
  comm::Communicator& c = *ctx->comm;
  const int P = c.size(), rank = c.rank();
  // The same policy for every arm, as `loom train sched=...` runs its threads.
  std::optional<ScopedBatchPolicy> batch_policy;
  if (a.sched == "batch") batch_policy.emplace(ScopedBatchPolicy::Scope::kProcess);
  const bool leader = rank == 0;
  auto lo = ParseBytes(a.min_bytes), hi = ParseBytes(a.max_bytes);
  if (!lo.ok() || !hi.ok()) return fail(lo.ok() ? hi.status() : lo.status());
  auto codecs = MakeCodecs(a.compress);
  if (!codecs.ok()) return fail(codecs.status());

  std::vector<BenchOp> ops;
  std::stringstream ss(a.ops);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item == "allreduce") ops.push_back(BenchOp::kAllReduce);
    else if (item == "reduce_scatter") ops.push_back(BenchOp::kReduceScatter);
    else if (item == "allgather") ops.push_back(BenchOp::kAllGather);
    else return fail(InvalidArgumentError("unknown op '" + item + "' in --ops"));
  }
  const double memcpy_gbps = leader ? MemcpyGBps() : 0;
  const char* host_addr = std::getenv("LOOM_HOST_ADDR");
  nlohmann::json config = {
      {"min_bytes", *lo}, {"max_bytes", *hi}, {"factor", a.factor},
      {"iters", a.iters}, {"warmup", a.warmup}, {"reps", a.reps},
      {"op", a.op}, {"dtype", a.dtype}, {"ranks", P},
      {"launcher", comm::LauncherName(ctx->world.launcher)},
      {"mpi", MpiEnabled() ? "OpenMPI, btl " + a.mpi_btl : "not in this run"},
      {"transport", host_addr != nullptr && *host_addr != '\0'
                        ? std::string("Gloo TCP for loom and Gloo, this host at ") + host_addr
                        : std::string("Gloo TCP over loopback for loom and Gloo")},
      {"compress", a.compress},
      {"sched", batch_policy && batch_policy->ok() ? "batch" : "normal"},
      {"memcpy_GBps_1core", memcpy_gbps}};
  if (!a.compress.empty()) {
    config["compressed_arms"] =
        "QuantizedCollectives; all-reduce with server error feedback (timed calls average so "
        "values stay bounded), reduce-scatter as all-to-all; inputs N(0,1) from Philox stream "
        "(seed, rank); rel_l2_error of one sum vs the fp64 sum; busbw = effective fp32 "
        "bandwidth (fp32 bytes replaced / time); wire_bytes_per_rank of fp32 arms = the "
        "bandwidth-optimal volume";
  }
  if (leader) PrintBenchHeader("collectives", config);

  nlohmann::json results = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::object();
  for (BenchOp op : ops) {
    if (leader) {
      std::printf("\n# %s, float sum, %d ranks: time in us (median of %d reps x %d iters), "
                  "busbw in GB/s (algbw in the JSON); ratio = best fp32 peer time / loom time\n",
                  OpName(op), P, a.reps, a.iters);
    }
    bool header_printed = false;
    double worst_ratio_1m = 1e9;
    for (int64_t bytes = *lo; bytes <= *hi; bytes *= a.factor) {
      SizeRun r;
      r.op = op;
      r.count = static_cast<size_t>(bytes / 4 / P * P);
      if (r.count == 0) continue;
      if (Status s = AddArms(a, c, *codecs, r); !s.ok()) return fail(s);
      if (Status s = TimeArms(a, c, r); !s.ok()) return fail(s);
      if (!leader) continue;
      double ratio = 1.0;
      results.push_back(ReportSize(r, P, !header_printed, &ratio, summary));
      header_printed = true;
      if (r.count * 4 >= (1u << 20)) worst_ratio_1m = std::min(worst_ratio_1m, ratio);
    }
    if (leader && worst_ratio_1m < 1e9) {
      summary[std::string(OpName(op)) + "_min_ratio_at_1MiB_plus"] = worst_ratio_1m;
    }
  }
  if (leader) {
    summary["memcpy_GBps_1core"] = memcpy_gbps;
    std::printf("\nratio > 1: loom is faster than the best peer at that size. Physical limit on "
                "this host: single-core memcpy %.1f GB/s.\n", memcpy_gbps);
    if (!a.json.empty()) {
      if (Status s = WriteBenchJson(a.json, "collectives", config, summary, results); !s.ok()) {
        return fail(s);
      }
      std::printf("wrote %s\n", a.json.c_str());
    }
  }
  MpiFinalize();
  return 0;
}

int LaunchRanks(const CollArgs& a, const CliContext& ctx) {
#ifdef LOOM_HAVE_MPI
  const bool built_with_mpi = true;
#else
  const bool built_with_mpi = false;
#endif
  const bool have_mpirun = std::system("command -v mpirun >/dev/null 2>&1") == 0;
  if (a.mpi == "on" && !(built_with_mpi && have_mpirun)) {
    std::fprintf(stderr, "loom bench collectives: --mpi on needs %s\n",
                 built_with_mpi ? "mpirun (apt-get install openmpi-bin)"
                                : "a loom built with MPI (libopenmpi-dev)");
    return kExitUsage;
  }
  if (a.mpi == "off" || !built_with_mpi || !have_mpirun) {
    if (a.mpi == "auto") std::printf("# OpenMPI arm skipped: %s\n", built_with_mpi ? "no mpirun" : "built without MPI");
    return RelaunchAsRanks(ctx.argv, a.nproc, "loom bench collectives");
  }
  // Ranks under mpirun: every arm runs in the same processes, MPI over TCP like Gloo.
  std::string dir = "/tmp/loom-rdzv-mpi-" + std::to_string(::getpid());
  std::vector<std::string> argv = {"mpirun", "-n", std::to_string(a.nproc), "--oversubscribe",
                                   "--bind-to", "none", "--mca", "btl", "self," + a.mpi_btl,
                                   "-x", "LOOM_STORE=file://" + dir,
                                   "-x", "LOOM_RUN_ID=bench-" + std::to_string(::getpid()),
                                   "-x", "OPENBLAS_NUM_THREADS=1", SelfExe()};
  argv.insert(argv.end(), ctx.argv.begin() + 1, ctx.argv.end());
  std::map<std::string, std::string> env;
  if (::geteuid() == 0) {
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  }
  int rc = RunForeground(argv, env);
  std::string rm = "rm -rf '" + dir + "'";
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "warning: could not remove %s\n", dir.c_str());
  return rc;
}

}  // namespace

void RegisterBenchCollectives(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand(
      "collectives", "loom's allreduce/reduce_scatter/allgather vs Gloo's algorithms and OpenMPI");
  auto a = std::make_shared<CollArgs>();
  cmd->add_option("-b,--minbytes", a->min_bytes, "smallest message (e.g. 1K)");
  cmd->add_option("-e,--maxbytes", a->max_bytes, "largest message (e.g. 256M)");
  cmd->add_option("-f,--stepfactor", a->factor, "size multiplication factor")->check(CLI::Range(2, 1024));
  cmd->add_option("-n,--iters", a->iters, "timed iterations per repetition");
  cmd->add_option("-w,--warmup_iters", a->warmup, "warm-up iterations");
  cmd->add_option("--reps", a->reps, "repetitions (arms interleaved); median and p10/p90 reported");
  cmd->add_option("-c,--check", a->check, "check results (1) or not (0)");
  cmd->add_option("-o,--op", a->op, "reduction (sum)")->check(CLI::IsMember({"sum"}));
  cmd->add_option("-d,--datatype", a->dtype, "data type (float)")->check(CLI::IsMember({"float"}));
  cmd->add_option("--ops", a->ops, "comma-separated: allreduce,reduce_scatter,allgather");
  cmd->add_option("--nproc", a->nproc, "ranks");
  cmd->add_option("--mpi", a->mpi, "auto|on|off: launch under mpirun and include OpenMPI")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--mpi-btl", a->mpi_btl, "OpenMPI transport: tcp (as Gloo) or vader (shm)")
      ->check(CLI::IsMember({"tcp", "vader"}));
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->add_option("--sched", a->sched,
                  "scheduling policy of every arm's threads: batch (as loom train) or normal")
      ->check(CLI::IsMember({"batch", "normal"}));
  cmd->add_option("--loom-segments", a->loom_segments,
                  "extra loom arms with these ring segment sizes, e.g. 64K,256K (tuning)");
  cmd->add_option("--compress", a->compress,
                  "compressed arms for allreduce/reduce_scatter, one per codec spec, e.g. "
                  "int4:g128:hadamard,int8:g128; ps:<spec>: that codec through the "
                  "parameter-server push_pull (allreduce only); tl:<spec>: two-level, int8:g128 "
                  "inside nodes of 2 ranks; ring:<spec>: the naive requantizing ring (ablation, "
                  "allreduce only); sum:<spec>: summable fp16/bf16 ring (allreduce only)");
  cmd->callback([a, ctx] {
    if (auto codecs = MakeCodecs(a->compress); !codecs.ok()) {
      std::fprintf(stderr, "loom bench collectives: --compress: %s\n",
                   codecs.status().ToString().c_str());
      ctx->exit_code = kExitUsage;
      return;
    }
    if (UnderLauncher()) {
      ctx->exit_code = RunRank(*a);
      return;
    }
    ctx->exit_code = LaunchRanks(*a, *ctx);
  });
}

}  // namespace loom::cli
