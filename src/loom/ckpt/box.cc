#include "loom/ckpt/box.h"

#include <algorithm>

#include "loom/base/check.h"

namespace loom::ckpt {

int64_t Box::Volume() const {
  int64_t v = 1;
  for (int64_t l : len) v *= l;
  return v;
}

std::string Box::DebugString() const {
  std::string s = "[";
  for (int i = 0; i < ndim(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(off[i]) + ":" + std::to_string(off[i] + len[i]);
  }
  return s + "]";
}

Box FullBox(const Shape& shape) { return Box{Shape(shape.size(), 0), shape}; }

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool BoxInBounds(const Box& b, const Shape& shape) {
  if (b.off.size() != shape.size() || b.len.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (b.off[i] < 0 || b.len[i] < 0 || b.off[i] + b.len[i] > shape[i]) return false;
  }
  return true;
}

std::optional<Box> Intersect(const Box& a, const Box& b) {
  LOOM_CHECK(a.ndim() == b.ndim());
  Box x{Shape(a.ndim()), Shape(a.ndim())};
  for (int i = 0; i < a.ndim(); ++i) {
    const int64_t lo = std::max(a.off[i], b.off[i]);
    const int64_t hi = std::min(a.off[i] + a.len[i], b.off[i] + b.len[i]);
    if (lo >= hi) return std::nullopt;
    x.off[i] = lo;
    x.len[i] = hi - lo;
  }
  return x;
}

namespace {

// Elements [b, e) of the sub-tensor shape[dim..] whose leading indices are `base` (dims < dim).
void DecomposeFrom(const Shape& shape, size_t dim, int64_t b, int64_t e, Shape& base,
                   std::vector<Box>& out) {
  if (b >= e) return;
  const size_t n = shape.size();
  auto push = [&](int64_t row0, int64_t rows) {
    Box box{base, Shape(base.size(), 1)};
    box.off.push_back(row0);
    box.len.push_back(rows);
    for (size_t j = dim + 1; j < n; ++j) {
      box.off.push_back(0);
      box.len.push_back(shape[j]);
    }
    out.push_back(std::move(box));
  };
  int64_t inner = 1;
  for (size_t j = dim + 1; j < n; ++j) inner *= shape[j];
  if (dim + 1 == n || inner == 0) {
    if (inner == 0) return;
    push(b, e - b);
    return;
  }
  auto recurse = [&](int64_t row, int64_t sb, int64_t se) {
    base.push_back(row);
    DecomposeFrom(shape, dim + 1, sb, se, base, out);
    base.pop_back();
  };
  if (b % inner != 0) {  // head: the tail end of one row
    const int64_t row = b / inner;
    const int64_t head_end = std::min(e, (row + 1) * inner);
    recurse(row, b - row * inner, head_end - row * inner);
    b = head_end;
    if (b >= e) return;
  }
  const int64_t r0 = b / inner, r1 = e / inner;
  if (r1 > r0) push(r0, r1 - r0);  // middle: whole rows
  if (e % inner != 0) recurse(r1, 0, e - r1 * inner);  // tail: the start of one row
}

Shape Strides(const Shape& len) {
  Shape s(len.size(), 1);
  for (int i = static_cast<int>(len.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * len[i + 1];
  return s;
}

}  // namespace

std::vector<Box> DecomposeFlatRange(const Shape& shape, int64_t begin, int64_t end) {
  std::vector<Box> out;
  if (shape.empty()) {
    if (begin < end) out.push_back(Box{});
    return out;
  }
  Shape base;
  DecomposeFrom(shape, 0, begin, end, base, out);
  return out;
}

int64_t FlatOffset(const Box& b, const Shape& shape) {
  const Shape st = Strides(shape);
  int64_t f = 0;
  for (size_t i = 0; i < shape.size(); ++i) f += b.off[i] * st[i];
  return f;
}

void ForEachRun(const Box& src, const Box& dst, const Box& x,
                const std::function<void(const Run&)>& fn) {
  const int n = x.ndim();
  if (n == 0) {
    fn(Run{0, 0, 1});
    return;
  }
  // Dims after k are copied whole in both boxes, so a run spans dim k and everything inside it.
  int k = n - 1;
  auto full = [&](int j) { return x.len[j] == src.len[j] && x.len[j] == dst.len[j]; };
  while (k > 0 && full(k)) --k;
  int64_t run = 1;
  for (int j = k; j < n; ++j) run *= x.len[j];
  if (run == 0) return;
  const Shape ss = Strides(src.len), ds = Strides(dst.len);
  int64_t s0 = 0, d0 = 0;
  for (int j = 0; j < n; ++j) {
    s0 += (x.off[j] - src.off[j]) * ss[j];
    d0 += (x.off[j] - dst.off[j]) * ds[j];
  }
  // Odometer over the outer dims [0, k).
  Shape idx(k, 0);
  while (true) {
    int64_t s = s0, d = d0;
    for (int j = 0; j < k; ++j) {
      s += idx[j] * ss[j];
      d += idx[j] * ds[j];
    }
    fn(Run{s, d, run});
    int j = k - 1;
    while (j >= 0 && ++idx[j] == x.len[j]) idx[j--] = 0;
    if (j < 0) return;
  }
}

}  // namespace loom::ckpt
