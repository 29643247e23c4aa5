// ByteTokenizer: the identity between bytes and token ids 0-255 (vocab 256). Lossless for any
// input, so the model trains on raw text with no preprocessing.
// Thread-safety: stateless.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::nn {

class ByteTokenizer {
 public:
  static constexpr int64_t kVocabSize = 256;
  static std::vector<int32_t> Encode(std::string_view text);
  // Token ids outside [0, 256) are skipped.
  static std::string Decode(const std::vector<int32_t>& ids);
  // Decode for display: non-printable bytes other than \n and \t become '?'.
  static std::string DecodePrintable(const std::vector<int32_t>& ids);
};

}  // namespace loom::nn
