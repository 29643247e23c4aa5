// Per-ISA kernel entry points (internal): one table per compiled ISA file.
// Ranges are in units of the parallel loop (GEMM rows, conv output channels, crs rows, elements,
// reduction rows); the caller splits them between threads on tile boundaries.
// Thread-safety: pure functions over caller-owned buffers; disjoint ranges may run concurrently.
#pragma once

#include <cstdint>

#include "loom/trace/costmodel/kernel_spec.h"

namespace loom::trace::costmodel::internal {

struct IsaKernels {
  // C[m,n] += A[m,k]*B[k,n] for rows [row_begin, row_end) (multiples of g.mt except the end).
  void (*gemm)(const GemmParams& g, int64_t m, int64_t n, int64_t k, const float* a,
               const float* b, float* c, int64_t row_begin, int64_t row_end);
  // out += conv(in_padded, w) for output channels [co_begin, co_end) (multiples of tile_co).
  void (*conv_direct)(const ConvParams& p, const float* in, const float* w, float* out,
                      int64_t co_begin, int64_t co_end);
  // col[crs, oh*ow] from one padded image, rows [row_begin, row_end).
  void (*im2col)(const ConvParams& p, const float* image, float* col, int64_t row_begin,
                 int64_t row_end);
  // y[i] = op(x[i], x2[i]) for i in [begin, end).
  void (*eltwise)(EltOp op, const float* x, const float* x2, float* y, int64_t begin,
                  int64_t end);
  // Row reductions of x[rows, cols] for rows [row_begin, row_end).
  void (*reduce)(const ReduceParams& p, const float* x, float* y, int64_t row_begin,
                 int64_t row_end);
};

const IsaKernels& ScalarKernels();
const IsaKernels& Avx2Kernels();
const IsaKernels& Avx512Kernels();

}  // namespace loom::trace::costmodel::internal
