#include "loom/compress/weight_spec.h"

namespace loom::compress {

std::string WeightSpec::ToString() const {
  if (!difference) return codec.ToString();
  return "qwd" + codec.ToString().substr(3);  // "int4:g..." -> "qwd4:g..."
}

Result<WeightSpec> ParseWeightSpec(std::string_view text) {
  WeightSpec spec;
  if (!text.starts_with("qwd")) {
    Result<CodecSpec> codec = ParseCodecSpec(text);
    if (!codec.ok()) {
      return InvalidArgumentError(std::string(codec.status().message()) +
                                  "; weights also take qwd<bits>[:options] (quantized differences)");
    }
    spec.codec = *codec;
    return spec;
  }
  spec.difference = true;
  const std::string as_int = "int" + std::string(text.substr(3));
  Result<CodecSpec> codec = ParseCodecSpec(as_int);
  if (!codec.ok()) {
    return InvalidArgumentError("weight spec '" + std::string(text) + "': " +
                                std::string(codec.status().message()));
  }
  spec.codec = *codec;
  return spec;
}

}  // namespace loom::compress
