#include "loom/base/env_params.h"

#include <gtest/gtest.h>

#include <set>

namespace loom {
namespace {

TEST(EnvParamsTest, MapLookupAndIntegers) {
  Env env = Env::FromMap({{"LOOM_RANK", "3"}, {"LOOM_WORLD_SIZE", "x4"}, {"EMPTY", ""}});
  EXPECT_EQ(*env.GetInt("LOOM_RANK"), 3);
  auto bad = env.GetInt("LOOM_WORLD_SIZE");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LOOM_WORLD_SIZE='x4' is not an integer"),
            std::string::npos);
  EXPECT_FALSE(env.Has("EMPTY"));
  EXPECT_EQ(*env.GetInt("MISSING", 9), 9);
  EXPECT_EQ(env.GetInt("MISSING").status().code(), StatusCode::kNotFound);
}

TEST(EnvParamsTest, TableHasUniqueDocumentedNames) {
  std::set<std::string_view> names;
  for (const EnvParam& p : KnownEnvParams()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.help.empty()) << p.name;
  }
  EXPECT_TRUE(names.count("LOOM_STORE"));
}

}  // namespace
}  // namespace loom
