#include "loom/ckpt/box.h"

#include <gtest/gtest.h>

#include <random>

namespace loom::ckpt {
namespace {

Shape RandomShape(std::mt19937& rng) {
  const int n = 1 + static_cast<int>(rng() % 4);
  Shape s(n);
  for (int64_t& d : s) d = 1 + static_cast<int64_t>(rng() % 6);
  return s;
}

Shape Strides(const Shape& shape) {
  Shape st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * shape[i + 1];
  return st;
}

// Flat indices of a box's elements in row-major box order.
std::vector<int64_t> Elements(const Box& b, const Shape& shape) {
  std::vector<int64_t> out;
  const Shape st = Strides(shape);
  Shape idx(b.ndim(), 0);
  if (b.Volume() == 0) return out;
  while (true) {
    int64_t f = 0;
    for (int j = 0; j < b.ndim(); ++j) f += (b.off[j] + idx[j]) * st[j];
    out.push_back(f);
    int j = b.ndim() - 1;
    while (j >= 0 && ++idx[j] == b.len[j]) idx[j--] = 0;
    if (j < 0) break;
  }
  return out;
}

TEST(DecomposeFlatRange, MatchesBruteForceElementMap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const Shape shape = RandomShape(rng);
    const int64_t n = NumElements(shape);
    int64_t b = static_cast<int64_t>(rng() % (n + 1)), e = static_cast<int64_t>(rng() % (n + 1));
    if (b > e) std::swap(b, e);
    const std::vector<Box> boxes = DecomposeFlatRange(shape, b, e);
    EXPECT_LE(static_cast<int>(boxes.size()), 2 * static_cast<int>(shape.size()) - 1);
    std::vector<int64_t> got;
    for (const Box& box : boxes) {
      ASSERT_TRUE(BoxInBounds(box, shape));
      std::vector<int64_t> el = Elements(box, shape);
      // Each box is contiguous in flat order.
      for (size_t i = 1; i < el.size(); ++i) ASSERT_EQ(el[i], el[i - 1] + 1);
      ASSERT_EQ(FlatOffset(box, shape), el.front());
      got.insert(got.end(), el.begin(), el.end());
    }
    ASSERT_EQ(static_cast<int64_t>(got.size()), e - b);
    for (int64_t i = 0; i < e - b; ++i) ASSERT_EQ(got[i], b + i);
  }
}

TEST(DecomposeFlatRange, ExampleAndScalar) {
  // [2, 3, 4] tensor, elements 5..19: the end of row (0,1), row (0,2), rows 1..?...
  auto boxes = DecomposeFlatRange({2, 3, 4}, 5, 19);
  ASSERT_EQ(boxes.size(), 4u);
  EXPECT_EQ(boxes[0].DebugString(), "[0:1, 1:2, 1:4]");
  EXPECT_EQ(boxes[1].DebugString(), "[0:1, 2:3, 0:4]");
  EXPECT_EQ(boxes[2].DebugString(), "[1:2, 0:1, 0:4]");
  EXPECT_EQ(boxes[3].DebugString(), "[1:2, 1:2, 0:3]");
  EXPECT_EQ(DecomposeFlatRange({}, 0, 1).size(), 1u);
  EXPECT_TRUE(DecomposeFlatRange({4, 4}, 3, 3).empty());
}

Box RandomBox(std::mt19937& rng, const Shape& shape) {
  Box b{Shape(shape.size()), Shape(shape.size())};
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t lo = static_cast<int64_t>(rng() % shape[i]);
    int64_t hi = lo + 1 + static_cast<int64_t>(rng() % (shape[i] - lo));
    b.off[i] = lo;
    b.len[i] = hi - lo;
  }
  return b;
}

TEST(ForEachRun, CopiesTheIntersectionExactly) {
  std::mt19937 rng(11);
  int nonempty = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const Shape shape = RandomShape(rng);
    const Box src = RandomBox(rng, shape), dst = RandomBox(rng, shape);
    auto x = Intersect(src, dst);
    // Brute force: which global elements are in both boxes.
    std::vector<int64_t> se = Elements(src, shape), de = Elements(dst, shape);
    std::vector<int64_t> dst_buf(de.size(), -1);
    if (!x) {
      for (int64_t f : se) ASSERT_EQ(std::count(de.begin(), de.end(), f), 0);
      continue;
    }
    ++nonempty;
    int64_t prev_src = -1;
    ForEachRun(src, dst, *x, [&](const ckpt::Run& r) {
      ASSERT_GT(r.src, prev_src);
      prev_src = r.src;
      for (int64_t k = 0; k < r.elems; ++k) dst_buf[r.dst + k] = se[r.src + k];
    });
    int64_t copied = 0;
    for (size_t i = 0; i < de.size(); ++i) {
      const bool in_src = std::count(se.begin(), se.end(), de[i]) > 0;
      if (in_src) {
        ASSERT_EQ(dst_buf[i], de[i]);
        ++copied;
      } else {
        ASSERT_EQ(dst_buf[i], -1);
      }
    }
    ASSERT_EQ(copied, x->Volume());
  }
  EXPECT_GT(nonempty, 1000);
}

TEST(ForEachRun, FullRowsMergeIntoOneRun) {
  Box src{{0, 0}, {8, 16}}, dst{{4, 0}, {4, 16}};
  int runs = 0;
  ForEachRun(src, dst, *Intersect(src, dst), [&](const ckpt::Run& r) {
    ++runs;
    EXPECT_EQ(r.src, 64);
    EXPECT_EQ(r.dst, 0);
    EXPECT_EQ(r.elems, 64);
  });
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace loom::ckpt
