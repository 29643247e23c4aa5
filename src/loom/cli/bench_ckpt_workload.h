// The workloads of `loom bench ckpt` (the same shapes and names as bench/ckpt_peer.py):
//   dense: GPT blocks of width h — per layer qkv [3h, h], o [h, h], fc1 [4h, h], fc2 [h, 4h],
//          ln1/ln2 [h] — each with AdamW exp_avg and exp_avg_sq, fp32; tensor parallel over the
//          ranks: qkv/fc1 split on dim 0, o/fc2 on dim 1, LayerNorms replicated.
//   flat:  the same states as one 1-D buffer per state kind (param, exp_avg, exp_avg_sq), cut
//          evenly over the ranks at arbitrary element boundaries (ZeRO-1).
// Layouts used as load targets: the saved one, one rank holding everything, TP split on the
// other dim, TP over 3 ranks (uneven: h is not a multiple of 3), flat ranges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/ckpt/state_dict.h"

namespace loom::cli {

struct BenchTensor {
  std::string name;
  ckpt::Shape shape;
  int split = -1;  // TP dim, -1: replicated
  int kind = 0;    // 0 param, 1 exp_avg, 2 exp_avg_sq
};

// All states of `layers` blocks of width `hidden`, in buffer order.
std::vector<BenchTensor> DenseTensors(int64_t hidden, int64_t layers);
// Layers so the states total about `total_bytes` (at least 1).
int64_t LayersFor(int64_t hidden, int64_t total_bytes);

enum class BenchLayout { kTp, kTpOtherDim, kFull, kFlat };

// The tensors of one rank in `layout`, with buffers (filled with a pattern derived from each
// element's global position when `fill`, zeroed otherwise) owned by the returned object.
class BenchState {
 public:
  BenchState(const std::vector<BenchTensor>& tensors, BenchLayout layout, int rank, int world,
             bool fill);
  const ckpt::StateDict& dict() const { return dict_; }
  int64_t bytes() const { return bytes_; }
  // Zeroes every buffer (before a load that is checked).
  void Clear();
  // Whether every byte equals what `fill` writes (checks a load).
  bool MatchesPattern() const;

 private:
  static std::vector<float> Expected(size_t tensor, const ckpt::TensorEntry& e);
  std::vector<std::vector<float>> buffers_;
  std::vector<size_t> index_;  // tensor index of each entry
  ckpt::StateDict dict_;
  int64_t bytes_ = 0;
};

}  // namespace loom::cli
