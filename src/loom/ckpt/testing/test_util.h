// Helpers shared by the ckpt tests: scratch directories and tensors with known contents.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loom/ckpt/box.h"

namespace loom::ckpt::testing {

// A fresh directory under the test temp dir, removed by the destructor.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> n{0};
    path_ = ::testing::TempDir() + "/loom_ckpt_" + std::to_string(::getpid()) + "_" +
            std::to_string(n++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Value of global element `flat` of tensor `salt` (distinct per tensor and element).
inline float GlobalValue(int salt, int64_t flat) {
  return static_cast<float>(salt * 100000 + flat) * 0.5f;
}

// The elements of box `b` of a tensor of `shape`, row-major over the box.
inline std::vector<float> BoxValues(int salt, const Box& b, const Shape& shape) {
  std::vector<float> out;
  if (b.Volume() == 0) return out;
  Shape st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * shape[i + 1];
  Shape idx(b.ndim(), 0);
  while (true) {
    int64_t f = 0;
    for (int j = 0; j < b.ndim(); ++j) f += (b.off[j] + idx[j]) * st[j];
    out.push_back(GlobalValue(salt, f));
    int j = b.ndim() - 1;
    while (j >= 0 && ++idx[j] == b.len[j]) idx[j--] = 0;
    if (j < 0) break;
  }
  return out;
}

inline std::vector<float> RangeValues(int salt, int64_t begin, int64_t end) {
  std::vector<float> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(GlobalValue(salt, i));
  return out;
}

// Rows [r0, r1) or columns, for TP-style splits of a 2-D tensor over `parts` (uneven allowed).
inline Box SplitBox(const Shape& shape, int dim, int part, int parts) {
  Box b = FullBox(shape);
  const int64_t n = shape[dim];
  const int64_t lo = n * part / parts, hi = n * (part + 1) / parts;
  b.off[dim] = lo;
  b.len[dim] = hi - lo;
  return b;
}

}  // namespace loom::ckpt::testing
