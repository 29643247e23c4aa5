// `loom bench collectives`: loom's all-reduce, reduce-scatter and all-gather against Gloo's own
// algorithms and OpenMPI on the same ranks, nccl-tests style (-b -e -f -n -w -c -o -d).
//
// Without a launcher it starts its ranks itself: under mpirun (OpenMPI over TCP, so every arm
// uses the same transport) when mpirun exists, else with loom's launcher (no MPI arm).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/cli/bench_arm.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/parse_bytes.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/comm/gloo/gloo_native.h"
#include "loom/comm/launcher.h"

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
  std::string json;
  std::string loom_segments;  // extra loom arms with these ring segment sizes (tuning)
};

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
  const bool leader = rank == 0;
  auto lo = ParseBytes(a.min_bytes), hi = ParseBytes(a.max_bytes);
  if (!lo.ok() || !hi.ok()) return fail(lo.ok() ? hi.status() : lo.status());

  std::vector<BenchOp> ops;
  std::stringstream ss(a.ops);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item == "allreduce") ops.push_back(BenchOp::kAllReduce);
    else if (item == "reduce_scatter") ops.push_back(BenchOp::kReduceScatter);
    else if (item == "allgather") ops.push_back(BenchOp::kAllGather);
    else return fail(InvalidArgumentError("unknown op '" + item + "' in --ops"));
  }
  const double memcpy_gbps = leader ? MemcpyGBps() : 0;
  nlohmann::json config = {{"min_bytes", *lo}, {"max_bytes", *hi}, {"factor", a.factor},
                           {"iters", a.iters}, {"warmup", a.warmup}, {"reps", a.reps},
                           {"op", a.op}, {"dtype", a.dtype}, {"ranks", P},
                           {"launcher", comm::LauncherName(ctx->world.launcher)},
                           {"mpi", MpiEnabled() ? "OpenMPI, btl " + a.mpi_btl : "not in this run"},
                           {"transport", "Gloo TCP over loopback for loom and Gloo"},
                           {"memcpy_GBps_1core", memcpy_gbps}};
  if (leader) PrintBenchHeader("collectives", config);

  nlohmann::json results = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::object();
  for (BenchOp op : ops) {
    if (leader) {
      std::printf("\n# %s, float sum, %d ranks: time in us (median of %d reps x %d iters), "
                  "busbw in GB/s (algbw in the JSON); ratio = best peer time / loom time\n",
                  OpName(op), P, a.reps, a.iters);
    }
    bool header_printed = false;
    double worst_ratio_1m = 1e9;
    for (int64_t bytes = *lo; bytes <= *hi; bytes *= a.factor) {
      size_t count = static_cast<size_t>(bytes / 4 / P * P);
      if (count == 0) continue;
      const size_t block = count / P;
      std::vector<float> in(op == BenchOp::kAllGather ? block : count), out(count);
      std::vector<std::unique_ptr<BenchArm>> arms;
      arms.push_back(std::make_unique<LoomArm>(&c, op, in.data(), out.data(), count));
      size_t n_loom_arms = 1;
      std::stringstream segs(a.loom_segments);
      for (std::string item; std::getline(segs, item, ',');) {
        auto seg = ParseBytes(item);
        if (!seg.ok()) return fail(seg.status());
        arms.push_back(std::make_unique<LoomArm>(&c, op, in.data(), out.data(), count, *seg));
        ++n_loom_arms;
      }
      for (auto& [label, algo] : GlooAlgorithmsFor(op)) {
        float* gin = op == BenchOp::kAllReduce ? out.data() : in.data();
        auto g = comm::GlooNativeCollective::Create(c, algo, gin, out.data(), count);
        if (g.ok()) arms.push_back(std::make_unique<GlooArm>(label, std::move(*g)));
      }
      if (MpiEnabled()) {
        auto m = MakeMpiArm(op, in.data(), out.data(), count);
        if (m.ok()) arms.push_back(std::move(*m));
      }
      std::vector<std::vector<double>> times(arms.size());
      bool all_ok = true;
      for (size_t k = 0; k < arms.size(); ++k) {
        FillInputs(op, rank, in, out);
        Status s = arms[k]->Run();
        if (!s.ok()) return fail(s.WithContext(arms[k]->name()));
        if (a.check && !CheckResult(op, rank, P, out, count)) {
          std::fprintf(stderr, "rank %d: %s %s gave a wrong result at %lld bytes\n", rank,
                       arms[k]->name().c_str(), OpName(op), static_cast<long long>(bytes));
          all_ok = false;
        }
      }
      for (int rep = 0; rep < a.reps; ++rep) {
        // Arms interleaved within each repetition, and the order rotated between repetitions so
        // that no arm always runs first after the barrier.
        for (size_t j = 0; j < arms.size(); ++j) {
          const size_t k = (j + rep) % arms.size();
          FillInputs(op, rank, in, out);
          for (int w = 0; w < (rep == 0 ? a.warmup : 0); ++w) (void)arms[k]->Run();
          if (Status s = c.Barrier(); !s.ok()) return fail(s);
          Stopwatch sw;
          for (int it = 0; it < a.iters; ++it) {
            if (Status s = arms[k]->Run(); !s.ok()) return fail(s.WithContext(arms[k]->name()));
          }
          double t = sw.Seconds() / a.iters;
          // The slowest rank defines the collective's time.
          if (Status s = c.AllReduce(TensorView::Of(&t, 1), comm::ReduceOp::kMax); !s.ok()) {
            return fail(s);
          }
          times[k].push_back(t);
        }
      }
      if (!leader) continue;
      const double bus_factor = op == BenchOp::kAllReduce ? 2.0 * (P - 1) / P : (P - 1.0) / P;
      const double total_bytes = static_cast<double>(count) * 4;
      if (!header_printed) {
        std::printf("%12s", "bytes");
        for (auto& arm : arms) std::printf(" %22s", arm->name().c_str());
        std::printf(" %8s\n", "ratio");
        header_printed = true;
      }
      std::printf("%12lld", static_cast<long long>(total_bytes));
      nlohmann::json row = {{"op", OpName(op)}, {"bytes", total_bytes}, {"check_ok", all_ok}};
      double loom_t = 0, best_peer = 1e30;
      for (size_t k = 0; k < arms.size(); ++k) {
        Stats st = Summarize(times[k]);
        double busbw = total_bytes / st.median / 1e9 * bus_factor;
        std::printf(" %12.1f %6.2f GB/s", st.median * 1e6, busbw);
        row["arms"][arms[k]->name()] = {{"time_us_median", st.median * 1e6},
                                        {"time_us_p10", st.p10 * 1e6},
                                        {"time_us_p90", st.p90 * 1e6},
                                        {"algbw_GBps", total_bytes / st.median / 1e9},
                                        {"busbw_GBps", busbw}};
        if (k == 0) loom_t = st.median;
        else if (k >= n_loom_arms) best_peer = std::min(best_peer, st.median);
      }
      double ratio = arms.size() > 1 ? best_peer / loom_t : 1.0;
      row["ratio_best_peer_over_loom"] = ratio;
      if (total_bytes >= (1 << 20)) worst_ratio_1m = std::min(worst_ratio_1m, ratio);
      std::printf(" %7.2fx%s\n", ratio, all_ok ? "" : "  WRONG RESULT");
      std::fflush(stdout);
      results.push_back(row);
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
  cmd->add_option("--loom-segments", a->loom_segments,
                  "extra loom arms with these ring segment sizes, e.g. 64K,256K (tuning)");
  cmd->callback([a, ctx] {
    if (UnderLauncher()) {
      ctx->exit_code = RunRank(*a);
      return;
    }
    ctx->exit_code = LaunchRanks(*a, *ctx);
  });
}

}  // namespace loom::cli
