// Loading with resharding: fill any target layout from any saved layout.
//
// For every target region (a box, or a flat range cut into boxes) and every saved chunk that
// intersects it, the intersection is copied run by run (box.h). Only the byte ranges a rank
// needs are read: runs are sorted by file offset, neighbours closer than `coalesce_gap` merge
// into spans; io threads take one span each and read it in pieces into an aligned (huge-page)
// buffer, copy each piece to its destinations with non-temporal stores and hash it for chunks
// read whole while it is still in cache.
// LoadReport::read_amplification() = bytes read / bytes needed (alignment padding and coalesced
// gaps included). A chunk read whole is checked against its xxh64.
//
// Sources: a loom checkpoint (a step directory, or a root whose `latest` names one; COMMITTED
// must exist), a .safetensors file, or a directory holding a sharded Hugging Face set
// (model.safetensors.index.json). Safetensors tensors are single full-box chunks, so HF weights
// load straight into any sharding.
// Errors name the tensor and file; a failed load never reports success (targets may be partly
// overwritten).
// Thread-safety: reentrant functions; targets must not be touched concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/ckpt/metadata.h"
#include "loom/ckpt/state_dict.h"
#include "loom/ckpt/storage.h"

namespace loom::comm {
class Communicator;
}

namespace loom::ckpt {

struct CheckpointSource {
  std::string dir;  // files are relative to it
  CheckpointMeta meta;
  std::string kind;  // "loom", "safetensors"
};

// Resolves `path` (step dir, checkpoint root, .safetensors file or HF directory) and reads its
// metadata. Errors: not found, not committed, unsupported version, malformed metadata.
Result<CheckpointSource> OpenCheckpoint(Storage& storage, const std::string& path);

struct LoadOptions {
  // With a communicator of more than one rank, Load is collective and cooperative: every byte
  // range any rank needs is read once, by one rank, and sent to the ranks that need it
  // (AllToAllV), so storage reads no byte twice and column-sliced loads read whole rows.
  comm::Communicator* comm = nullptr;
  int64_t exchange_round_bytes = 256 << 20;  // per rank and round, bounds the exchange buffers
  bool direct_io = true;
  int io_threads = 4;               // reads in flight (I/O-bound: more than cores is fine)
  int64_t piece_bytes = 16 << 20;   // spans are read in pieces of at most this size
  bool verify = true;               // check xxh64 of chunks read whole
  int64_t coalesce_gap = 256 << 10;  // merge reads separated by at most this many bytes
  int64_t max_span = 64 << 20;       // ... into spans of at most this size
  bool drop_cache = false;           // evict the files' pages first (cold-load measurements)
};

struct LoadReport {
  int64_t step = 0;
  int64_t bytes_needed = 0;  // by this rank
  int64_t bytes_read = 0;    // by this rank
  int64_t total_bytes_needed = 0;  // all ranks (cooperative loads; else this rank's)
  int64_t total_bytes_read = 0;
  int64_t bytes_sent = 0;      // cooperative loads: bytes this rank read for others
  int64_t bytes_received = 0;
  int64_t reads = 0;  // read calls issued
  int64_t verified_chunks = 0;
  double seconds = 0;
  // Bytes read from storage / bytes needed, over all ranks taking part.
  double read_amplification() const {
    return total_bytes_needed == 0 ? 1.0
                                   : static_cast<double>(total_bytes_read) / total_bytes_needed;
  }
};

// Fills every tensor of `targets` from `src`. Each target names a saved tensor with the same
// dtype and global shape.
Result<LoadReport> Load(Storage& storage, const CheckpointSource& src, const StateDict& targets,
                        const LoadOptions& opts = {});

// The cooperative form of Load (opts.comm set): a collective over `comm`.
Result<LoadReport> LoadCooperative(Storage& storage, const CheckpointSource& src,
                                   const StateDict& targets, comm::Communicator& comm,
                                   const LoadOptions& opts);

// Among checkpoint roots (e.g. a fast tier and a persistent one), the step directory of the
// newest committed step; "" when none has one. Missing roots are skipped.
Result<std::string> NewestCheckpoint(Storage& storage, const std::vector<std::string>& roots);

// One whole tensor of `src` (global shape, row-major) into `buf`, resized to fit.
Status ReadFullTensor(Storage& storage, const CheckpointSource& src, const std::string& name,
                      std::vector<char>* buf);

// An object's bytes: this rank's copy if one was saved per rank, else the replicated copy.
Result<std::string> ReadObject(Storage& storage, const CheckpointSource& src,
                               const std::string& key, int rank);

// Re-reads every chunk and object and checks its checksum; returns how many were checked.
Result<int64_t> VerifyChecksums(Storage& storage, const CheckpointSource& src);

}  // namespace loom::ckpt
