// ParamSpec and FlatLayout: the names, shapes and flat-buffer offsets of a model's parameters.
//
// loom keeps all parameters (and all gradients) in one contiguous buffer: ZeRO sharding,
// gradient bucketing, checkpoint chunking and weight transfer then work on byte ranges instead of
// tensor lists. Parameters are laid out in *reverse* order of first use in the forward pass, so
// gradients, which backward produces roughly in that order, fill the buffer from the front and
// buckets at the front become ready first. Each parameter starts on a 16-element boundary.
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/nn/gpt_config.h"

namespace loom::nn {

enum class InitKind { kNormal, kNormalResidual, kZeros, kOnes };

struct ParamSpec {
  std::string name;            // "blocks.3.attn.qkv.weight"
  std::vector<int64_t> shape;
  InitKind init = InitKind::kNormal;
  bool is_embedding = false;   // excluded from MFU's N
  bool decay = true;           // AdamW weight decay applies (not to biases/LayerNorm)
  int64_t numel() const;
};

struct ParamSlot {
  ParamSpec spec;
  int64_t offset = 0;  // elements from the start of the flat buffer
  int bucket = 0;      // index into FlatLayout::buckets()
};

// A contiguous range of the flat buffer holding whole parameters, reduced as one unit.
struct Bucket {
  int64_t begin = 0;
  int64_t end = 0;             // exclusive; (end - begin) is a multiple of LayoutOptions::pad
  std::vector<int> params;     // indices into slots(), in buffer order
  int64_t size() const { return end - begin; }
};

struct LayoutOptions {
  int64_t bucket_elems = 0;  // target bucket size; 0: one bucket for everything
  int64_t pad = 16;          // every bucket's size is a multiple of this (world x 16 for ZeRO)
};

class FlatLayout {
 public:
  static constexpr int64_t kAlignElems = 16;
  // `specs` in forward order; offsets are assigned back to front, parameters grouped into
  // buckets of about options.bucket_elems (a larger parameter gets a bucket of its own).
  explicit FlatLayout(std::vector<ParamSpec> specs, LayoutOptions options = {});
  // In forward order (index i = specs[i]).
  const std::vector<ParamSlot>& slots() const { return slots_; }
  // In buffer order: buckets()[0] starts at element 0 and is the first to become ready.
  const std::vector<Bucket>& buckets() const { return buckets_; }
  int64_t total_elements() const { return total_; }
  // Index into slots() of the parameter covering flat element `e`, or -1 for padding.
  int SlotAt(int64_t e) const;

 private:
  std::vector<ParamSlot> slots_;
  std::vector<Bucket> buckets_;
  int64_t total_ = 0;
};

// The GPT's parameters in forward order.
std::vector<ParamSpec> GptParamSpecs(const GptConfig& c);

}  // namespace loom::nn
