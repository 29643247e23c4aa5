// Test helper: runs Debian's `promtool check metrics` on an exposition text. The tests fail (not
// skip) when promtool is missing: `scripts/setup` installs the `prometheus` package.
//
//   PromtoolResult r = PromtoolCheckMetrics(text);
//   EXPECT_TRUE(r.ok) << r.output;
#pragma once

#include <string>

namespace loom::monitor::testing {

struct PromtoolResult {
  bool found = false;  // promtool was on PATH
  bool ok = false;     // exit status 0 (valid and no lint problems)
  std::string output;  // its stdout + stderr
};

PromtoolResult PromtoolCheckMetrics(const std::string& text);

}  // namespace loom::monitor::testing
