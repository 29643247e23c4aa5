#include "loom/base/json_util.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace loom {
namespace {
using nlohmann::json;

json Defaults() {
  return json::parse(R"({"steps": 100, "lr": 0.001, "name": "x", "bf16": true,
                         "model": {"n_layers": 6, "d_model": 384}, "tags": []})");
}

TEST(JsonUtilTest, MergeStrictAcceptsKnownKeys) {
  json cfg = Defaults();
  ASSERT_TRUE(MergeStrict(&cfg, json::parse(R"({"steps": 5, "lr": 1, "model": {"n_layers": 2}})"),
                          "cfg.json").ok());
  EXPECT_EQ(cfg["steps"], 5);
  EXPECT_EQ(cfg["lr"], 1);
  EXPECT_EQ(cfg["model"]["n_layers"], 2);
  EXPECT_EQ(cfg["model"]["d_model"], 384);  // untouched
}

TEST(JsonUtilTest, MergeStrictRejectsUnknownKeyWithSuggestion) {
  json cfg = Defaults();
  Status s = MergeStrict(&cfg, json::parse(R"({"model": {"n_layer": 2}})"), "cfg.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cfg.json: unknown key 'model.n_layer'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("did you mean 'n_layers'"), std::string::npos) << s.message();
}

TEST(JsonUtilTest, MergeStrictRejectsWrongType) {
  json cfg = Defaults();
  Status s = MergeStrict(&cfg, json::parse(R"({"steps": "many"})"), "cfg.json");
  EXPECT_NE(s.message().find("key 'steps' expects integer, got string"), std::string::npos)
      << s.message();
  s = MergeStrict(&cfg, json::parse(R"({"steps": 1.5})"), "cfg.json");
  EXPECT_FALSE(s.ok());
}

TEST(JsonUtilTest, OverridesParseByType) {
  json cfg = Defaults();
  ASSERT_TRUE(ApplyOverride(&cfg, "steps=7").ok());
  ASSERT_TRUE(ApplyOverride(&cfg, "lr=3e-4").ok());
  ASSERT_TRUE(ApplyOverride(&cfg, "bf16=false").ok());
  ASSERT_TRUE(ApplyOverride(&cfg, "name=a=b").ok());
  ASSERT_TRUE(ApplyOverride(&cfg, "model.d_model=128").ok());
  ASSERT_TRUE(ApplyOverride(&cfg, "tags=[1,2]").ok());
  EXPECT_EQ(cfg["steps"], 7);
  EXPECT_DOUBLE_EQ(cfg["lr"].get<double>(), 3e-4);
  EXPECT_EQ(cfg["bf16"], false);
  EXPECT_EQ(cfg["name"], "a=b");
  EXPECT_EQ(cfg["model"]["d_model"], 128);
  EXPECT_EQ(cfg["tags"].size(), 2u);
}

TEST(JsonUtilTest, BadOverridesNameTheProblem) {
  json cfg = Defaults();
  EXPECT_NE(ApplyOverride(&cfg, "steps").message().find("expected dotted.key=value"),
            std::string::npos);
  EXPECT_NE(ApplyOverride(&cfg, "steps=abc").message().find("expected an integer"),
            std::string::npos);
  EXPECT_NE(ApplyOverride(&cfg, "model.layers=2").message().find("unknown key 'model.layers'"),
            std::string::npos);
  EXPECT_NE(ApplyOverride(&cfg, "steps.x=2").message().find("'steps' is not a section"),
            std::string::npos);
  EXPECT_NE(ApplyOverride(&cfg, "bf16=maybe").message().find("true or false"), std::string::npos);
}

TEST(JsonUtilTest, ParseErrorNamesSource) {
  auto r = ParseJson("{\"a\": }", "my.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("my.json: invalid JSON at byte"), std::string::npos);
}

}  // namespace
}  // namespace loom
