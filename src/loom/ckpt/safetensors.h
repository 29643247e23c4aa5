// Hugging Face safetensors as checkpoint sources (import) and targets (export).
//
// Import: a .safetensors file is a degenerate checkpoint — each tensor one full-box chunk at byte
// 8 + header_len + data_offsets[0] — so the resharding loader reads HF weights straight into any
// sharding, touching only the byte ranges each rank needs. A directory holding
// model.safetensors.index.json is a sharded set ({"weight_map": {tensor: file}}).
// Export: streams a checkpoint out as safetensors with memory bounded by the largest tensor;
// with max_shard_bytes > 0 it writes model-0000i-of-0000n.safetensors files plus the index.
// Thread-safety: reentrant functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "loom/base/status.h"
#include "loom/ckpt/loader.h"

namespace loom::ckpt {

inline constexpr const char* kHfIndexFile = "model.safetensors.index.json";

// `path`: a .safetensors file or a directory with model.safetensors.index.json.
Result<CheckpointSource> OpenSafetensors(Storage& storage, const std::string& path);

struct ExportOptions {
  int64_t max_shard_bytes = 0;  // 0: one file
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  std::function<void(int64_t done, int64_t total)> progress;
};

struct ExportReport {
  int files = 0;
  int64_t tensors = 0;
  int64_t bytes = 0;
  int64_t peak_tensor_bytes = 0;  // the largest buffer held
};

// `out`: a .safetensors path (single file) or, with max_shard_bytes, a directory.
Result<ExportReport> ExportSafetensors(Storage& storage, const CheckpointSource& src,
                                       const std::string& out, const ExportOptions& opts);

}  // namespace loom::ckpt
