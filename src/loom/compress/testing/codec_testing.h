// Test helper: a codec from its spec string, failing the current test on a bad spec.
// Thread-safety: as gtest assertions (call from test threads).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

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

// Error feedback's invariant after many 2-bit steps: everything decoded plus the final residual
// equals everything put in, up to fp32 rounding of the residual updates (< 1e-3), while the
// decoded sum alone has lost a lot (> 0.1 somewhere).
inline void ExpectErrorFeedbackTelescopes(const std::vector<double>& sent,
                                          const std::vector<float>& residual,
                                          const std::vector<double>& inputs) {
  double worst = 0, drop = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    worst = std::max(worst, std::fabs(sent[i] + residual[i] - inputs[i]));
    drop = std::max(drop, std::fabs(sent[i] - inputs[i]));
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(drop, 0.1);
}

}  // namespace loom::compress::testing
