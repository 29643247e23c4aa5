// FaultyStorage: a Storage decorator that fails chosen operations, for fault-injection tests
// (short writes, EIO, ENOSPC on data, on sync, on the small commit files, on rename).
// Operations are counted per kind across all files; rule {kWrite, 3, ENOSPC} fails the third
// WriteAt with ENOSPC. A short write writes half of the bytes before failing, as a full disk does.
// Thread-safety: as the wrapped Storage; the counters are atomic.
#pragma once

#include <memory>
#include <vector>

#include "loom/ckpt/storage.h"

namespace loom::ckpt {

enum class FaultOp { kCreate, kWrite, kSync, kWriteSmall, kRename, kRead };

struct FaultRule {
  FaultOp op;
  int nth = 1;            // 1-based occurrence of `op` that fails
  int error = 5;          // errno (EIO)
  bool short_write = false;  // kWrite only: write half, then fail
  bool every_after = false;  // fail the nth and every later occurrence
};

std::unique_ptr<Storage> NewFaultyStorage(Storage* base, std::vector<FaultRule> rules);

}  // namespace loom::ckpt
