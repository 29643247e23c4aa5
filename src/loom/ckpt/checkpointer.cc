#include "loom/ckpt/checkpointer.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/base/logging.h"
#include "loom/base/stream_copy.h"
#include "loom/ckpt/parallel.h"
#include "loom/comm/communicator.h"

namespace loom::ckpt {

using nlohmann::json;

std::string StepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

// Where one save goes on one tier.
struct SaveJobTier {
  Storage* storage;
  std::string root, tmp_dir, final_dir;
  std::string stage_prefix;  // telemetry: "" for the first tier, "persist_" for the second
};

struct SaveJob {
  int64_t step = 0;
  SaveOptions opts;
  std::shared_ptr<const GlobalPlan> plan;
  HostPool::Slot slot;
  std::vector<SaveJobTier> tiers;
  SaveStats stats;
  int64_t t_start_ns = 0, t_plan_ns = 0, t_snap_ns = 0;  // telemetry, written in the background
  std::map<std::string, std::vector<std::pair<int, uint64_t>>> hashes;  // name -> (chunk, xxh64)
  Mutex mu;
  CondVar cv;
  bool done LOOM_GUARDED_BY(mu) = false;
  Status status LOOM_GUARDED_BY(mu);

  void Finish(Status s) {
    MutexLock l(&mu);
    status = std::move(s);
    done = true;
    cv.NotifyAll();
  }
};

Status SaveHandle::Wait() {
  if (!job_) return FailedPreconditionError("SaveHandle: no save");
  MutexLock l(&job_->mu);
  job_->cv.WaitUntil(&job_->mu, FarFuture(), [&]() LOOM_REQUIRES(job_->mu) { return job_->done; });
  return job_->status;
}

bool SaveHandle::Done() const {
  MutexLock l(&job_->mu);
  return job_->done;
}
int64_t SaveHandle::step() const { return job_->step; }
const SaveStats& SaveHandle::stats() const { return job_->stats; }

Checkpointer::Checkpointer(Storage* storage, std::string root, comm::Communicator* comm,
                           Options options)
    : storage_(storage),
      root_(std::move(root)),
      comm_(comm),
      rank_(comm ? comm->rank() : 0),
      world_(comm ? comm->size() : 1),
      options_(std::move(options)),
      pool_(options_.pool_slots),
      io_({.num_threads = std::max(1, options_.io_threads), .name = "ckpt-io"}),
      worker_({.num_threads = 1, .name = "ckpt"}) {
  if (options_.telemetry_dir.empty() && storage_->name() == "posix") {
    options_.telemetry_dir = JoinPath(root_, "telemetry");
  }
  tiers_.push_back({storage_, root_, false});
  if (options_.persist_storage != nullptr && !options_.persist_root.empty()) {
    tiers_.push_back({options_.persist_storage, options_.persist_root, false});
  }
  io_.Start();
  worker_.Start();
}

Checkpointer::~Checkpointer() {
  WaitAll().IgnoreError();
  worker_.Stop();
  io_.Stop();
}

void Checkpointer::Telemetry(int64_t step, const char* stage, int64_t t0_ns, int64_t t1_ns,
                             int64_t bytes) {
  if (options_.telemetry_dir.empty()) return;
  json j = {{"step", step},        {"rank", rank_},         {"stage", stage},
            {"t_start", t0_ns * 1e-9}, {"t_end", t1_ns * 1e-9}, {"bytes", bytes}};
  const std::string path = JoinPath(options_.telemetry_dir, "r" + std::to_string(rank_) + ".jsonl");
  Status s = MakeDirs(options_.telemetry_dir);
  if (s.ok()) s = AppendLine(path, j.dump());
  if (!s.ok()) LOOM_LOG(WARNING, "ckpt") << "telemetry: " << s;
}

Result<std::shared_ptr<const GlobalPlan>> Checkpointer::Plan(const LocalPlan& local,
                                                              bool use_cache,
                                                              const Status& local_status,
                                                              bool* cached) {
  const std::string text = SerializeLocalPlan(local);
  const uint64_t h = XXH64(text.data(), text.size(), static_cast<uint64_t>(world_));
  auto it = use_cache ? cache_.find(h) : cache_.end();
  // Every rank contributes (plan hash, cached global key, failed?): one small AllGather decides
  // both the cache hit and whether every rank could prepare the save.
  int64_t mine[3] = {static_cast<int64_t>(h),
                     it == cache_.end() ? 0 : static_cast<int64_t>(it->second.global_key),
                     local_status.ok() ? 0 : 1};
  std::vector<int64_t> all(3 * world_);
  if (comm_ != nullptr) {
    LOOM_RETURN_IF_ERROR(comm_->AllGather(TensorView::Of(mine, 3), TensorView::Of(all.data(),
                                                                                  all.size()))
                             .WithContext("checkpoint plan agreement"));
  } else {
    all = {mine[0], mine[1], mine[2]};
  }
  LOOM_RETURN_IF_ERROR(local_status);
  for (int r = 0; r < world_; ++r) {
    if (all[3 * r + 2] != 0) {
      return AbortedError("rank " + std::to_string(r) +
                          " could not prepare this checkpoint (its log says why)");
    }
  }
  std::vector<int64_t> hashes;
  for (int r = 0; r < world_; ++r) hashes.push_back(all[3 * r]);
  const uint64_t global_key =
      XXH64(hashes.data(), hashes.size() * sizeof(int64_t), 0x6c6f6f6d) | 1;  // never 0
  bool hit = use_cache;
  for (int r = 0; r < world_ && hit; ++r) {
    hit = static_cast<uint64_t>(all[3 * r + 1]) == global_key;
  }
  *cached = hit;
  if (hit) return it->second.plan;

  // Miss somewhere: everyone exchanges local plans and re-plans.
  ++plan_gathers_;
  std::vector<LocalPlan> plans(world_);
  if (comm_ != nullptr) {
    int64_t len = static_cast<int64_t>(text.size());
    std::vector<int64_t> lens(world_);
    LOOM_RETURN_IF_ERROR(
        comm_->AllGather(TensorView::Of(&len, 1), TensorView::Of(lens.data(), world_))
            .WithContext("checkpoint plan gather"));
    int64_t total = 0;
    for (int64_t l : lens) total += l;
    std::string everything(static_cast<size_t>(total), '\0');
    LOOM_RETURN_IF_ERROR(
        comm_->AllGatherV(TensorView(const_cast<char*>(text.data()), DType::kU8, {len}),
                          TensorView(everything.data(), DType::kU8, {total}), lens)
            .WithContext("checkpoint plan gather"));
    int64_t at = 0;
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) {
        plans[r] = local;
      } else {
        LOOM_ASSIGN_OR_RETURN(plans[r], ParseLocalPlan(std::string_view(everything).substr(
                                                           at, lens[r]),
                                                       r));
      }
      at += lens[r];
    }
  } else {
    plans[0] = local;
  }
  LOOM_ASSIGN_OR_RETURN(GlobalPlan g, MakeGlobalPlan(plans));
  auto plan = std::make_shared<const GlobalPlan>(std::move(g));
  if (use_cache) {
    if (cache_.size() >= 8) cache_.erase(cache_.begin());
    cache_[h] = {global_key, plan};
  }
  return std::shared_ptr<const GlobalPlan>(plan);
}

Status Checkpointer::AgreeOk(const Status& mine, const char* what) {
  int64_t failed = mine.ok() ? 0 : 1;
  if (comm_ != nullptr) {
    LOOM_RETURN_IF_ERROR(comm_->AllReduce(TensorView::Of(&failed, 1), comm::ReduceOp::kMax)
                             .WithContext(std::string("checkpoint: ") + what));
  }
  LOOM_RETURN_IF_ERROR(mine);
  if (failed != 0) return AbortedError(std::string("checkpoint: another rank failed ") + what);
  return OkStatus();
}

Status Checkpointer::PrepareStepDir(TierState& tier, int64_t step) {
  Storage* storage = tier.storage;
  const std::string final_dir = JoinPath(tier.root, StepDirName(step));
  if (storage->Exists(final_dir)) {
    return AlreadyExistsError("checkpoint " + final_dir + " already exists");
  }
  if (rank_ != 0) return OkStatus();
  LOOM_RETURN_IF_ERROR(storage->MakeDirs(tier.root));
  if (!tier.cleaned) {
    // Leftovers of saves that crashed before their commit.
    LOOM_ASSIGN_OR_RETURN(auto names, storage->List(tier.root));
    for (const std::string& n : names) {
      if (n.starts_with("step_") && n.ends_with(".tmp")) {
        LOOM_LOG(INFO, "ckpt") << "removing uncommitted " << JoinPath(tier.root, n);
        LOOM_RETURN_IF_ERROR(storage->RemoveAll(JoinPath(tier.root, n)));
      }
    }
    tier.cleaned = true;
  }
  return storage->RemoveAll(final_dir + ".tmp");
}

Result<SaveHandle> Checkpointer::Save(int64_t step, const StateDict& state,
                                      const SaveOptions& opts) {
  const int64_t t0 = WallNanos();
  Stopwatch sw;
  auto job = std::make_shared<SaveJob>();
  job->step = step;
  job->opts = opts;
  for (size_t t = 0; t < tiers_.size(); ++t) {
    const std::string final_dir = JoinPath(tiers_[t].root, StepDirName(step));
    job->tiers.push_back({tiers_[t].storage, tiers_[t].root, final_dir + ".tmp", final_dir,
                          t == 0 ? "" : "persist_"});
  }
  // Local failures (bad entries, an existing step, cleanup errors) are agreed on inside the
  // plan exchange, so no rank is left waiting in a collective the others skipped.
  auto local_plan = MakeLocalPlan(state);
  Status prep = local_plan.status();
  for (TierState& tier : tiers_) {
    if (prep.ok()) prep = PrepareStepDir(tier, step);
  }
  // Rank 0's cleanup must finish before anyone writes: the plan exchange orders it.
  const LocalPlan local = local_plan.ok() ? *std::move(local_plan) : LocalPlan{};
  bool cached = false;
  LOOM_ASSIGN_OR_RETURN(job->plan, Plan(local, opts.plan_cache, prep, &cached));
  job->stats.plan_cached = cached;
  job->stats.plan_s = sw.Seconds();
  Status dirs;
  for (const SaveJobTier& tier : job->tiers) {
    if (dirs.ok()) dirs = tier.storage->MakeDirs(JoinPath(tier.tmp_dir, "data"));
    if (dirs.ok()) dirs = tier.storage->MakeDirs(JoinPath(tier.tmp_dir, "done"));
  }
  LOOM_RETURN_IF_ERROR(AgreeOk(dirs, "creating the step directories"));
  const int64_t t_plan = WallNanos();

  // Snapshot: copy this rank's items into its file image.
  const GlobalPlan& g = *job->plan;
  const int64_t image = g.file_bytes[rank_];
  job->stats.bytes = image;
  job->slot = pool_.Acquire(image);
  char* base = job->slot.data;
  int64_t filled = 0;
  for (const PlannedWrite& w : g.writes[rank_]) {
    std::memset(base + filled, 0, static_cast<size_t>(w.file_off - filled));
    const char* src;
    if (w.object) {
      src = state.objects()[local.objects[w.local_index].entry].bytes.data();
    } else {
      const LocalItem& it = local.items[w.local_index];
      src = static_cast<const char*>(state.tensors()[it.entry].data) +
            it.data_elem * (DTypeBits(it.dtype) / 8);
    }
    StreamingCopy(base + w.file_off, src, static_cast<size_t>(w.bytes));
    filled = w.file_off + w.bytes;
  }
  std::memset(base + filled, 0, static_cast<size_t>(image - filled));
  const int64_t t_snap = WallNanos();
  job->stats.snapshot_s = (t_snap - t_plan) * 1e-9;
  job->t_start_ns = t0;
  job->t_plan_ns = t_plan;
  job->t_snap_ns = t_snap;

  SaveHandle handle(job);
  pending_.push_back(job);
  worker_.Schedule([this, job] { RunJob(job); });  // in order after earlier saves
  if (!opts.async) {
    // Synchronous: return once the step is committed everywhere (rank 0's Wait covers the
    // commit; the agreement tells the other ranks).
    Status s = handle.Wait();
    std::erase(pending_, job);  // reported here, not again by TakeErrors
    LOOM_RETURN_IF_ERROR(AgreeOk(s, "to write or commit the checkpoint"));
  }
  return handle;
}

// Writes this rank's file image in blocks and, on the same io threads, checksums its chunks:
// writes wait on the device while hashing uses the CPU.
Status Checkpointer::WriteImage(SaveJob& job, const SaveJobTier& tier, bool hash) {
  const std::string path = JoinPath(tier.tmp_dir, job.plan->meta.files[rank_].path);
  LOOM_ASSIGN_OR_RETURN(auto file, tier.storage->Create(path, {.direct = job.opts.direct_io}));
  const int64_t image = job.plan->file_bytes[rank_];
  const int64_t block = std::max<int64_t>(kAlignment, AlignUp(job.opts.block_bytes));
  const int64_t blocks = (image + block - 1) / block;
  const auto& writes = job.plan->writes[rank_];
  const int64_t hashes = hash && job.opts.checksum ? static_cast<int64_t>(writes.size()) : 0;
  std::vector<uint64_t> h(static_cast<size_t>(hashes));
  // One task writes the blocks in order (sequential writes suit the device best), the other
  // hashes the chunks meanwhile.
  LOOM_RETURN_IF_ERROR(ParallelFor(&io_, 2, [&](int64_t t) {
    if (t == 1) {
      for (int64_t k = 0; k < hashes; ++k) {
        h[k] = XXH64(job.slot.data + writes[k].file_off, static_cast<size_t>(writes[k].bytes), 0);
      }
      return OkStatus();
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t off = b * block;
      LOOM_RETURN_IF_ERROR(file->WriteAt(off, job.slot.data + off, std::min(block, image - off)));
    }
    return OkStatus();
  }));
  LOOM_RETURN_IF_ERROR(file->Sync());
  for (int64_t i = 0; i < hashes; ++i) {
    job.hashes[(writes[i].object ? "\x01" : "") + writes[i].name].push_back({writes[i].chunk, h[i]});
  }
  return file->Close();
}

void Checkpointer::RunJob(const std::shared_ptr<SaveJob>& job) {
  Telemetry(job->step, "plan", job->t_start_ns, job->t_plan_ns, 0);
  Telemetry(job->step, "snapshot", job->t_plan_ns, job->t_snap_ns, job->stats.bytes);
  // Tier by tier from the same host buffer: the fast tier commits first.
  Status s;
  for (size_t t = 0; t < job->tiers.size(); ++t) {
    // The first tier hashes; a later one again if the first failed before its hashes were kept.
    Status ts = SaveTier(*job, job->tiers[t], /*hash=*/job->hashes.empty());
    if (s.ok()) s = ts;
  }
  pool_.Release(job->slot);
  if (!s.ok()) {
    s = s.WithContext("checkpoint step " + std::to_string(job->step) + " (rank " +
                      std::to_string(rank_) + ")");
    LOOM_LOG(WARNING, "ckpt") << "save failed: " << s;
  }
  job->Finish(s);
}

Status Checkpointer::SaveTier(SaveJob& job, const SaveJobTier& tier, bool hash) {
  const int64_t t0 = WallNanos();
  Status s = WriteImage(job, tier, hash);
  Telemetry(job.step, (tier.stage_prefix + "write").c_str(), t0, WallNanos(), job.stats.bytes);
  json marker = {{"ok", s.ok()}, {"error", s.ok() ? "" : s.ToString()}};
  json hashes = json::object();
  for (const auto& [name, list] : job.hashes) {
    json arr = json::array();
    for (const auto& [chunk, h] : list) arr.push_back({chunk, HexU64(h)});
    hashes[name] = arr;
  }
  marker["xxh64"] = std::move(hashes);
  // Only rank 0 reads the marker, before it writes the durable metadata: no fsync needed.
  Status ms = tier.storage->WriteSmallFile(
      JoinPath(tier.tmp_dir, "done/r" + std::to_string(rank_) + ".json"), marker.dump(),
      {.atomic = true, .sync = false});
  if (s.ok()) s = ms;
  if (rank_ == 0) {
    const int64_t tc = WallNanos();
    Status cs = Commit(job, tier);
    Telemetry(job.step, (tier.stage_prefix + "commit").c_str(), tc, WallNanos(), 0);
    if (s.ok()) s = cs;
    if (!cs.ok()) {
      Status rm = tier.storage->RemoveAll(tier.tmp_dir);
      if (!rm.ok()) LOOM_LOG(WARNING, "ckpt") << "cleanup: " << rm;
    }
  }
  if (!s.ok() && !tier.stage_prefix.empty()) s = s.WithContext("persistent tier " + tier.root);
  return s;
}

Status Checkpointer::Commit(SaveJob& job, const SaveJobTier& tier) {
  CheckpointMeta meta = job.plan->meta;
  meta.step = job.step;
  meta.producer = job.opts.producer;
  meta.user = job.opts.user;
  const Deadline deadline = DeadlineAfter(job.opts.commit_timeout);
  for (int r = 0; r < world_; ++r) {
    const std::string marker = JoinPath(tier.tmp_dir, "done/r" + std::to_string(r) + ".json");
    auto sleep = std::chrono::milliseconds(1);
    while (!tier.storage->Exists(marker)) {
      if (SteadyClock::now() > deadline) {
        return DeadlineExceededError("rank " + std::to_string(r) + " did not finish writing " +
                                     "within " + std::to_string(job.opts.commit_timeout.count()) +
                                     " ms");
      }
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::milliseconds(4));
    }
    LOOM_ASSIGN_OR_RETURN(std::string text, tier.storage->ReadSmallFile(marker));
    json m = json::parse(text, nullptr, false);
    if (m.is_discarded() || !m.is_object()) return DataLossError(marker + " is not JSON");
    if (!m.value("ok", false)) {
      return AbortedError("rank " + std::to_string(r) + " failed: " +
                          m.value("error", std::string("?")));
    }
    for (const auto& [name, arr] : m["xxh64"].items()) {
      for (const json& e : arr) {
        const int chunk = e.at(0).get<int>();
        LOOM_ASSIGN_OR_RETURN(uint64_t h, ParseHexU64(e.at(1).get<std::string>()));
        if (name.starts_with("\x01")) {
          meta.objects.at(name.substr(1)).at(chunk).xxh64 = h;
        } else {
          meta.tensors.at(name).chunks.at(chunk).xxh64 = h;
        }
      }
    }
  }
  // Inside the still-invisible temporary directory files need durability, not atomicity; one
  // directory sync covers their names, and the rename publishes everything at once.
  const Storage::SmallFileOptions in_tmp{.atomic = false, .sync = true};
  LOOM_RETURN_IF_ERROR(tier.storage->WriteSmallFile(JoinPath(tier.tmp_dir, kMetadataFile),
                                                MetadataToJson(meta), in_tmp));
  LOOM_RETURN_IF_ERROR(tier.storage->RemoveAll(JoinPath(tier.tmp_dir, "done")));
  LOOM_RETURN_IF_ERROR(tier.storage->WriteSmallFile(JoinPath(tier.tmp_dir, kCommittedFile),
                                                "step " + std::to_string(job.step) + "\n",
                                                in_tmp));
  // The data files' names (every rank's, one shared directory) and the entries above.
  LOOM_RETURN_IF_ERROR(tier.storage->SyncDir(JoinPath(tier.tmp_dir, "data")));
  LOOM_RETURN_IF_ERROR(tier.storage->SyncDir(tier.tmp_dir));
  LOOM_RETURN_IF_ERROR(tier.storage->Rename(tier.tmp_dir, tier.final_dir));
  LOOM_RETURN_IF_ERROR(tier.storage->WriteSmallFile(JoinPath(tier.root, kLatestFile),
                                                StepDirName(job.step) + "\n"));
  // The step is published. Pruning problems from here on are warnings, not a failed save.
  if (job.opts.keep > 0) {
    Status pruned = Prune(tier, job.step, job.opts.keep);
    if (!pruned.ok()) LOOM_LOG(WARNING, "ckpt") << "pruning " << tier.root << ": " << pruned;
  }
  return OkStatus();
}

// Keeps the newest `keep` committed steps (by step number). Each victim is renamed to
// step_<N>.tmp before deletion, so an interrupted delete never leaves a half step that looks
// committed; the next save removes the leftover.
Status Checkpointer::Prune(const SaveJobTier& tier, int64_t current, int keep) {
  LOOM_ASSIGN_OR_RETURN(auto names, tier.storage->List(tier.root));
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const std::string& n : names) {
    if (!n.starts_with("step_") || n.ends_with(".tmp")) continue;
    char* end = nullptr;
    const long long v = std::strtoll(n.c_str() + 5, &end, 10);
    if (end != nullptr && *end == '\0') steps.push_back({v, n});
  }
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i + keep < steps.size(); ++i) {
    if (steps[i].first == current) continue;
    const std::string dir = JoinPath(tier.root, steps[i].second);
    LOOM_RETURN_IF_ERROR(tier.storage->Rename(dir, dir + ".tmp"));
    LOOM_RETURN_IF_ERROR(tier.storage->RemoveAll(dir + ".tmp"));
  }
  return OkStatus();
}

Status Checkpointer::WaitAll() {
  Status first;
  for (auto& job : pending_) {
    Status s = SaveHandle(job).Wait();
    if (!s.ok() && first.ok()) first = s;
  }
  // Failed saves stay until TakeErrors hands them out.
  std::erase_if(pending_, [](const std::shared_ptr<SaveJob>& job) {
    MutexLock l(&job->mu);
    return job->status.ok();
  });
  return first;
}

std::vector<Status> Checkpointer::TakeErrors() {
  std::vector<Status> errors;
  std::erase_if(pending_, [&](const std::shared_ptr<SaveJob>& job) {
    MutexLock l(&job->mu);
    if (!job->done) return false;
    if (!job->status.ok()) errors.push_back(job->status);
    return true;
  });
  return errors;
}

}  // namespace loom::ckpt
