// Boxes: the n-D rectangles a checkpoint is cut into, and the arithmetic on them.
//
// A tensor of global shape d[0..n-1] is saved as chunks; each chunk is a box (offset, length per
// dim) stored row-major and contiguous. Loading intersects the boxes a rank wants with the saved
// ones and copies the intersection run by run. A ZeRO-style flat range [begin, end) of a
// row-major tensor is not a box, but it is the concatenation of at most 2n-1 boxes, each a
// contiguous piece of the range (DecomposeFlatRange).
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loom::ckpt {

using Shape = std::vector<int64_t>;

struct Box {
  Shape off;
  Shape len;
  int ndim() const { return static_cast<int>(off.size()); }
  int64_t Volume() const;  // 1 for a 0-d box
  bool operator==(const Box& o) const { return off == o.off && len == o.len; }
  std::string DebugString() const;  // "[0:4, 8:16]"
};

// The whole tensor.
Box FullBox(const Shape& shape);
int64_t NumElements(const Shape& shape);

// Whether `b` lies inside a tensor of `shape` (and has its rank). Zero-length dims are allowed.
bool BoxInBounds(const Box& b, const Shape& shape);

// The common part of two boxes of equal rank, or nullopt if it is empty.
std::optional<Box> Intersect(const Box& a, const Box& b);

// Elements [begin, end) of a row-major tensor of `shape` as boxes in flat order; each box is a
// contiguous piece of the range, and consecutive boxes are adjacent. At most 2n-1 boxes.
std::vector<Box> DecomposeFlatRange(const Shape& shape, int64_t begin, int64_t end);

// Row-major flat index of the first element of `b` in a tensor of `shape`.
int64_t FlatOffset(const Box& b, const Shape& shape);

// One contiguous copy: `elems` elements starting at element `src` of the source box's row-major
// storage and at element `dst` of the destination box's.
struct Run {
  int64_t src = 0;
  int64_t dst = 0;
  int64_t elems = 0;
};

// Calls `fn` for every maximal run that copies region `x` from a row-major box `src` into a
// row-major box `dst`, in increasing source order. Precondition: x lies inside both.
void ForEachRun(const Box& src, const Box& dst, const Box& x,
                const std::function<void(const Run&)>& fn);

}  // namespace loom::ckpt
