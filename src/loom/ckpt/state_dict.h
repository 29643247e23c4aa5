// StateDict: what a rank hands to the checkpointer (to save) or wants filled (to load).
//
// Tensors are described by their global identity (name, dtype, global shape) and the region
// this rank holds: an n-D box (tensor parallelism: a row or column slice) or a flat element
// range of the row-major tensor (ZeRO / FSDP flat shards, cut anywhere). `data` points at the
// region's elements, contiguous and row-major over the region. Replicated regions (the same box
// on several ranks, e.g. LayerNorm weights under TP, everything under plain DP) are saved once,
// by whichever holder the planner picks to balance bytes.
// Objects are opaque bytes (data-loader position, RNG state, scheduler, user blobs), saved per
// rank or, when replicated, once.
// Thread-safety: value type; the memory behind `data` must stay valid and unchanged until Save
// returns (the snapshot) or Load returns.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "loom/base/dtype.h"
#include "loom/ckpt/box.h"

namespace loom::ckpt {

struct FlatRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
};

struct TensorEntry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;                          // global shape
  std::variant<Box, FlatRange> region;  // what this rank holds
  void* data = nullptr;
  bool replicated = false;
};

struct ObjectEntry {
  std::string key;
  std::string bytes;
  bool replicated = false;
};

class StateDict {
 public:
  void AddTensor(TensorEntry e) { tensors_.push_back(std::move(e)); }
  // The whole tensor, held by this rank.
  void AddFull(std::string name, DType dtype, Shape shape, void* data, bool replicated) {
    Box b = FullBox(shape);
    tensors_.push_back({std::move(name), dtype, std::move(shape), std::move(b), data, replicated});
  }
  void AddObject(std::string key, std::string bytes, bool replicated) {
    objects_.push_back({std::move(key), std::move(bytes), replicated});
  }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  const std::vector<ObjectEntry>& objects() const { return objects_; }

 private:
  std::vector<TensorEntry> tensors_;
  std::vector<ObjectEntry> objects_;
};

// The boxes of an entry's region with the element offset of each inside `data`, in order.
struct Piece {
  Box box;
  int64_t data_elem = 0;
};
std::vector<Piece> RegionPieces(const TensorEntry& e);
int64_t RegionElements(const TensorEntry& e);

}  // namespace loom::ckpt
