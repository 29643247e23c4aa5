#include "loom/base/tensor_view.h"

#include <sstream>

#include "loom/base/check.h"

namespace loom {

TensorView::TensorView(void* data, DType dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> strides)
    : data_(data), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)) {
  LOOM_CHECK(strides_.empty() || strides_.size() == shape_.size())
      << "shape has " << shape_.size() << " dims but strides has " << strides_.size();
}

std::vector<int64_t> TensorView::strides() const {
  if (!strides_.empty()) return strides_;
  std::vector<int64_t> s(shape_.size());
  int64_t acc = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape_[i];
  }
  return s;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool TensorView::is_contiguous() const {
  if (strides_.empty()) return true;
  int64_t acc = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

TensorView TensorView::Slice(int64_t start, int64_t count) const {
  LOOM_CHECK(is_contiguous()) << "Slice of a non-contiguous view " << DebugString();
  LOOM_CHECK(start >= 0 && count >= 0 && start + count <= numel())
      << "Slice [" << start << ", " << start + count << ") of " << DebugString();
  LOOM_CHECK(dtype_ != DType::kI4 || start % 2 == 0) << "I4 slice must start at an even element";
  char* base = static_cast<char*>(data_);
  return TensorView(base + DTypeBytes(dtype_, start), dtype_, {count});
}

std::string TensorView::DebugString() const {
  std::ostringstream os;
  os << DTypeName(dtype_) << '[';
  for (int i = 0; i < ndim(); ++i) os << (i ? ", " : "") << shape_[i];
  os << ']';
  return os.str();
}

Status CheckContiguous(const TensorView& v, const char* what) {
  if (!v.is_contiguous()) {
    return InvalidArgumentError(std::string(what) + " must be contiguous, got " + v.DebugString());
  }
  if (v.data() == nullptr && v.numel() > 0) {
    return InvalidArgumentError(std::string(what) + " has a null data pointer");
  }
  return OkStatus();
}

}  // namespace loom
