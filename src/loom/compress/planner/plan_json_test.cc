#include "loom/compress/planner/plan_json.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "loom/compress/planner/espresso.h"
#include "loom/compress/planner/planner_test_util.h"

namespace loom::compress::planner {
namespace {

CompressionPlan SamplePlan() {
  BackwardProfile p{
      {{"h.1.mlp", 4 << 20, 0.003}, {"h.1.bias", 1024, 0.003}, {"h.0.mlp", 4 << 20, 0.006}}, 0.007};
  Result<TimelineSimulator> sim = TimelineSimulator::Create(p, testing::RealisticModel(8e-9));
  EXPECT_TRUE(sim.ok()) << sim.status();
  Result<PlanReport> r = EspressoPlan(*sim);
  EXPECT_TRUE(r.ok()) << r.status();
  Result<CompressionPlan> plan = MakeCompressionPlan(*sim, r->plan, r->plan_s, r->uncompressed_s);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return std::move(*plan);
}

TEST(PlanJson, MakeUsesCanonicalSpecsAndTheModelsLink) {
  CompressionPlan p = SamplePlan();
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.link.beta_s_per_byte, 8e-9);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].name, "h.1.mlp");
  EXPECT_EQ(p.tensors[0].elements, 4 << 20);
  EXPECT_NE(p.tensors[0].codec, "none");  // slow link: the large tensors are compressed
  EXPECT_NE(p.tensors[0].codec.find(':'), std::string::npos) << p.tensors[0].codec;
  EXPECT_LT(p.predicted_iteration_s, p.baseline_uncompressed_s);
}

TEST(PlanJson, RoundTrip) {
  CompressionPlan p = SamplePlan();
  p.tensors[1].encode_on = Placement::kOffload;
  p.tensors[1].codec = "int4:g128:stochastic:hadamard";
  p.tensors[2].encode_on = Placement::kLink;
  p.tensors[2].codec = "int8:g128:stochastic";
  const std::string text = CompressionPlanToJson(p);
  EXPECT_NE(text.find(R"("encode_on": "link")"), std::string::npos) << text;
  Result<CompressionPlan> back = CompressionPlanFromJson(text, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->world_size, p.world_size);
  EXPECT_EQ(back->link.name, p.link.name);
  EXPECT_EQ(back->link.alpha_s, p.link.alpha_s);
  EXPECT_EQ(back->tensors, p.tensors);
  EXPECT_EQ(back->tensors[2].encode_on, Placement::kLink);
  EXPECT_EQ(back->tensors[1].encode_on, Placement::kOffload);
  EXPECT_EQ(back->predicted_iteration_s, p.predicted_iteration_s);
  EXPECT_EQ(back->baseline_uncompressed_s, p.baseline_uncompressed_s);
  EXPECT_EQ(CompressionPlanToJson(*back), text);

  const std::string dir = ::testing::TempDir();
  ASSERT_TRUE(SaveCompressionPlan(dir + "/plan.json", p).ok());
  Result<CompressionPlan> file = LoadCompressionPlan(dir + "/plan.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->tensors, p.tensors);
  EXPECT_EQ(LoadCompressionPlan(dir + "/missing.json").status().code(), StatusCode::kNotFound);
}

TEST(PlanJson, LinkOnlyPlanWritesLinkForCompressedTensors) {
  BackwardProfile p{
      {{"h.1.mlp", 4 << 20, 0.003}, {"h.1.bias", 1024, 0.003}, {"h.0.mlp", 4 << 20, 0.006}}, 0.007};
  Result<TimelineSimulator> sim = TimelineSimulator::Create(p, testing::RealisticModel(8e-9));
  ASSERT_TRUE(sim.ok()) << sim.status();
  EspressoOptions o;
  o.placements = {Placement::kLink};
  Result<PlanReport> r = EspressoPlan(*sim, o);
  ASSERT_TRUE(r.ok()) << r.status();
  Result<CompressionPlan> plan = MakeCompressionPlan(*sim, r->plan, r->plan_s, r->uncompressed_s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const PlannedTensor& t : plan->tensors) {
    EXPECT_EQ(t.encode_on, t.codec == "none" ? Placement::kCompute : Placement::kLink) << t.name;
  }
  EXPECT_NE(plan->tensors[0].codec, "none");
  EXPECT_NE(plan->tensors[2].codec, "none");
  Result<CompressionPlan> back = CompressionPlanFromJson(CompressionPlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tensors, plan->tensors);
  EXPECT_STREQ(PlacementName(Placement::kLink), "link");
}

std::string Error(const std::string& text) {
  Result<CompressionPlan> r = CompressionPlanFromJson(text, "plan.json");
  EXPECT_FALSE(r.ok()) << text;
  return r.status().message();
}

std::string WithTensor(const std::string& tensor, const std::string& version = "1") {
  return R"({"version": )" + version + R"(, "world_size": 2,
      "link": {"name": "dp", "alpha_s": 0, "beta_s_per_byte": 1e-9},
      "tensors": [{"name": "a", "elements": 8, "codec": "fp16", "encode_on": "compute"}, )" +
         tensor + R"(], "predicted_iteration_s": 1, "baseline_uncompressed_s": 2})";
}

TEST(PlanJson, MalformedPlansNameTheFieldAndTensor) {
  const std::string ok = R"({"name": "b", "elements": 8, "codec": "int8", "encode_on": "offload"})";
  ASSERT_TRUE(CompressionPlanFromJson(WithTensor(ok), "plan.json").ok());
  auto has = [](const std::string& msg, const std::string& want) {
    EXPECT_NE(msg.find(want), std::string::npos) << msg << " lacks " << want;
  };
  has(Error(WithTensor(ok, "2")), "unsupported \"version\" 2");
  has(Error(WithTensor(R"({"name": "b", "elements": 8, "codec": "int3", "encode_on": "compute"})")),
      "tensors[1] 'b': codec 'int3'");
  has(Error(WithTensor(R"({"name": "b", "elements": 0, "codec": "int8", "encode_on": "compute"})")),
      "tensors[1] 'b': \"elements\" must be > 0");
  ASSERT_TRUE(
      CompressionPlanFromJson(
          WithTensor(R"({"name": "b", "elements": 8, "codec": "int8", "encode_on": "link"})"),
          "plan.json")
          .ok());
  has(Error(WithTensor(R"({"name": "b", "elements": 8, "codec": "int8", "encode_on": "gpu"})")),
      "tensors[1] 'b': \"encode_on\" must be \"compute\", \"offload\" or \"link\", got \"gpu\"");
  has(Error(WithTensor(R"({"name": "b", "elements": 8, "codec": "int8", "encode_on": "Link"})")),
      "got \"Link\"");
  has(Error(WithTensor(R"({"name": "b", "elements": 8, "codec": "int8"})")),
      "tensors[1] 'b': missing field \"encode_on\"");
  has(Error(WithTensor(R"({"name": "a", "elements": 8, "codec": "int8", "encode_on": "compute"})")),
      "duplicate tensor name");
  has(Error(
          WithTensor(R"({"name": "b", "elements": "8", "codec": "int8", "encode_on": "compute"})")),
      "\"elements\" must be an integer");
  has(Error(WithTensor(
          R"({"name": "b", "elements": 8, "codec": "int8", "encode_on": "compute", "ef": 1})")),
      "unknown field \"ef\"");
  has(Error(R"({"version": 1, "world_size": 0})"), "world_size");
  has(Error(R"({"version": 1, "world_size": 2, "link": [], "tensors": []})"),
      "\"link\" must be an object");
  has(Error("{\"version\": 1,"), "plan.json");  // truncated JSON
}

TEST(PlanJson, CheckPlanMatchesNamesTheFirstMismatch) {
  CompressionPlan p = SamplePlan();
  std::vector<TensorInfo> model = {
      {"h.1.mlp", 4 << 20, 0}, {"h.1.bias", 1024, 0}, {"h.0.mlp", 4 << 20, 0}};
  EXPECT_TRUE(CheckPlanMatches(p, model, 4).ok());
  EXPECT_EQ(CheckPlanMatches(p, model, 8).code(), StatusCode::kFailedPrecondition);
  model[1].elements = 2048;
  Status s = CheckPlanMatches(p, model, 4);
  EXPECT_NE(s.message().find("tensor 1 is 'h.1.bias' (1024 elements)"), std::string::npos) << s;
  model.pop_back();
  EXPECT_FALSE(CheckPlanMatches(p, model, 4).ok());
}

}  // namespace
}  // namespace loom::compress::planner
