// The conformance suite every Storage backend passes (instantiate it with a factory).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "loom/ckpt/storage.h"

namespace loom::ckpt::testing {

struct StorageFactory {
  std::string name;
  // Makes a backend and a fresh, existing root directory in it.
  std::function<std::unique_ptr<Storage>(std::string* root)> make;
};

class StorageConformance : public ::testing::TestWithParam<StorageFactory> {
 protected:
  void SetUp() override { storage_ = GetParam().make(&root_); }
  std::string P(const std::string& rel) const { return JoinPath(root_, rel); }
  std::unique_ptr<Storage> storage_;
  std::string root_;
};

}  // namespace loom::ckpt::testing
