#include "loom/ckpt/read_plan.h"

#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"
#include "loom/ckpt/parallel.h"

namespace loom::ckpt {

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

std::vector<ReadSpan> Coalesce(std::vector<const ReadReq*> reqs, int64_t gap, int64_t max_span) {
  std::sort(reqs.begin(), reqs.end(), [](const ReadReq* a, const ReadReq* b) {
    if (a->file != b->file) return a->file < b->file;
    if (a->off != b->off) return a->off < b->off;
    return a->rank < b->rank;
  });
  std::vector<ReadSpan> spans;
  for (const ReadReq* r : reqs) {
    if (!spans.empty()) {
      ReadSpan& s = spans.back();
      const int64_t new_end = std::max(s.end, r->off + r->len);
      if (s.file == r->file && r->off - s.end <= gap && new_end - s.off <= max_span) {
        s.end = new_end;
        s.reqs.push_back(r);
        continue;
      }
    }
    spans.push_back({r->file, r->off, r->off + r->len, {r}});
  }
  return spans;
}

std::vector<ReadPiece> CutPieces(const std::vector<ReadSpan>& spans, int64_t piece_bytes) {
  std::vector<ReadPiece> pieces;
  for (const ReadSpan& s : spans) {
    for (int64_t p = s.off; p < s.end;) {
      const int64_t e = std::min(s.end, (p / piece_bytes + 1) * piece_bytes);
      pieces.push_back({&s, p, e});
      p = e;
    }
  }
  return pieces;
}

Result<std::map<int, std::unique_ptr<ReadableFile>>> OpenFiles(
    Storage& storage, const CheckpointSource& src, const std::vector<ReadSpan>& spans,
    const LoadOptions& opts) {
  std::map<int, std::unique_ptr<ReadableFile>> files;
  for (const ReadSpan& s : spans) {
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
  return files;
}

Result<int64_t> VerifyWholeChunks(Executor* pool, const CheckpointSource& src,
                                  const std::vector<ReadReq>& reqs) {
  std::vector<const ReadReq*> whole;
  for (const ReadReq& r : reqs) {
    if (r.whole != nullptr && r.whole->xxh64) whole.push_back(&r);
  }
  LOOM_RETURN_IF_ERROR(ParallelFor(pool, static_cast<int64_t>(whole.size()), [&](int64_t i) {
    const ReadReq& r = *whole[i];
    if (XXH64(r.dst, static_cast<size_t>(r.len), 0) != *r.whole->xxh64) {
      return DataLossError("tensor '" + *r.name + "' chunk " + r.whole->box.DebugString() +
                           " in " + JoinPath(src.dir, src.meta.files[r.file].path) +
                           " fails its xxh64 checksum: the file is corrupted");
    }
    return OkStatus();
  }));
  return static_cast<int64_t>(whole.size());
}

}  // namespace loom::ckpt
