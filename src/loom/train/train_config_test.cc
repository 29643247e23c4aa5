#include "loom/train/train_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace loom::train {
namespace {

TEST(TrainConfigTest, DefaultsResolveAndOverridesApply) {
  auto c = ResolveTrainConfig(nullptr, {"steps=7", "model.n_layers=2", "optim.lr=3e-4",
                                        "data.source=file", "data.path=/tmp/x.txt"},
                              2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps, 7);
  EXPECT_EQ(c->model.n_layers, 2);
  EXPECT_DOUBLE_EQ(c->optim.lr, 3e-4);
  EXPECT_EQ(c->AccumulationSteps(2), 1);
  EXPECT_EQ(c->data_path, "/tmp/x.txt");
  // Round trip through JSON gives the same config.
  nlohmann::json j = TrainConfigToJson(*c);
  auto again = ResolveTrainConfig(&j, {}, 2);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(TrainConfigToJson(*again), j);
}

TEST(TrainConfigTest, TraceStepsParseAndBadRangesAreRejected) {
  auto off = ResolveTrainConfig(nullptr, {}, 1);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->trace.enabled());
  auto c = ResolveTrainConfig(nullptr, {"trace.steps=20-40", "trace.dir=/tmp/t"}, 1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->trace.enabled());
  EXPECT_EQ(c->trace.first_step, 20);
  EXPECT_EQ(c->trace.last_step, 40);
  EXPECT_EQ(c->trace.dir, "/tmp/t");
  auto one = ResolveTrainConfig(nullptr, {"trace.steps=7"}, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->trace.first_step, 7);
  EXPECT_EQ(one->trace.last_step, 7);
  for (const char* bad : {"trace.steps=40-20", "trace.steps=0-3", "trace.steps=a-b",
                          "trace.steps=3-", "trace.steps=-3"}) {
    auto r = ResolveTrainConfig(nullptr, {bad}, 1);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.status().message()).find("trace.steps"), std::string::npos) << bad;
  }
  auto every = ResolveTrainConfig(nullptr, {"trace.steps=1-2", "trace.every=0"}, 1);
  ASSERT_FALSE(every.ok());
  EXPECT_NE(std::string(every.status().message()).find("trace.every"), std::string::npos);
}

TEST(TrainConfigTest, FileThenOverrides) {
  nlohmann::json file = nlohmann::json::parse(R"({"steps": 20, "batch": {"global": 32}})");
  auto c = ResolveTrainConfig(&file, {"steps=30"}, 2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps, 30);
  EXPECT_EQ(c->global_batch, 32);
  EXPECT_EQ(c->AccumulationSteps(2), 2);
}

TEST(TrainConfigTest, WorldSizeThatDoesNotDivideTheBatchIsNamed) {
  auto c = ResolveTrainConfig(nullptr, {"batch.global=16", "batch.micro=8"}, 3);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("batch.global"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("3 ranks"), std::string::npos) << c.status().message();
}

TEST(TrainConfigTest, BadValuesNameTheKey) {
  struct Case {
    std::vector<std::string> overrides;
    std::string expect;
  } cases[] = {
      {{"precision=fp16"}, "'precision': 'fp16' is not one of auto, bf16, fp32"},
      {{"dist.mode=zero3"}, "dist.mode"},
      {{"stepz=3"}, "unknown key 'stepz' (did you mean 'steps'?)"},
      {{"steps=0"}, "'steps': must be >= 1"},
      {{"model.d_model=100"}, "model.d_model (100) must be divisible by n_heads (6)"},
      {{"data.source=file"}, "data.path"},
      {{"optim.min_lr=1"}, "optim.min_lr"},
      {{"steps=ten"}, "expected an integer"},
  };
  for (const Case& k : cases) {
    auto c = ResolveTrainConfig(nullptr, k.overrides, 2);
    ASSERT_FALSE(c.ok()) << k.overrides[0];
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos)
        << k.overrides[0] << " -> " << c.status().message();
  }
  nlohmann::json file = nlohmann::json::parse(R"({"optim": {"learning_rate": 1}})");
  auto f = ResolveTrainConfig(&file, {}, 1);
  EXPECT_NE(f.status().message().find("config file: unknown key 'optim.learning_rate'"),
            std::string::npos)
      << f.status().message();
}

}  // namespace
}  // namespace loom::train
