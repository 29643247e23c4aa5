// The avx512 build of the costmodel kernels.
// Flags (CMakeLists.txt): -O3 -mavx2 -mfma -mavx512f -mprefer-vector-width=512 -ffp-contract=fast.
#define LOOM_CM_ISA_NS avx512
#define LOOM_CM_TABLE Avx512Kernels
#include "loom/trace/costmodel/internal/kernels_impl.inc"
