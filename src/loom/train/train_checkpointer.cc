#include "loom/train/train_checkpointer.h"

#include <cstdio>

#include "loom/base/logging.h"
#include "loom/ckpt/loader.h"
#include "loom/train/dp_optimizer.h"

namespace loom::train {

using nlohmann::json;

namespace {

constexpr const char* kTrainerObject = "trainer";

std::string MiB(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

}  // namespace

TrainCheckpointer::TrainCheckpointer(const TrainConfig& cfg, const std::string& run_dir,
                                     comm::Communicator* comm, std::ostream* log)
    : cfg_(cfg),
      comm_(comm),
      log_(log),
      dir_(cfg.ckpt.dir.empty() ? ckpt::JoinPath(run_dir, "ckpt") : cfg.ckpt.dir),
      run_dir_(run_dir),
      storage_(ckpt::NewPosixStorage()) {
  if (cfg_.ckpt.every > 0) {
    ckpt::Checkpointer::Options opts;
    if (!cfg_.ckpt.persist_dir.empty()) {
      opts.persist_storage = storage_.get();
      opts.persist_root = cfg_.ckpt.persist_dir;
    }
    ckpt_ = std::make_unique<ckpt::Checkpointer>(storage_.get(), dir_, comm_, opts);
  }
}

TrainCheckpointer::~TrainCheckpointer() = default;

ckpt::StateDict TrainCheckpointer::SaveState(const TrainState& s) const {
  ckpt::StateDict d;
  const bool replicated = s.optimizer->replicated_state() && comm_->size() > 1;
  float* m = s.optimizer->exp_avg();
  float* v = s.optimizer->exp_avg_sq();
  for (const auto& seg : s.optimizer->owned_segments()) {
    const nn::ParamSlot& slot = s.layout->slots()[s.layout->SlotAt(seg.begin)];
    const int64_t lo = seg.begin - slot.offset;
    const ckpt::FlatRange range{lo, lo + seg.count};
    const ckpt::Shape shape(slot.spec.shape.begin(), slot.spec.shape.end());
    d.AddTensor({"model." + slot.spec.name, DType::kF32, shape, range,
                 s.optimizer->master_values(seg), replicated});
    d.AddTensor({"optim.exp_avg." + slot.spec.name, DType::kF32, shape, range,
                 m + seg.state_offset, replicated});
    d.AddTensor({"optim.exp_avg_sq." + slot.spec.name, DType::kF32, shape, range,
                 v + seg.state_offset, replicated});
  }
  json trainer = {{"step", s.step}, {"world_size", comm_->size()},
                  {"config", TrainConfigToJson(*s.config)}};
  d.AddObject(kTrainerObject, trainer.dump(), /*replicated=*/true);
  return d;
}

ckpt::StateDict TrainCheckpointer::LoadTargets(const TrainState& s) const {
  ckpt::StateDict d;
  // Full weights everywhere (each rank's model needs them); optimizer state for owned ranges.
  for (const nn::ParamSlot& slot : s.layout->slots()) {
    const ckpt::Shape shape(slot.spec.shape.begin(), slot.spec.shape.end());
    d.AddFull("model." + slot.spec.name, DType::kF32, shape, s.params + slot.offset, false);
  }
  float* m = s.optimizer->exp_avg();
  float* v = s.optimizer->exp_avg_sq();
  for (const auto& seg : s.optimizer->owned_segments()) {
    const nn::ParamSlot& slot = s.layout->slots()[s.layout->SlotAt(seg.begin)];
    const int64_t lo = seg.begin - slot.offset;
    const ckpt::Shape shape(slot.spec.shape.begin(), slot.spec.shape.end());
    d.AddTensor({"optim.exp_avg." + slot.spec.name, DType::kF32, shape,
                 ckpt::FlatRange{lo, lo + seg.count}, m + seg.state_offset});
    d.AddTensor({"optim.exp_avg_sq." + slot.spec.name, DType::kF32, shape,
                 ckpt::FlatRange{lo, lo + seg.count}, v + seg.state_offset});
  }
  return d;
}

Result<int64_t> TrainCheckpointer::Restore(const TrainState& s) {
  LOOM_ASSIGN_OR_RETURN(std::string path, FindResumeCheckpoint(cfg_, run_dir_));
  if (path.empty()) {
    if (!cfg_.resume.empty() && log_ != nullptr) {
      *log_ << "resume=auto: no checkpoint in " << dir_
            << (cfg_.ckpt.persist_dir.empty() ? "" : " or " + cfg_.ckpt.persist_dir)
            << ", starting at step 0\n";
    }
    return int64_t{0};
  }
  LOOM_ASSIGN_OR_RETURN(ckpt::CheckpointSource src, ckpt::OpenCheckpoint(*storage_, path));
  LOOM_ASSIGN_OR_RETURN(std::string text,
                        ckpt::ReadObject(*storage_, src, kTrainerObject, comm_->rank()));
  json trainer = json::parse(text, nullptr, false);
  if (trainer.is_discarded() || !trainer.contains("step")) {
    return DataLossError("checkpoint " + src.dir + ": object 'trainer' is not loom trainer state");
  }
  const int64_t step = trainer["step"].get<int64_t>();
  if (step >= cfg_.steps) {
    return InvalidArgumentError("resume: checkpoint " + src.dir + " is at step " +
                                std::to_string(step) + ", but steps=" +
                                std::to_string(cfg_.steps) + " (raise steps to train further)");
  }
  ckpt::StateDict targets = LoadTargets(s);
  ckpt::LoadOptions opts;
  if (cfg_.ckpt.load == "cooperative") opts.comm = comm_;
  LOOM_ASSIGN_OR_RETURN(ckpt::LoadReport rep, ckpt::Load(*storage_, src, targets, opts));
  if (log_ != nullptr) {
    *log_ << "resumed from " << src.dir << " at step " << step << " (saved by "
          << trainer.value("world_size", 0) << " rank(s), now " << comm_->size()
          << "): read " << MiB(rep.total_bytes_read) << " (all ranks) in " << rep.seconds
          << " s, read amplification " << rep.read_amplification() << "\n"
          << std::flush;
  }
  return step;
}

void TrainCheckpointer::ReportErrors() {
  for (const Status& e : ckpt_->TakeErrors()) {
    ++failed_;
    ++async_failed_;
    if (log_ != nullptr) *log_ << "checkpoint FAILED (training continues): " << e << "\n";
  }
}

Status TrainCheckpointer::AfterStep(const TrainState& s) {
  if (!ckpt_) return OkStatus();
  ReportErrors();
  if (s.step % cfg_.ckpt.every != 0 && s.step != cfg_.steps) return OkStatus();
  if (!reserved_) {
    // About what this rank writes: weights and two moments of its owned ranges (a 1/world share
    // when they are replicated), plus up to 4 KiB of alignment per item.
    const int64_t items = 3 * static_cast<int64_t>(s.optimizer->owned_segments().size()) + 8;
    const int64_t share = s.optimizer->replicated_state() ? comm_->size() : 1;
    ckpt_->ReservePool(3 * 4 * s.optimizer->owned_elements() / share + items * 4096 +
                       (1 << 20));
    reserved_ = true;
  }
  ckpt::SaveOptions opts;
  opts.async = cfg_.ckpt.async;
  opts.keep = static_cast<int>(cfg_.ckpt.keep);
  opts.producer = "loom train";
  auto h = ckpt_->Save(s.step, SaveState(s), opts);
  if (!h.ok()) {
    // Planning or snapshot failed (e.g. the directory is not writable): training goes on.
    ++failed_;
    if (log_ != nullptr) *log_ << "checkpoint FAILED (training continues): " << h.status() << "\n";
    return OkStatus();
  }
  ++saved_;
  if (log_ != nullptr) {
    *log_ << "checkpoint step " << s.step << " -> " << ckpt_->root() << ": stall "
          << static_cast<int>((h->stats().plan_s + h->stats().snapshot_s) * 1000) << " ms (plan "
          << (h->stats().plan_cached ? "cached" : "new") << "), " << MiB(h->stats().bytes)
          << " on this rank, writing in the background\n"
          << std::flush;
  }
  return OkStatus();
}

Status TrainCheckpointer::Finish() {
  if (!ckpt_) return OkStatus();
  ckpt_->WaitAll().IgnoreError();  // each failure is also returned by TakeErrors
  ReportErrors();
  if (log_ != nullptr) {
    *log_ << "checkpoints: " << saved_ - async_failed_ << " committed, " << failed_ << " failed, in "
          << dir_ << "\n"
          << std::flush;
  }
  return OkStatus();
}

Result<std::string> FindResumeCheckpoint(const TrainConfig& cfg, const std::string& run_dir) {
  if (cfg.resume != "auto") return cfg.resume;
  std::vector<std::string> roots;
  if (!cfg.ckpt.dir.empty()) {
    roots.push_back(cfg.ckpt.dir);
  } else if (!run_dir.empty()) {
    roots.push_back(ckpt::JoinPath(run_dir, "ckpt"));
  }
  roots.push_back(cfg.ckpt.persist_dir);
  auto storage = ckpt::NewPosixStorage();
  return ckpt::NewestCheckpoint(*storage, roots);
}

Result<json> SavedTrainConfig(const std::string& checkpoint) {
  auto storage = ckpt::NewPosixStorage();
  LOOM_ASSIGN_OR_RETURN(ckpt::CheckpointSource src, ckpt::OpenCheckpoint(*storage, checkpoint));
  LOOM_ASSIGN_OR_RETURN(std::string text, ckpt::ReadObject(*storage, src, kTrainerObject, 0));
  json trainer = json::parse(text, nullptr, false);
  if (trainer.is_discarded() || !trainer.contains("config") || !trainer["config"].is_object()) {
    return DataLossError("checkpoint " + src.dir + " holds no loom train config");
  }
  json c = trainer["config"];
  c.erase("run_dir");
  c.erase("resume");
  c.erase("ckpt");
  return c;
}

}  // namespace loom::train
