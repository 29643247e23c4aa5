// Read planning shared by the loaders: which byte ranges of which files land where, merged
// into spans and cut into pieces that io threads read in parallel.
// Thread-safety: value types and reentrant functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"
#include "loom/ckpt/loader.h"

namespace loom::ckpt {

// One contiguous byte range of a file needed at one destination.
struct ReadReq {
  int file = 0;
  int64_t off = 0;
  int64_t len = 0;
  char* dst = nullptr;
  const ChunkMeta* whole = nullptr;  // set when this is an entire chunk (checksum-verifiable)
  const std::string* name = nullptr;
  int rank = 0;  // the rank that needs it (cooperative loads)
};

// Every range the targets need, and how many bytes they need in all. Checks names, dtypes,
// shapes and that the saved chunks cover each target.
Status PlanReads(const CheckpointSource& src, const StateDict& targets,
                 std::vector<ReadReq>* reqs, int64_t* needed);

// Requests of one file merged when closer than `gap` bytes, up to `max_span` bytes per span;
// requests inside a span are sorted by (offset, rank).
struct ReadSpan {
  int file = 0;
  int64_t off = 0;
  int64_t end = 0;
  std::vector<const ReadReq*> reqs;
};
std::vector<ReadSpan> Coalesce(std::vector<const ReadReq*> reqs, int64_t gap, int64_t max_span);

// A span cut at multiples of `piece_bytes` (aligned boundaries), so reads proceed in parallel.
struct ReadPiece {
  const ReadSpan* span = nullptr;
  int64_t off = 0;
  int64_t end = 0;
};
std::vector<ReadPiece> CutPieces(const std::vector<ReadSpan>& spans, int64_t piece_bytes);

// The overlap of a request with [off, end) (empty when b >= e).
inline std::pair<int64_t, int64_t> Overlap(const ReadReq& r, int64_t off, int64_t end) {
  return {std::max(off, r.off), std::min(end, r.off + r.len)};
}

// Opens the files the spans touch; a file shorter than the metadata says is kDataLoss.
Result<std::map<int, std::unique_ptr<ReadableFile>>> OpenFiles(
    Storage& storage, const CheckpointSource& src, const std::vector<ReadSpan>& spans,
    const LoadOptions& opts);

// Checks the xxh64 of every request that is a whole chunk; returns how many were checked.
Result<int64_t> VerifyWholeChunks(Executor* pool, const CheckpointSource& src,
                                  const std::vector<ReadReq>& reqs);

}  // namespace loom::ckpt
