// Which forced GemmIsa a CPU can run (TileGemm::Pack's check, split out so tests can pass
// feature sets other than this CPU's).
//
// Thread-safety: a pure function.
#pragma once

#include "loom/base/status.h"
#include "loom/overlap/gemm/tile_gemm.h"

namespace loom::overlap::internal {

// OK if `isa` (not kAuto) can run on a CPU with the given features, else kInvalidArgument naming
// the ISA and `best` (what the CPU does support). TileGemm::Pack calls it with cpuid's answer.
Status CheckGemmIsaSupported(GemmIsa isa, bool has_avx2_fma, bool has_avx512f, GemmIsa best);

}  // namespace loom::overlap::internal
