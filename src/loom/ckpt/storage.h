// Storage: where checkpoint bytes go. One interface, several backends (POSIX files with O_DIRECT,
// an in-memory store, a fault-injecting decorator), all held to one conformance suite
// (testing/storage_conformance.h). Object stores fit the same shape later: large files written
// by offset then synced, small files replaced atomically, directories committed by rename.
//
// Paths are plain strings ("/ckpt/step_00000050/data/r0.bin"); backends interpret them.
// Thread-safety: a Storage may be used from several threads at once; one file object is used by
// one thread at a time, except WriteAt/ReadAt on disjoint ranges, which may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::ckpt {

struct IoOptions {
  // Bypass the page cache (O_DIRECT) where the backend supports it; unaligned requests still
  // work (through a buffered descriptor or an aligned bounce buffer).
  bool direct = true;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes exactly n bytes at `offset`. Fast path under direct I/O: offset, n and data all
  // kAlignment-aligned.
  virtual Status WriteAt(int64_t offset, const void* data, int64_t n) = 0;
  // Makes everything written so far durable.
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual int64_t size() const = 0;
  // Reads exactly n bytes at `offset` into dst; reading past the end is a kDataLoss error that
  // names the file (a truncated checkpoint).
  virtual Status ReadAt(int64_t offset, int64_t n, void* dst) = 0;
  // Bytes transferred from the medium so far, including alignment padding.
  virtual int64_t bytes_read() const = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;
  virtual std::string name() const = 0;
  // Creates (truncating) a file for writing. The parent directory must exist.
  virtual Result<std::unique_ptr<WritableFile>> Create(const std::string& path,
                                                       const IoOptions& opts) = 0;
  virtual Result<std::unique_ptr<ReadableFile>> Open(const std::string& path,
                                                     const IoOptions& opts) = 0;
  // Replaces a small file atomically and durably (temporary name, sync, rename, sync dir).
  Status WriteSmallFile(const std::string& path, std::string_view content) {
    return WriteSmallFile(path, content, SmallFileOptions{});
  }
  struct SmallFileOptions {
    bool atomic = true;  // readers see the old or the new content, never a part
    bool sync = true;    // durable before returning
  };
  virtual Status WriteSmallFile(const std::string& path, std::string_view content,
                                const SmallFileOptions& opts) = 0;
  // Makes a directory's entries (creations, renames) durable.
  virtual Status SyncDir(const std::string& path) { return OkStatus(); }
  virtual Result<std::string> ReadSmallFile(const std::string& path) = 0;
  // Atomic, durable rename of a file or directory; fails if `to` exists and is a non-empty dir.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status MakeDirs(const std::string& path) = 0;
  // Removes a file or a directory tree; a missing path is not an error.
  virtual Status RemoveAll(const std::string& path) = 0;
  // Names (not paths) of a directory's entries, sorted.
  virtual Result<std::vector<std::string>> List(const std::string& dir) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Evicts a file's cached pages so the next read comes from the medium (cold-load benchmarks).
  virtual Status DropCache(const std::string& path) { return OkStatus(); }
};

// POSIX files. Direct I/O falls back to buffered I/O (logged once) where the filesystem
// rejects O_DIRECT (tmpfs).
std::unique_ptr<Storage> NewPosixStorage();
// Everything in process memory; for tests and as the fast tier.
std::unique_ptr<Storage> NewMemoryStorage();

// Joins path components with exactly one '/'.
std::string JoinPath(std::string_view a, std::string_view b);
// The part before the last '/', or "." if there is none.
std::string ParentPath(std::string_view p);

}  // namespace loom::ckpt
