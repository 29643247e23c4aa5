// TensorView: a non-owning description of a tensor in memory (pointer, dtype, shape, strides).
//
// Framework-agnostic modules (comm, compress, ckpt, ...) take TensorViews instead of torch
// tensors. Strides are in elements; an empty stride vector means contiguous row-major. Packed
// dtypes (I4) must be contiguous. The caller keeps the memory alive while the view is used.
// Thread-safety: a value type; concurrent reads of the same memory are the caller's business.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/dtype.h"
#include "loom/base/status.h"

namespace loom {

class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, DType dtype, std::vector<int64_t> shape,
             std::vector<int64_t> strides = {});

  // A 1-D contiguous view of `numel` elements.
  static TensorView Flat(void* data, DType dtype, int64_t numel) {
    return TensorView(data, dtype, {numel});
  }
  template <typename T>
  static TensorView Of(T* data, int64_t numel);

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Strides in elements (computed for contiguous views).
  std::vector<int64_t> strides() const;
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  // Bytes spanned by the elements when contiguous (packed types round up).
  int64_t nbytes() const { return DTypeBytes(dtype_, numel()); }
  bool is_contiguous() const;

  // Elements [start, start+count) of a contiguous view, as a flat view.
  // Precondition: contiguous; for I4, start even.
  TensorView Slice(int64_t start, int64_t count) const;

  // "BF16[8, 256]".
  std::string DebugString() const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;  // empty: contiguous
};

namespace internal {
template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kF32; }
template <> constexpr DType DTypeOf<double>() { return DType::kF64; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kI64; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kI32; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kI8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kU8; }
}  // namespace internal

template <typename T>
TensorView TensorView::Of(T* data, int64_t numel) {
  return TensorView(const_cast<std::remove_const_t<T>*>(data),
                    internal::DTypeOf<std::remove_const_t<T>>(), {numel});
}

// Checks that a view is contiguous, non-null (unless empty) and, for I4, byte aligned.
Status CheckContiguous(const TensorView& v, const char* what);

}  // namespace loom
