#include "loom/nn/byte_tokenizer.h"

namespace loom::nn {

std::vector<int32_t> ByteTokenizer::Encode(std::string_view text) {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::Decode(const std::vector<int32_t>& ids) {
  std::string s;
  s.reserve(ids.size());
  for (int32_t id : ids) {
    if (id >= 0 && id < kVocabSize) s.push_back(static_cast<char>(id));
  }
  return s;
}

std::string ByteTokenizer::DecodePrintable(const std::vector<int32_t>& ids) {
  std::string s = Decode(ids);
  for (char& c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 32 && c != '\n' && c != '\t') c = '?';
    if (u >= 127) c = '?';
  }
  return s;
}

}  // namespace loom::nn
