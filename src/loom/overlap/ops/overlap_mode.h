// OverlapMode: how an overlapped op schedules its communication against its GEMM.
//   kSequential  whole collective, then one GEMM (the non-overlapped baseline and the fallback)
//   kDecomposed  one chunk per peer rank, each consumed/produced as it arrives/finishes
//                (PyTorch async-TP's pipelined all-gather/reduce-scatter)
//   kFused       tile level: S splits per shard, per-tile signals, rank-aware tile order (FLUX)
//   kAuto        the simulator (sim/) predicts the three and runs the fastest
// Thread-safety: value types.
#pragma once

#include <string_view>

#include "loom/base/status.h"

namespace loom::overlap {

enum class OverlapMode { kSequential, kDecomposed, kFused, kAuto };

std::string_view OverlapModeName(OverlapMode mode);  // "sequential", "decomposed", "fused", "auto"
Result<OverlapMode> ParseOverlapMode(std::string_view name);

}  // namespace loom::overlap
