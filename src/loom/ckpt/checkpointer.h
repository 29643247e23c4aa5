// Checkpointer: saves a StateDict as one checkpoint step, asynchronously.
//
//   Checkpointer ckpt(storage.get(), "/ckpt/run1", &comm);
//   LOOM_ASSIGN_OR_RETURN(SaveHandle h, ckpt.Save(step, state, {}));  // returns after the snapshot
//   ...train on...
//   LOOM_RETURN_IF_ERROR(h.Wait());                                   // persisted and committed
//
// Save, on every rank (a collective: all ranks call it with the same step):
//   1. plan: the local plan is hashed; ranks exchange 24 bytes each (AllGather). If every rank has
//      the global plan for this combination cached, it is reused; otherwise local plans are
//      all-gathered and every rank runs the same deterministic planner (save_plan.h).
//   2. snapshot (the only blocking stage): the rank's items are copied into a pre-faulted host
//      buffer laid out exactly as its file (host_pool.h).
//   3. background: one io thread writes the buffer in blocks, in order (O_DIRECT), while another
//      checksums its chunks (xxh64); then fdatasync and a done marker with the checksums.
//   4. commit (rank 0, background): waits for every rank's marker, writes .metadata.json and
//      COMMITTED into <root>/step_<N>.tmp, renames it to <root>/step_<N>, and flips <root>/latest.
// A crash at any point leaves `latest` at the previous committed step; a failed save (disk full,
// EIO) removes its temporary directory, reports the error from Wait() (and TakeErrors()), and
// leaves training and later saves unaffected.
// Per-stage timings go to <telemetry_dir>/r<rank>.jsonl (`loom ckpt report` reads them).
// Thread-safety: Save/WaitAll/TakeErrors from one thread (the training thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"
#include "loom/ckpt/host_pool.h"
#include "loom/ckpt/save_plan.h"
#include "loom/ckpt/state_dict.h"
#include "loom/ckpt/storage.h"

namespace loom::comm {
class Communicator;
}

namespace loom::ckpt {

struct SaveOptions {
  bool async = true;  // false: Save returns after the commit
  int64_t block_bytes = 16 << 20;
  bool direct_io = true;
  bool checksum = true;
  bool plan_cache = true;
  int keep = 0;  // committed steps kept in root after a commit (0: all)
  std::chrono::milliseconds commit_timeout{600'000};
  nlohmann::json user = nlohmann::json::object();
  std::string producer = "loom";
};

struct SaveStats {
  double plan_s = 0;
  double snapshot_s = 0;  // the stall beyond planning
  bool plan_cached = false;
  int64_t bytes = 0;  // this rank's file
};

struct SaveJob;
struct SaveJobTier;

class SaveHandle {
 public:
  SaveHandle() = default;
  explicit SaveHandle(std::shared_ptr<SaveJob> job) : job_(std::move(job)) {}
  // Waits until this rank's part is durable and, on rank 0, the step is committed.
  Status Wait();
  bool Done() const;
  int64_t step() const;
  const SaveStats& stats() const;

 private:
  std::shared_ptr<SaveJob> job_;
};

class Checkpointer {
 public:
  struct Options {
    int io_threads = 2;  // one writes, one hashes
    int pool_slots = 2;
    std::string telemetry_dir;  // empty: <root>/telemetry on posix storage, none otherwise
    // A second, persistent tier. Each save commits to `root` first (put it on a fast medium,
    // e.g. /dev/shm, for quick restarts after a process crash) and then, from the same host
    // buffer, to `persist_root` on `persist_storage`. Wait() covers both; the host buffer is
    // reused only after both are written.
    Storage* persist_storage = nullptr;
    std::string persist_root;
  };
  // `comm` may be null for a single process.
  Checkpointer(Storage* storage, std::string root, comm::Communicator* comm, Options options);
  Checkpointer(Storage* storage, std::string root, comm::Communicator* comm)
      : Checkpointer(storage, std::move(root), comm, Options{}) {}
  ~Checkpointer();  // waits for pending saves

  // Pre-allocates and pre-faults the snapshot buffers.
  void ReservePool(int64_t bytes) { pool_.Reserve(bytes); }
  Result<SaveHandle> Save(int64_t step, const StateDict& state, const SaveOptions& opts = {});
  // Waits for every pending save; returns the first error (failed saves are also kept for
  // TakeErrors).
  Status WaitAll();
  // Errors of background saves that finished since the last call.
  std::vector<Status> TakeErrors();
  // Number of saves that exchanged full local plans (a cached plan does not).
  int64_t plan_gathers() const { return plan_gathers_; }
  const std::string& root() const { return root_; }

 private:
  struct CachedPlan {
    uint64_t global_key = 0;
    std::shared_ptr<const GlobalPlan> plan;
  };
  // The plan exchange; also agrees on every rank's `local_status` (any failure fails all).
  Result<std::shared_ptr<const GlobalPlan>> Plan(const LocalPlan& local, bool use_cache,
                                                 const Status& local_status, bool* cached);
  // OK on every rank, or an error on every rank (one tiny AllReduce).
  Status AgreeOk(const Status& mine, const char* what);
  Status Prune(const SaveJobTier& tier, int64_t current, int keep);
  struct TierState {
    Storage* storage;
    std::string root;
    bool cleaned;  // leftover .tmp directories removed
  };
  Status PrepareStepDir(TierState& tier, int64_t step);
  void RunJob(const std::shared_ptr<SaveJob>& job);
  Status SaveTier(SaveJob& job, const SaveJobTier& tier, bool hash);
  Status WriteImage(SaveJob& job, const SaveJobTier& tier, bool hash);
  Status Commit(SaveJob& job, const SaveJobTier& tier);
  void Telemetry(int64_t step, const char* stage, int64_t t0_ns, int64_t t1_ns, int64_t bytes);

  Storage* storage_;
  std::string root_;
  comm::Communicator* comm_;
  int rank_ = 0;
  int world_ = 1;
  Options options_;
  HostPool pool_;
  ThreadPool io_;
  ThreadPool worker_;  // runs jobs in order
  std::map<uint64_t, CachedPlan> cache_;  // by local-plan hash
  std::vector<std::shared_ptr<SaveJob>> pending_;
  int64_t plan_gathers_ = 0;
  std::vector<TierState> tiers_;
};

std::string StepDirName(int64_t step);  // "step_00000050"

}  // namespace loom::ckpt
