#include "loom/base/tensor_view.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(TensorViewTest, ShapeStridesAndBytes) {
  float data[24];
  TensorView v(data, DType::kF32, {2, 3, 4});
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.nbytes(), 96);
  EXPECT_EQ(v.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.DebugString(), "F32[2, 3, 4]");
  TensorView t(data, DType::kF32, {4, 3}, {1, 4});  // a transpose
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_FALSE(CheckContiguous(t, "input").ok());
}

TEST(TensorViewTest, SliceOffsetsBytesByDType) {
  uint16_t data[10];
  TensorView v = TensorView::Flat(data, DType::kBF16, 10);
  TensorView s = v.Slice(4, 3);
  EXPECT_EQ(s.data(), static_cast<void*>(data + 4));
  EXPECT_EQ(s.numel(), 3);
  uint8_t packed[8];
  TensorView p = TensorView::Flat(packed, DType::kI4, 16);
  EXPECT_EQ(p.Slice(6, 4).data(), static_cast<void*>(packed + 3));
  EXPECT_EQ(p.Slice(6, 4).nbytes(), 2);
}

}  // namespace
}  // namespace loom
