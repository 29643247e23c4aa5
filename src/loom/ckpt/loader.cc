#include "loom/ckpt/loader.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "loom/base/clock.h"
#include "loom/base/json_util.h"
#include "loom/base/thread_pool.h"
#include "loom/ckpt/parallel.h"
#include "loom/ckpt/safetensors.h"

namespace loom::ckpt {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// One contiguous piece of a file needed at one destination.
struct ReadReq {
  int file = 0;
  int64_t off = 0;
  int64_t len = 0;
  char* dst = nullptr;
  const ChunkMeta* whole = nullptr;  // set when this is an entire chunk (checksum-verifiable)
  const std::string* name = nullptr;
};

struct Span {
  int file = 0;
  int64_t off = 0;
  int64_t end = 0;
  std::vector<const ReadReq*> reqs;
};

Status PlanReads(const CheckpointSource& src, const StateDict& targets,
                 std::vector<ReadReq>* reqs, int64_t* needed) {
  for (const TensorEntry& t : targets.tensors()) {
    auto it = src.meta.tensors.find(t.name);
    if (it == src.meta.tensors.end()) {
      nlohmann::json names = nlohmann::json::object();
      for (const auto& [n, m] : src.meta.tensors) names[n] = nullptr;
      const std::string hint = ClosestKey(names, t.name);
      return NotFoundError("checkpoint " + src.dir + " has no tensor '" + t.name + "'" +
                           (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    const TensorMeta& saved = it->second;
    if (saved.dtype != t.dtype) {
      return InvalidArgumentError("tensor '" + t.name + "' was saved as " +
                                  std::string(DTypeName(saved.dtype)) + ", the target is " +
                                  std::string(DTypeName(t.dtype)));
    }
    if (saved.shape != t.shape) {
      return InvalidArgumentError("tensor '" + t.name + "' was saved with global shape " +
                                  FullBox(saved.shape).DebugString() + ", the target has " +
                                  FullBox(t.shape).DebugString());
    }
    LOOM_ASSIGN_OR_RETURN(const int64_t esize, ElementBytes(t.dtype));
    for (const Piece& p : RegionPieces(t)) {
      if (!BoxInBounds(p.box, t.shape)) {
        return InvalidArgumentError("tensor '" + t.name + "': target box " +
                                    p.box.DebugString() + " is outside the global shape");
      }
      char* base = static_cast<char*>(t.data) + p.data_elem * esize;
      int64_t covered = 0;
      for (const ChunkMeta& c : saved.chunks) {
        auto x = Intersect(c.box, p.box);
        if (!x) continue;
        covered += x->Volume();
        const size_t first = reqs->size();
        ForEachRun(c.box, p.box, *x, [&](const Run& r) {
          reqs->push_back({c.file, c.byte_off + r.src * esize, r.elems * esize,
                           base + r.dst * esize, nullptr, &it->first});
        });
        if (reqs->size() == first + 1 && (*reqs)[first].len == c.byte_len) {
          (*reqs)[first].whole = &c;
        }
      }
      if (covered != p.box.Volume()) {
        return DataLossError("tensor '" + t.name + "': saved chunks cover " +
                             std::to_string(covered) + " of the " +
                             std::to_string(p.box.Volume()) + " elements of target box " +
                             p.box.DebugString());
      }
      *needed += p.box.Volume() * esize;
    }
  }
  return OkStatus();
}

std::vector<Span> Coalesce(const std::vector<ReadReq>& reqs, const LoadOptions& opts) {
  std::vector<const ReadReq*> order;
  for (const ReadReq& r : reqs) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const ReadReq* a, const ReadReq* b) {
    return a->file != b->file ? a->file < b->file : a->off < b->off;
  });
  std::vector<Span> spans;
  for (const ReadReq* r : order) {
    if (!spans.empty()) {
      Span& s = spans.back();
      const int64_t new_end = std::max(s.end, r->off + r->len);
      if (s.file == r->file && r->off - s.end <= opts.coalesce_gap &&
          new_end - s.off <= opts.max_span) {
        s.end = new_end;
        s.reqs.push_back(r);
        continue;
      }
    }
    spans.push_back({r->file, r->off, r->off + r->len, {r}});
  }
  return spans;
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
  Stopwatch sw;
  LoadReport report;
  report.step = src.meta.step;
  std::vector<ReadReq> reqs;
  LOOM_RETURN_IF_ERROR(PlanReads(src, targets, &reqs, &report.bytes_needed));
  std::vector<Span> spans = Coalesce(reqs, opts);

  std::map<int, std::unique_ptr<ReadableFile>> files;
  for (const Span& s : spans) {
    if (files.count(s.file)) continue;
    const FileMeta& fm = src.meta.files[s.file];
    const std::string path = JoinPath(src.dir, fm.path);
    if (opts.drop_cache) LOOM_RETURN_IF_ERROR(storage.DropCache(path));
    LOOM_ASSIGN_OR_RETURN(auto f, storage.Open(path, {.direct = opts.direct_io}));
    if (f->size() < fm.bytes) {
      return DataLossError("checkpoint file " + path + " is truncated: " +
                           std::to_string(f->size()) + " of " + std::to_string(fm.bytes) +
                           " bytes");
    }
    files[s.file] = std::move(f);
  }
  // Spans are cut at piece_bytes boundaries so several reads are in flight per file.
  struct ReadPiece {
    const Span* span;
    int64_t off, end;
  };
  std::vector<ReadPiece> pieces;
  for (const Span& s : spans) {
    for (int64_t p = s.off; p < s.end;) {
      const int64_t e = std::min(s.end, (p / opts.piece_bytes + 1) * opts.piece_bytes);
      pieces.push_back({&s, p, e});
      p = e;
    }
  }
  ThreadPool pool({.num_threads = std::max(1, opts.io_threads), .name = "ckpt-load"});
  pool.Start();
  LOOM_RETURN_IF_ERROR(ParallelFor(&pool, static_cast<int64_t>(pieces.size()), [&](int64_t i) {
    const ReadPiece& p = pieces[i];
    ReadableFile& f = *files[p.span->file];
    // One request covering the piece: read straight into its destination.
    for (const ReadReq* r : p.span->reqs) {
      if (r->off <= p.off && r->off + r->len >= p.end) {
        return f.ReadAt(p.off, p.end - p.off, r->dst + (p.off - r->off));
      }
    }
    thread_local std::vector<char> bounce;
    bounce.resize(static_cast<size_t>(p.end - p.off));
    LOOM_RETURN_IF_ERROR(f.ReadAt(p.off, p.end - p.off, bounce.data()));
    for (const ReadReq* r : p.span->reqs) {
      const int64_t a = std::max(p.off, r->off), e = std::min(p.end, r->off + r->len);
      if (a < e) {
        std::memcpy(r->dst + (a - r->off), bounce.data() + (a - p.off), static_cast<size_t>(e - a));
      }
    }
    return OkStatus();
  }));
  report.reads = static_cast<int64_t>(pieces.size());
  if (opts.verify) {
    std::vector<const ReadReq*> whole;
    for (const ReadReq& r : reqs) {
      if (r.whole != nullptr && r.whole->xxh64) whole.push_back(&r);
    }
    LOOM_RETURN_IF_ERROR(ParallelFor(&pool, static_cast<int64_t>(whole.size()), [&](int64_t i) {
      const ReadReq& r = *whole[i];
      if (XXH64(r.dst, static_cast<size_t>(r.len), 0) != *r.whole->xxh64) {
        return DataLossError("tensor '" + *r.name + "' chunk " + r.whole->box.DebugString() +
                             " in " + JoinPath(src.dir, src.meta.files[r.file].path) +
                             " fails its xxh64 checksum: the file is corrupted");
      }
      return OkStatus();
    }));
    report.verified_chunks = static_cast<int64_t>(whole.size());
  }
  pool.Stop();
  for (const auto& [i, f] : files) report.bytes_read += f->bytes_read();
  report.seconds = sw.Seconds();
  return report;
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
