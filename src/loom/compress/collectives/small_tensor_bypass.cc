#include "loom/compress/collectives/small_tensor_bypass.h"

#include <cstdio>

namespace loom::compress {

bool SmallTensorBypass::Bypass(int64_t n) {
  if (WouldBypass(n)) {
    bypassed_.fetch_add(1, std::memory_order_relaxed);
    bypassed_elements_.fetch_add(n, std::memory_order_relaxed);
    return true;
  }
  compressed_.fetch_add(1, std::memory_order_relaxed);
  compressed_elements_.fetch_add(n, std::memory_order_relaxed);
  return false;
}

BypassCounts SmallTensorBypass::counts() const {
  return {.bypassed = bypassed_.load(std::memory_order_relaxed),
          .bypassed_elements = bypassed_elements_.load(std::memory_order_relaxed),
          .compressed = compressed_.load(std::memory_order_relaxed),
          .compressed_elements = compressed_elements_.load(std::memory_order_relaxed)};
}

std::string SmallTensorBypass::Describe() const {
  const BypassCounts c = counts();
  if (c.bypassed == 0) return "";
  const int64_t total = c.bypassed_elements + c.compressed_elements;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "small-tensor bypass (< %lld elements, compress.min_elements): %lld of %lld "
                "reductions, %lld of %lld elements (%.2f%%) sent uncompressed",
                static_cast<long long>(min_elements_), static_cast<long long>(c.bypassed),
                static_cast<long long>(c.bypassed + c.compressed),
                static_cast<long long>(c.bypassed_elements), static_cast<long long>(total),
                total > 0 ? 100.0 * c.bypassed_elements / total : 0.0);
  return buf;
}

}  // namespace loom::compress
