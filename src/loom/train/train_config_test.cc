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
  EXPECT_EQ(c->sched, "batch");
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
      {{"sched=fifo"}, "'sched': 'fifo' is not one of batch, normal"},
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

TEST(TrainConfigTest, CompressModePsNeedsAnElementCodecAndZeroAllreduceMatchDistMode) {
  auto ps = ResolveTrainConfig(nullptr, {"dist.mode=allreduce", "compress.grad=int4:g128",
                                         "compress.mode=ps"}, 2);
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->compress.mode, "ps");
  EXPECT_EQ(ResolveTrainConfig(nullptr, {}, 2)->compress.mode, "auto");
  struct Case {
    std::vector<std::string> overrides;
    std::string expect;
  } cases[] = {
      {{"compress.mode=byteps"}, "'compress.mode': 'byteps' is not one of auto, zero, allreduce, ps"},
      {{"compress.mode=ps"}, "set compress.grad (or compress.plan)"},
      {{"compress.mode=ps", "compress.grad=powersgd:r2"}, "PowerSGD has its own all-reduce"},
      {{"compress.mode=zero", "dist.mode=allreduce"}, "needs dist.mode=zero1"},
      {{"compress.mode=allreduce"}, "allreduce needs dist.mode=allreduce"},
      {{"compress.mode=ps", "compress.grad=int4:g128", "compress.node_size=2"},
       "not PowerSGD nor compress.mode=ps"},
  };
  for (const Case& k : cases) {
    auto c = ResolveTrainConfig(nullptr, k.overrides, 2);
    ASSERT_FALSE(c.ok()) << k.overrides[0];
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos) << c.status().message();
  }
}

TEST(TrainConfigTest, TwoLevelNodeSizeAndSmallTensorBypassKeys) {
  auto tl = ResolveTrainConfig(nullptr, {"compress.grad=int4:g128:hadamard", "compress.node_size=2",
                                         "compress.min_elements=1024"}, 2);
  ASSERT_TRUE(tl.ok()) << tl.status();
  EXPECT_EQ(tl->compress.node_size, 2);
  EXPECT_EQ(tl->compress.grad_intra, "int8:g128");
  EXPECT_EQ(tl->compress.min_elements, 1024);
  EXPECT_EQ(ResolveTrainConfig(nullptr, {}, 2)->compress.min_elements, 65536);
  struct Case {
    std::vector<std::string> overrides;
    std::string expect;
  } cases[] = {
      {{"compress.grad=int4:g128", "compress.node_size=3"},
       "'compress.node_size': must divide the world size 2"},
      {{"compress.node_size=2"}, "two-level quantization needs an element codec"},
      {{"compress.grad=powersgd:r2", "compress.node_size=2"}, "not PowerSGD"},
      {{"compress.grad=int4:g128", "compress.grad_intra=int9"}, "compress.grad_intra"},
      {{"compress.min_elements=-1"}, "'compress.min_elements': must be >= 0"},
  };
  for (const Case& k : cases) {
    auto c = ResolveTrainConfig(nullptr, k.overrides, 2);
    ASSERT_FALSE(c.ok()) << k.overrides.back();
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos) << c.status().message();
  }
}

TEST(TrainConfigTest, CompressNesterovNeedsACodecAndAMuBelowOne) {
  auto c = ResolveTrainConfig(nullptr, {"compress.grad=qsgd:s16", "compress.nesterov=0.9"}, 2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->compress.nesterov, 0.9);
  EXPECT_EQ(ResolveTrainConfig(nullptr, {}, 2)->compress.nesterov, 0.0);
  auto above = ResolveTrainConfig(nullptr, {"compress.grad=int8", "compress.nesterov=1"}, 2);
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.status().message().find("'compress.nesterov': must be in [0, 1)"),
            std::string::npos)
      << above.status().message();
  auto alone = ResolveTrainConfig(nullptr, {"compress.nesterov=0.5"}, 2);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("set compress.grad"), std::string::npos)
      << alone.status().message();
}

}  // namespace
}  // namespace loom::train
