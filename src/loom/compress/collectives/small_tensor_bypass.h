// SmallTensorBypass: which gradient buckets (or tensors) are too small for compression to pay,
// and how many went uncompressed because of it, so a run can say so (never a silent fallback).
//
//   SmallTensorBypass bypass(cfg.compress.min_elements);
//   if (bypass.Bypass(n)) return comm->AllReduce(...);  // counted
//   ... compressed collective ...
//   out << bypass.Describe();  // "small-tensor bypass: 3 of 40 reductions ... below 65536"
//
// Why a threshold (BytePS's MIN_COMPRESS_BYTES, PyTorch's min_compression_rate): a compressed
// collective has a fixed cost per call that a plain one does not — an extra message round
// (all-to-all + all-gather instead of one direct exchange for small buffers), encode/decode
// dispatch and the helper-thread handoff — while it saves (32 - bits) / 8 bytes per element and
// direction. kDefaultMinElements = 65536 (= 2^16, the smallest size `loom bench codecs` measures)
// is the break-even for a ~0.3 ms fixed cost at 10 Gbit/s with int4 (0.3 ms / (2 x 3.5 B / 1.25
// GB/s) = 54k elements). The 0.3 ms is modelled (two extra ~0.1 ms message rounds on a LAN plus
// dispatch), not measured: on the project's loaded 2-core VM every small collective costs
// 4-12 ms of scheduling, which hides it (module README). On slower links the
// break-even is lower: set compress.min_elements (0 disables the bypass), or let the planner
// (compress.plan) decide per bucket from measured costs.
// Thread-safety: Bypass and counts may be called from any thread (atomic counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace loom::compress {

inline constexpr int64_t kDefaultMinElements = 65536;

struct BypassCounts {
  int64_t bypassed = 0;             // reductions sent uncompressed because they were small
  int64_t bypassed_elements = 0;
  int64_t compressed = 0;           // reductions that were compressed
  int64_t compressed_elements = 0;
};

class SmallTensorBypass {
 public:
  // min_elements <= 0: nothing is bypassed (everything is still counted as compressed).
  explicit SmallTensorBypass(int64_t min_elements = kDefaultMinElements)
      : min_elements_(min_elements) {}

  // Whether a tensor of n elements should travel uncompressed; counts the decision.
  bool Bypass(int64_t n);
  // The decision alone, not counted (e.g. to describe a bucket layout up front).
  bool WouldBypass(int64_t n) const { return min_elements_ > 0 && n < min_elements_; }

  int64_t min_elements() const { return min_elements_; }
  BypassCounts counts() const;
  // "small-tensor bypass (< 65536 elements): 3 of 40 reductions, 12288 of 2.1e+06 elements
  // (0.59%) sent uncompressed"; empty when nothing was bypassed.
  std::string Describe() const;

 private:
  const int64_t min_elements_;
  std::atomic<int64_t> bypassed_{0}, bypassed_elements_{0}, compressed_{0},
      compressed_elements_{0};
};

}  // namespace loom::compress
