// Test helper: a codec from its spec string, failing the current test on a bad spec.
// Thread-safety: as gtest assertions (call from test threads).
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "loom/compress/codec.h"

namespace loom::compress::testing {

inline std::unique_ptr<Codec> MakeTestCodec(const char* spec) {
  auto parsed = ParseCodecSpec(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  auto codec = MakeCodec(*parsed);
  EXPECT_TRUE(codec.ok()) << codec.status();
  return codec.ok() ? std::move(*codec) : nullptr;
}

}  // namespace loom::compress::testing
