// The scalar build of the costmodel kernels.
// Flags (CMakeLists.txt): -O3 -fno-tree-vectorize -fno-tree-slp-vectorize.
#define LOOM_CM_ISA_NS scalar
#define LOOM_CM_TABLE ScalarKernels
#include "loom/trace/costmodel/internal/kernels_impl.inc"
