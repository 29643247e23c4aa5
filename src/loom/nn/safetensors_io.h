// Minimal safetensors reading and writing for flat parameter buffers (F32), so weights move
// between loom and PyTorch/Hugging Face tools (`bench/ddp_peer.py` loads loom's initial weights
// this way). Format: 8-byte little-endian header length, a JSON header mapping each tensor name
// to {dtype, shape, data_offsets} (plus "__metadata__"), then the raw little-endian data.
// Thread-safety: reentrant functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/nn/param_layout.h"

namespace loom::nn {

// Writes every parameter of `layout` from `flat` (fp32) as an F32 tensor, atomically.
Status WriteSafetensors(const std::string& path, const FlatLayout& layout, const float* flat,
                        const std::map<std::string, std::string>& metadata);

struct SafetensorsEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<char> data;
};
// Reads every tensor of a safetensors file. Errors name the file and what is malformed.
Result<std::map<std::string, SafetensorsEntry>> ReadSafetensors(const std::string& path);

}  // namespace loom::nn
