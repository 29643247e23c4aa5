// Element-wise reduction kernels used by the collective algorithms, for every DType.
//
// Floating types reduce in f32 (f64 in f64) and round once back to the storage type; integer
// types wrap (two's complement) like torch; BOOL treats sum/max as OR and min as AND. The f32 and
// bf16 paths are compiled for AVX-512, AVX2 and baseline x86-64 and chosen at run time.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "loom/base/dtype.h"

namespace loom::comm {

enum class ReduceOp { kSum, kAvg, kMax, kMin };
std::string_view ReduceOpName(ReduceOp op);

// dst[i] = a[i] op b[i] for i < n. dst may alias a or b. kAvg reduces like kSum (the caller
// divides once at the end with DivideInPlace). For I4, n counts elements and must be even.
void ReduceInto(DType dtype, ReduceOp op, void* dst, const void* a, const void* b, int64_t n);

// data[i] /= divisor (integers truncate toward zero).
void DivideInPlace(DType dtype, void* data, int64_t n, int divisor);

}  // namespace loom::comm
