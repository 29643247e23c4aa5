// The machine's dense GEMM peak, the denominator of MFU: libtorch `mm` on square matrices in the
// compute dtype with the rank's thread count, best of a few sizes and repetitions. Measured once
// and cached per (CPU model, dtype, threads, libtorch version) in $LOOM_CACHE_DIR (default
// ~/.cache/loom/gemm_peak.json).
// Thread-safety: call from one thread; it sets nothing global except reading at::get_num_threads.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "loom/base/status.h"

namespace loom::train {

struct GemmPeak {
  double flops = 0;      // FLOP/s of one rank
  std::string source;    // "measured" or "cached <file>"
  std::string key;       // cache key
};

Result<GemmPeak> MeasureGemmPeak(at::ScalarType dtype, int threads, bool use_cache = true);

}  // namespace loom::train
