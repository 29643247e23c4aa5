// One repetition of loom's side of `loom bench ckpt`, on every rank: probes, save (first and
// cached plan), cold and warm load, reshard loads, safetensors export and HF-style load.
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/base/huge_buffer.h"
#include "loom/ckpt/checkpointer.h"
#include "loom/ckpt/loader.h"
#include "loom/ckpt/safetensors.h"
#include "loom/cli/bench_ckpt.h"
#include "loom/cli/bench_ckpt_workload.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"

namespace loom::cli {
namespace {

using nlohmann::json;

int64_t PeakRssKib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6));
  }
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0).
void ResetPeakRss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

class Worker {
 public:
  Worker(const BenchCkptWorkerArgs& a, comm::Communicator* comm)
      : a_(a), comm_(comm), rank_(comm->rank()), world_(comm->size()),
        storage_(ckpt::NewPosixStorage()),
        tensors_(DenseTensors(a.hidden, LayersFor(a.hidden, a.total_mib << 20))) {}

  Status Run(json* out);

 private:
  // Times fn on every rank between barriers; returns the slowest rank's seconds.
  Result<double> Timed(const std::function<Status()>& fn) {
    LOOM_RETURN_IF_ERROR(comm_->Barrier());
    Stopwatch sw;
    LOOM_RETURN_IF_ERROR(fn());
    double t = sw.Seconds();
    LOOM_RETURN_IF_ERROR(comm_->AllReduce(TensorView::Of(&t, 1), comm::ReduceOp::kMax));
    return t;
  }
  Result<double> Max(double v) {
    LOOM_RETURN_IF_ERROR(comm_->AllReduce(TensorView::Of(&v, 1), comm::ReduceOp::kMax));
    return v;
  }
  Status DropCache(const ckpt::CheckpointSource& src) {
    for (const auto& f : src.meta.files) {
      LOOM_RETURN_IF_ERROR(storage_->DropCache(ckpt::JoinPath(src.dir, f.path)));
    }
    return OkStatus();
  }
  Status Probes(int64_t bytes, json* out);
  // Loads `layout` over `target_world` ranks (this process takes ranks t with t % world == rank)
  // after dropping the page cache; checks the values on rep 0.
  Status ReshardLoad(const ckpt::CheckpointSource& src, BenchLayout layout, int target_world,
                     const std::string& name, json* out);

  const BenchCkptWorkerArgs& a_;
  comm::Communicator* comm_;
  int rank_, world_;
  std::unique_ptr<ckpt::Storage> storage_;
  std::vector<BenchTensor> tensors_;
};

struct MappedBuffer {
  explicit MappedBuffer(int64_t n) : size(n) {
    data = static_cast<char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~MappedBuffer() { ::munmap(data, size); }
  char* data;
  int64_t size;
};

Status Worker::Probes(int64_t bytes, json* out) {
  bytes = (bytes + ckpt::kAlignment - 1) / ckpt::kAlignment * ckpt::kAlignment;
  HugeBuffer src(bytes), warm(bytes);  // as loom's pool: the best case for O_DIRECT
  // Incompressible contents: a constant buffer can be written faster than real data by
  // storage that compresses or deduplicates underneath.
  {
    uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(rank_);
    auto* w = reinterpret_cast<uint64_t*>(src.data());
    for (int64_t i = 0; i < bytes / 8; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w[i] = x;
    }
  }
  std::memset(warm.data(), 0, bytes);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    LOOM_ASSIGN_OR_RETURN(double t, Timed([&] {
      std::memcpy(warm.data(), src.data(), bytes);
      return OkStatus();
    }));
    best = std::min(best, t);
  }
  (*out)["memcpy_warm_s"] = best;
  {
    MappedBuffer fresh(bytes);
    LOOM_ASSIGN_OR_RETURN(double t, Timed([&] {
      std::memcpy(fresh.data, src.data(), bytes);
      return OkStatus();
    }));
    (*out)["memcpy_first_touch_s"] = t;
  }
  const std::string dir = ckpt::JoinPath(a_.dir, "probe");
  LOOM_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string path = ckpt::JoinPath(dir, "r" + std::to_string(rank_) + ".bin");
  constexpr int64_t kBlock = 16 << 20;
  LOOM_ASSIGN_OR_RETURN(double tw, Timed([&]() -> Status {
    LOOM_ASSIGN_OR_RETURN(auto f, storage_->Create(path, {.direct = true}));
    for (int64_t off = 0; off < bytes; off += kBlock) {
      LOOM_RETURN_IF_ERROR(f->WriteAt(off, src.data() + off, std::min(kBlock, bytes - off)));
    }
    LOOM_RETURN_IF_ERROR(f->Sync());
    return f->Close();
  }));
  (*out)["odirect_write_s"] = tw;
  LOOM_RETURN_IF_ERROR(storage_->DropCache(path));
  LOOM_ASSIGN_OR_RETURN(double tr, Timed([&]() -> Status {
    LOOM_ASSIGN_OR_RETURN(auto f, storage_->Open(path, {.direct = true}));
    for (int64_t off = 0; off < bytes; off += kBlock) {
      LOOM_RETURN_IF_ERROR(f->ReadAt(off, std::min(kBlock, bytes - off), warm.data() + off));
    }
    return OkStatus();
  }));
  (*out)["odirect_read_s"] = tr;
  (*out)["probe_bytes"] = bytes * world_;
  return storage_->RemoveAll(path);
}

Status Worker::ReshardLoad(const ckpt::CheckpointSource& src, BenchLayout layout,
                           int target_world, const std::string& name, json* out) {
  std::vector<std::unique_ptr<BenchState>> targets;
  ckpt::StateDict all;  // this process's share of the target ranks, as one request
  for (int t = rank_; t < target_world; t += world_) {
    targets.push_back(std::make_unique<BenchState>(tensors_, layout, t, target_world, false));
    for (const ckpt::TensorEntry& e : targets.back()->dict().tensors()) all.AddTensor(e);
  }
  // Independent: each process reads what it needs. Cooperative: each byte is read once.
  for (const bool coop : {false, true}) {
    for (auto& st : targets) st->Clear();
    LOOM_RETURN_IF_ERROR(DropCache(src));
    ckpt::LoadOptions opts;
    opts.comm = coop ? comm_ : nullptr;
    ckpt::LoadReport rep;
    LOOM_ASSIGN_OR_RETURN(double t, Timed([&]() -> Status {
      LOOM_ASSIGN_OR_RETURN(rep, ckpt::Load(*storage_, src, all, opts));
      return OkStatus();
    }));
    bool ok = true;
    if (a_.rep == 0) {
      for (auto& st : targets) ok = ok && st->MatchesPattern();
    }
    double bad = ok ? 0 : 1;
    LOOM_ASSIGN_OR_RETURN(bad, Max(bad));
    if (bad > 0) return DataLossError("bench ckpt: " + name + " loaded wrong values");
    double tot[2] = {static_cast<double>(rep.bytes_needed), static_cast<double>(rep.bytes_read)};
    LOOM_RETURN_IF_ERROR(comm_->AllReduce(TensorView::Of(tot, 2), comm::ReduceOp::kSum));
    (*out)[coop ? name + "/coop" : name] = {
        {"s", t}, {"read_amplification", tot[1] / tot[0]}, {"bytes_needed", tot[0]},
        {"bytes_read", tot[1]}, {"target_world", target_world}};
  }
  return OkStatus();
}

Status Worker::Run(json* out) {
  const bool dense = a_.workload == "dense";
  const BenchLayout saved = dense ? BenchLayout::kTp : BenchLayout::kFlat;
  BenchState state(tensors_, saved, rank_, world_, true);
  const std::string root = ckpt::JoinPath(a_.dir, "loom-" + a_.workload);
  if (rank_ == 0) LOOM_RETURN_IF_ERROR(storage_->RemoveAll(root));
  int64_t total_bytes = 0;
  for (const BenchTensor& t : tensors_) total_bytes += ckpt::NumElements(t.shape) * 4;
  (*out)["workload"] = a_.workload;
  (*out)["bytes"] = total_bytes;
  (*out)["tensors"] = tensors_.size();
  (*out)["world"] = world_;

  json probe;
  LOOM_RETURN_IF_ERROR(Probes(state.bytes(), &probe));
  (*out)["probe"] = probe;
  ResetPeakRss();  // the peak from here to the end of the same-layout loads

  ckpt::Checkpointer ck(storage_.get(), root, comm_);
  ck.ReservePool(state.bytes() + (64 << 20));
  json saves = json::array();
  for (int step = 1; step <= 2; ++step) {
    ckpt::SaveStats stats;
    double stall = 0;
    LOOM_ASSIGN_OR_RETURN(double persist, Timed([&]() -> Status {
      Stopwatch sw;
      LOOM_ASSIGN_OR_RETURN(ckpt::SaveHandle h, ck.Save(step, state.dict()));
      stall = sw.Seconds();
      stats = h.stats();
      return h.Wait();
    }));
    LOOM_ASSIGN_OR_RETURN(stall, Max(stall));
    LOOM_ASSIGN_OR_RETURN(double plan, Max(stats.plan_s));
    saves.push_back({{"step", step}, {"stall_s", stall}, {"persist_s", persist},
                     {"plan_s", plan}, {"plan_cached", stats.plan_cached}});
  }
  (*out)["saves"] = saves;

  (*out)["plan_gathers"] = ck.plan_gathers();
  LOOM_ASSIGN_OR_RETURN(ckpt::CheckpointSource src, ckpt::OpenCheckpoint(*storage_, root));
  (*out)["files"] = src.meta.files.size();

  // Same layout: cold, then warm.
  BenchState target(tensors_, saved, rank_, world_, false);
  LOOM_RETURN_IF_ERROR(DropCache(src));
  double amp = 0;
  LOOM_ASSIGN_OR_RETURN(double cold, Timed([&]() -> Status {
    LOOM_ASSIGN_OR_RETURN(ckpt::LoadReport rep, ckpt::Load(*storage_, src, target.dict()));
    amp = rep.read_amplification();
    return OkStatus();
  }));
  if (a_.rep == 0 && !target.MatchesPattern()) return DataLossError("bench ckpt: load mismatch");
  LOOM_ASSIGN_OR_RETURN(double warm, Timed([&]() -> Status {
    return ckpt::Load(*storage_, src, target.dict()).status();
  }));
  LOOM_ASSIGN_OR_RETURN(amp, Max(amp));
  double rss = static_cast<double>(PeakRssKib());
  LOOM_ASSIGN_OR_RETURN(rss, Max(rss));
  (*out)["peak_rss_kib"] = rss;
  (*out)["load_cold_s"] = cold;
  (*out)["load_warm_s"] = warm;
  (*out)["load_read_amplification"] = amp;

  json reshard = json::object();
  if (dense) {
    LOOM_RETURN_IF_ERROR(ReshardLoad(src, BenchLayout::kFull, 1, "tp2_to_1", &reshard));
    LOOM_RETURN_IF_ERROR(ReshardLoad(src, BenchLayout::kTpOtherDim, 2, "tp2_to_tp2_other_dim",
                                     &reshard));
    LOOM_RETURN_IF_ERROR(ReshardLoad(src, BenchLayout::kTp, 3, "tp2_to_tp3_uneven", &reshard));
  } else {
    LOOM_RETURN_IF_ERROR(ReshardLoad(src, BenchLayout::kTp, 2, "zero2_to_tp2", &reshard));
  }
  (*out)["reshard"] = reshard;

  if (dense) {
    // Hugging Face interop: export the checkpoint as one safetensors file, then load TP=2 halves
    // straight from it (partial reads), against reading every tensor whole.
    const std::string hf = ckpt::JoinPath(a_.dir, "hf.safetensors");
    LOOM_ASSIGN_OR_RETURN(double export_s, Timed([&]() -> Status {
      if (rank_ != 0) return OkStatus();
      return ckpt::ExportSafetensors(*storage_, src, hf, {}).status();
    }));
    LOOM_ASSIGN_OR_RETURN(ckpt::CheckpointSource hsrc, ckpt::OpenCheckpoint(*storage_, hf));
    json hfj = {{"export_s", export_s}};
    LOOM_RETURN_IF_ERROR(ReshardLoad(hsrc, BenchLayout::kTp, 2, "hf_to_tp2", &hfj));
    LOOM_RETURN_IF_ERROR(ReshardLoad(hsrc, BenchLayout::kFull, 2, "hf_full_read", &hfj));
    (*out)["hf"] = hfj;
    if (rank_ == 0) LOOM_RETURN_IF_ERROR(storage_->RemoveAll(hf));
  }
  LOOM_RETURN_IF_ERROR(comm_->Barrier());
  if (rank_ == 0) LOOM_RETURN_IF_ERROR(storage_->RemoveAll(root));
  return OkStatus();
}

}  // namespace

int RunBenchCkptWorker(const BenchCkptWorkerArgs& a) {
  auto ctx = ConnectRank("bench-ckpt");
  if (!ctx.ok()) {
    std::fprintf(stderr, "loom bench ckpt worker: %s\n", ctx.status().ToString().c_str());
    return kExitFailure;
  }
  Worker w(a, ctx->comm.get());
  json out;
  Status s = w.Run(&out);
  if (s.ok() && ctx->comm->rank() == 0) s = WriteFileAtomic(a.out, out.dump());
  if (!s.ok()) {
    std::fprintf(stderr, "loom bench ckpt worker (rank %d): %s\n", ctx->comm->rank(),
                 s.ToString().c_str());
    return kExitFailure;
  }
  return 0;
}

}  // namespace loom::cli
