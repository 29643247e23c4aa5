#include "loom/ckpt/loader.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>

#include "loom/base/clock.h"
#include "loom/base/huge_buffer.h"
#include "loom/base/json_util.h"
#include "loom/base/logging.h"
#include "loom/base/stream_copy.h"
#include "loom/base/thread_pool.h"
#include "loom/ckpt/parallel.h"
#include "loom/ckpt/read_plan.h"
#include "loom/comm/communicator.h"
#include "loom/ckpt/safetensors.h"

namespace loom::ckpt {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

Result<CheckpointSource> OpenCheckpoint(Storage& storage, const std::string& path) {
  if (path.ends_with(".safetensors") || storage.Exists(JoinPath(path, kHfIndexFile))) {
    return OpenSafetensors(storage, path);
  }
  if (!storage.Exists(path)) return NotFoundError("checkpoint " + path + " does not exist");
  std::string dir = path;
  if (!storage.Exists(JoinPath(dir, kMetadataFile)) && storage.Exists(JoinPath(dir, kLatestFile))) {
    LOOM_ASSIGN_OR_RETURN(std::string latest, storage.ReadSmallFile(JoinPath(dir, kLatestFile)));
    dir = JoinPath(path, Trim(latest));
  }
  if (!storage.Exists(JoinPath(dir, kCommittedFile))) {
    return FailedPreconditionError(
        "checkpoint " + dir + " is not committed (no " + kCommittedFile +
        "): its save did not finish; load the previous step (" + JoinPath(path, kLatestFile) +
        ")");
  }
  const std::string meta_path = JoinPath(dir, kMetadataFile);
  LOOM_ASSIGN_OR_RETURN(std::string text, storage.ReadSmallFile(meta_path));
  LOOM_ASSIGN_OR_RETURN(CheckpointMeta meta, MetadataFromJson(text, meta_path));
  return CheckpointSource{dir, std::move(meta), "loom"};
}

Result<LoadReport> Load(Storage& storage, const CheckpointSource& src, const StateDict& targets,
                        const LoadOptions& opts) {
  if (opts.comm != nullptr && opts.comm->size() > 1) {
    return LoadCooperative(storage, src, targets, *opts.comm, opts);
  }
  Stopwatch sw;
  LoadReport report;
  report.step = src.meta.step;
  std::vector<ReadReq> reqs;
  LOOM_RETURN_IF_ERROR(PlanReads(src, targets, &reqs, &report.bytes_needed));
  std::vector<const ReadReq*> ptrs;
  for (const ReadReq& r : reqs) ptrs.push_back(&r);
  const std::vector<ReadSpan> spans = Coalesce(ptrs, opts.coalesce_gap, opts.max_span);
  const std::vector<ReadPiece> pieces = CutPieces(spans, opts.piece_bytes);
  LOOM_ASSIGN_OR_RETURN(auto files, OpenFiles(storage, src, spans, opts));
  ThreadPool pool({.num_threads = std::max(1, opts.io_threads), .name = "ckpt-load"});
  pool.Start();
  // One task per span, reading its pieces in order into an aligned buffer, copying them out and,
  // for targets that are whole chunks, hashing them while they are still in cache.
  std::atomic<int64_t> verified{0};
  LOOM_RETURN_IF_ERROR(ParallelFor(&pool, static_cast<int64_t>(spans.size()), [&](int64_t i) {
    const ReadSpan& span = spans[i];
    ReadableFile& f = *files.at(span.file);
    std::map<const ReadReq*, XXH64_state_t*> hashing;
    for (const ReadReq* r : span.reqs) {
      if (opts.verify && r->whole != nullptr && r->whole->xxh64) {
        hashing[r] = XXH64_createState();
        XXH64_reset(hashing[r], 0);
      }
    }
    auto free_states = [&] {
      for (auto& [r, st] : hashing) XXH64_freeState(st);
    };
    thread_local HugeBuffer bounce;
    for (int64_t off = span.off; off < span.end;) {
      const int64_t end = std::min(span.end, (off / opts.piece_bytes + 1) * opts.piece_bytes);
      if (bounce.size() < static_cast<size_t>(end - off)) {
        bounce = HugeBuffer(static_cast<size_t>(opts.piece_bytes));
      }
      if (Status st = f.ReadAt(off, end - off, bounce.data()); !st.ok()) {
        free_states();
        return st;
      }
      for (const ReadReq* r : span.reqs) {
        auto [a, e] = Overlap(*r, off, end);
        if (a >= e) continue;
        const char* from = bounce.data() + (a - off);
        StreamingCopy(r->dst + (a - r->off), from, static_cast<size_t>(e - a));
        if (auto it = hashing.find(r); it != hashing.end()) {
          XXH64_update(it->second, from, static_cast<size_t>(e - a));
        }
      }
      off = end;
    }
    Status result;
    for (auto& [r, st] : hashing) {
      if (result.ok() && XXH64_digest(st) != *r->whole->xxh64) {
        result = DataLossError("tensor '" + *r->name + "' chunk " + r->whole->box.DebugString() +
                               " in " + JoinPath(src.dir, src.meta.files[r->file].path) +
                               " fails its xxh64 checksum: the file is corrupted");
      }
    }
    verified += static_cast<int64_t>(hashing.size());
    free_states();
    return result;
  }));
  report.reads = static_cast<int64_t>(pieces.size());
  report.verified_chunks = verified.load();
  pool.Stop();
  for (const auto& [i, f] : files) report.bytes_read += f->bytes_read();
  report.total_bytes_read = report.bytes_read;
  report.total_bytes_needed = report.bytes_needed;
  report.seconds = sw.Seconds();
  return report;
}

Status ReadFullTensor(Storage& storage, const CheckpointSource& src, const std::string& name,
                      std::vector<char>* buf) {
  auto it = src.meta.tensors.find(name);
  if (it == src.meta.tensors.end()) {
    return NotFoundError("checkpoint " + src.dir + " has no tensor '" + name + "'");
  }
  const TensorMeta& t = it->second;
  buf->resize(static_cast<size_t>(NumElements(t.shape) * DTypeBits(t.dtype) / 8));
  StateDict d;
  d.AddFull(name, t.dtype, t.shape, buf->data(), false);
  return Load(storage, src, d, {.direct_io = false, .io_threads = 1}).status();
}

Result<std::string> NewestCheckpoint(Storage& storage, const std::vector<std::string>& roots) {
  std::string best;
  int64_t best_step = -1;
  for (const std::string& root : roots) {
    if (root.empty() || !storage.Exists(JoinPath(root, kLatestFile))) continue;
    auto src = OpenCheckpoint(storage, root);
    if (!src.ok()) {
      LOOM_LOG(WARNING, "ckpt") << "skipping " << root << ": " << src.status();
      continue;
    }
    if (src->meta.step > best_step) {
      best_step = src->meta.step;
      best = src->dir;
    }
  }
  return best;
}

namespace {

Status ReadChecked(Storage& storage, const CheckpointSource& src, int file, int64_t off,
                   int64_t len, const std::optional<uint64_t>& hash, const std::string& what,
                   std::string* out) {
  const std::string path = JoinPath(src.dir, src.meta.files[file].path);
  LOOM_ASSIGN_OR_RETURN(auto f, storage.Open(path, {.direct = false}));
  out->resize(static_cast<size_t>(len));
  LOOM_RETURN_IF_ERROR(f->ReadAt(off, len, out->data()));
  if (hash && XXH64(out->data(), out->size(), 0) != *hash) {
    return DataLossError(what + " in " + path + " fails its xxh64 checksum: the file is corrupted");
  }
  return OkStatus();
}

}  // namespace

Result<std::string> ReadObject(Storage& storage, const CheckpointSource& src,
                               const std::string& key, int rank) {
  auto it = src.meta.objects.find(key);
  if (it == src.meta.objects.end()) {
    return NotFoundError("checkpoint " + src.dir + " has no object '" + key + "'");
  }
  const ObjectMeta* pick = nullptr;
  for (const ObjectMeta& o : it->second) {
    if (o.rank == rank) pick = &o;
    if (o.rank == -1 && pick == nullptr) pick = &o;
  }
  if (pick == nullptr) {
    return NotFoundError("checkpoint " + src.dir + " has object '" + key +
                         "' only per rank, and none for rank " + std::to_string(rank) +
                         " (it was saved by " + std::to_string(src.meta.world_size) + " ranks)");
  }
  std::string out;
  LOOM_RETURN_IF_ERROR(ReadChecked(storage, src, pick->file, pick->byte_off, pick->byte_len,
                                   pick->xxh64, "object '" + key + "'", &out));
  return out;
}

Result<int64_t> VerifyChecksums(Storage& storage, const CheckpointSource& src) {
  int64_t checked = 0;
  std::string buf;
  for (const auto& [name, t] : src.meta.tensors) {
    for (const ChunkMeta& c : t.chunks) {
      if (!c.xxh64) continue;
      LOOM_RETURN_IF_ERROR(ReadChecked(storage, src, c.file, c.byte_off, c.byte_len, c.xxh64,
                                       "tensor '" + name + "' chunk " + c.box.DebugString(),
                                       &buf));
      ++checked;
    }
  }
  for (const auto& [key, list] : src.meta.objects) {
    for (const ObjectMeta& o : list) {
      if (!o.xxh64) continue;
      LOOM_RETURN_IF_ERROR(ReadChecked(storage, src, o.file, o.byte_off, o.byte_len, o.xxh64,
                                       "object '" + key + "'", &buf));
      ++checked;
    }
  }
  return checked;
}

}  // namespace loom::ckpt
