// The avx2 build of the costmodel kernels.
// Flags (CMakeLists.txt): -O3 -mavx2 -mfma -ffp-contract=fast.
#define LOOM_CM_ISA_NS avx2
#define LOOM_CM_TABLE Avx2Kernels
#include "loom/trace/costmodel/internal/kernels_impl.inc"
