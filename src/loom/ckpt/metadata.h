// CheckpointMeta: the `.metadata.json` of one checkpoint step (docs/checkpoint_format.md).
//
// Per tensor: dtype (safetensors name), global shape, and the chunks it was saved as (box ->
// file, byte offset, byte length, xxh64). Per object key: one entry per saving rank (rank -1 for
// a replicated object). Parsing validates everything a loader relies on (version, files, boxes
// in bounds and disjoint, full coverage, byte lengths matching the boxes) and names the tensor
// or file at fault.
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/base/dtype.h"
#include "loom/base/status.h"
#include "loom/ckpt/box.h"

namespace loom::ckpt {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kFormatName = "loom-ckpt";
inline constexpr const char* kMetadataFile = ".metadata.json";
inline constexpr const char* kCommittedFile = "COMMITTED";
inline constexpr const char* kLatestFile = "latest";
inline constexpr int64_t kAlignment = 4096;

struct ChunkMeta {
  Box box;
  int file = 0;  // index into CheckpointMeta::files
  int64_t byte_off = 0;
  int64_t byte_len = 0;
  std::optional<uint64_t> xxh64;  // of the chunk's bytes; absent for imported files
};

struct TensorMeta {
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<ChunkMeta> chunks;
};

struct ObjectMeta {
  int rank = -1;  // the rank that saved it; -1: one copy for all ranks
  int file = 0;
  int64_t byte_off = 0;
  int64_t byte_len = 0;
  std::optional<uint64_t> xxh64;
};

struct FileMeta {
  std::string path;  // relative to the checkpoint directory
  int64_t bytes = 0;
};

struct CheckpointMeta {
  int version = kFormatVersion;
  int world_size = 1;
  int64_t step = 0;
  std::string producer;
  std::vector<FileMeta> files;
  std::map<std::string, TensorMeta> tensors;
  std::map<std::string, std::vector<ObjectMeta>> objects;
  nlohmann::json user = nlohmann::json::object();

  int64_t TensorBytes() const;  // sum of chunk byte lengths
};

std::string MetadataToJson(const CheckpointMeta& meta);
// `where` (a path) prefixes error messages.
Result<CheckpointMeta> MetadataFromJson(std::string_view text, const std::string& where);
// The structural checks MetadataFromJson runs; also used by the planner before writing.
Status ValidateMetadata(const CheckpointMeta& meta, const std::string& where);

// Element size in bytes; an error for packed types (I4), which cannot be cut at any element.
Result<int64_t> ElementBytes(DType t);

std::string HexU64(uint64_t v);
Result<uint64_t> ParseHexU64(std::string_view s);

}  // namespace loom::ckpt
