#include "loom/compress/planner/timeline.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "loom/compress/planner/cost_model.h"
#include "loom/compress/planner/planner_test_util.h"

namespace loom::compress::planner {
namespace {

using testing::Codec;
constexpr double kEps = 1e-12;

// P = 2, alpha = 0, 1 s per 10^6 fp32 elements all-reduced (4 MB at 4 MB/s, factor 2(P-1)/P = 1).
CostModel HandModel() {
  CostModel m;
  m.world_size = 2;
  m.links = {LinkModel{"dp", 0, 0.25e-6}};
  m.codecs = {Codec("none", 32, true, {}, {}), Codec("fp16", 16, true, {0.1, 0}, {0.2, 0}),
              Codec("int8:g128", 8, false, {0, 1e-7}, {0, 0.5e-7})};
  return m;
}

TimelineSimulator Sim(const BackwardProfile& p, const CostModel& m) {
  Result<TimelineSimulator> s = TimelineSimulator::Create(p, m);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(CostModel, FitLinearRecoversLineAndClampsNegatives) {
  std::vector<std::pair<double, double>> line = {
      {1e3, 1e-5 + 2e-9 * 1e3}, {1e5, 1e-5 + 2e-9 * 1e5}, {1e6, 1e-5 + 2e-9 * 1e6}};
  Result<LinearCost> c = FitLinear(line);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NEAR(c->a_s, 1e-5, 1e-12);
  EXPECT_NEAR(c->b_s, 2e-9, 1e-16);
  // Points below a line through the origin: the intercept would be negative.
  std::vector<std::pair<double, double>> neg = {{1, 0}, {2, 3}, {3, 6}};
  c = FitLinear(neg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->a_s, 0);
  EXPECT_NEAR(c->b_s, (2 * 3 + 3 * 6) / 14.0, 1e-12);
  std::vector<std::pair<double, double>> same = {{5, 1}, {5, 2}};
  EXPECT_EQ(FitLinear(same).status().code(), StatusCode::kInvalidArgument);
}

TEST(CostModel, CodecCostForReadsTheCodec) {
  Result<CodecCost> c = CodecCostFor("int4:g128", {}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->bits_per_element, 4.25);  // 4 bits + one fp32 scale per 128
  EXPECT_FALSE(c->summable);
  EXPECT_FALSE(c->error_feedback);
  c = CodecCostFor("fp16", {}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->bits_per_element, 16);
  EXPECT_TRUE(c->summable);
  c = CodecCostFor("sign", {}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->error_feedback);
  EXPECT_FALSE(CodecCostFor("powersgd:r4", {}, {}).ok());  // bits must be given
  c = CodecCostFor("powersgd:r4", {}, {}, 0.5);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->bits_per_element, 0.5);
  EXPECT_FALSE(CodecCostFor("int3", {}, {}).ok());
}

TEST(CostModel, LinkSecondsFollowsTheCollective) {
  CostModel m = HandModel();
  m.world_size = 4;
  m.links[0].alpha_s = 0.01;
  const CodecCost& none = m.codecs[0];
  const CodecCost& int8 = m.codecs[2];
  // all-reduce: 2 alpha + beta * 2 * 3/4 * 4n
  EXPECT_NEAR(m.LinkSeconds(none, 1e6), 0.02 + 0.25e-6 * 1.5 * 4e6, kEps);
  // non-summable: + 3 decode-adds of n/4 + one encode of n/4
  EXPECT_NEAR(m.LinkSeconds(int8, 1e6),
              0.02 + 0.25e-6 * 1.5 * 1e6 + 3 * 0.5e-7 * 2.5e5 + 1e-7 * 2.5e5, kEps);
  EXPECT_NEAR(m.FinalDecodeSeconds(int8, 1e6), 0.05, kEps);
  m.collective = GradCollective::kReduceScatter;
  EXPECT_NEAR(m.LinkSeconds(none, 1e6), 0.01 + 0.25e-6 * 0.75 * 4e6, kEps);
  EXPECT_NEAR(m.FinalDecodeSeconds(int8, 1e6), 3 * 0.5e-7 * 2.5e5, kEps);
  m.world_size = 1;
  EXPECT_EQ(m.LinkSeconds(none, 1e6), 0);
}

TEST(CostModel, JsonRoundTripAndErrors) {
  CostModel m = testing::RealisticModel(8e-9);
  m.collective = GradCollective::kReduceScatter;
  Result<CostModel> back = LoadCostModelJson(SaveCostModelJson(m), "costs.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->world_size, 4);
  EXPECT_EQ(back->collective, GradCollective::kReduceScatter);
  EXPECT_EQ(back->links[0].beta_s_per_byte, 8e-9);
  ASSERT_EQ(back->codecs.size(), m.codecs.size());
  EXPECT_EQ(back->codecs[2].spec, "int8:g128");
  EXPECT_EQ(back->codecs[2].encode.b_s, 7e-9);
  EXPECT_FALSE(back->codecs[2].summable);
  EXPECT_EQ(SaveCostModelJson(*back), SaveCostModelJson(m));

  auto error = [](const char* text) {
    return LoadCostModelJson(text, "c.json").status().message();
  };
  EXPECT_NE(error(R"({"world_size": 2, "collective": "ring", "links": [], "codecs": []})")
                .find("collective"),
            std::string::npos);
  EXPECT_NE(error(R"({"world_size": 2, "collective": "allreduce", "links": [{"name": "dp",
      "alpha_s": 0, "beta_s_per_byte": 1e-9}], "codecs": [{"spec": "int8", "encode":
      {"a_s": 0, "b_s": -1}}]})")
                .find("b_s"),
            std::string::npos);
  EXPECT_NE(error(R"({"world_size": 2, "collective": "allreduce", "links": [{"name": "dp",
      "alpha_s": 0, "beta_s_per_byte": 1e-9}], "codecs": []})")
                .find("\"none\""),
            std::string::npos);
  EXPECT_NE(error(R"({"world_size": 2, "colective": 1})").find("unknown field \"colective\""),
            std::string::npos);
}

TEST(Timeline, TwoTensorsUncompressedQueueOnTheLink) {
  BackwardProfile p{{{"a", 1'000'000, 1.0}, {"b", 2'000'000, 1.5}}, 2.0};
  TimelineSimulator sim = Sim(p, HandModel());
  Result<Timeline> t = sim.Run(std::vector<TensorStrategy>(2));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->tensors[0].comm_start_s, 1.0, kEps);
  EXPECT_NEAR(t->tensors[0].comm_end_s, 2.0, kEps);
  EXPECT_NEAR(t->tensors[1].comm_start_s, 2.0, kEps);  // waits for the link
  EXPECT_NEAR(t->tensors[1].comm_end_s, 4.0, kEps);
  EXPECT_NEAR(t->backward_end_s, 2.0, kEps);
  EXPECT_NEAR(t->iteration_s, 4.0, kEps);
}

TEST(Timeline, ComputeStreamEncodeDelaysLaterTensorsAndDecodesAfterBackward) {
  BackwardProfile p{{{"a", 1'000'000, 1.0}, {"b", 2'000'000, 1.5}}, 2.0};
  TimelineSimulator sim = Sim(p, HandModel());
  std::vector<TensorStrategy> plan = {{1, Placement::kCompute}, {0, Placement::kCompute}};
  Result<Timeline> t = sim.Run(plan);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->tensors[0].encode_end_s, 1.1, kEps);  // fp16 encode 0.1 s on compute
  EXPECT_NEAR(t->tensors[0].comm_end_s, 1.6, kEps);    // half the bytes: 0.5 s
  EXPECT_NEAR(t->tensors[1].ready_s, 1.6, kEps);       // backward shifted by 0.1 s
  EXPECT_NEAR(t->tensors[1].comm_end_s, 3.6, kEps);
  EXPECT_NEAR(t->backward_end_s, 2.1, kEps);
  EXPECT_NEAR(t->tensors[0].decode_start_s, 2.1, kEps);  // after backward
  EXPECT_NEAR(t->tensors[0].decode_end_s, 2.3, kEps);
  EXPECT_NEAR(t->iteration_s, 3.6, kEps);
  EXPECT_NEAR(sim.IterationSeconds(plan), 3.6, kEps);
}

TEST(Timeline, OffloadWorkerServesJobsInArrivalOrder) {
  // b is ready at 1.7, after a's decode arrives (1.6): the worker decodes a first.
  BackwardProfile p{{{"a", 1'000'000, 1.0}, {"b", 2'000'000, 1.7}}, 2.0};
  TimelineSimulator sim = Sim(p, HandModel());
  std::vector<TensorStrategy> plan = {{1, Placement::kOffload}, {1, Placement::kOffload}};
  Result<Timeline> t = sim.Run(plan);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->tensors[0].encode_end_s, 1.1, kEps);
  EXPECT_NEAR(t->tensors[0].comm_end_s, 1.6, kEps);
  EXPECT_NEAR(t->tensors[0].decode_end_s, 1.8, kEps);
  EXPECT_NEAR(t->tensors[1].ready_s, 1.7, kEps);  // not delayed: nothing ran on compute
  EXPECT_NEAR(t->tensors[1].encode_start_s, 1.8, kEps);
  EXPECT_NEAR(t->tensors[1].comm_start_s, 1.9, kEps);
  EXPECT_NEAR(t->tensors[1].comm_end_s, 2.9, kEps);
  EXPECT_NEAR(t->tensors[1].decode_end_s, 3.1, kEps);
  EXPECT_NEAR(t->backward_end_s, 2.0, kEps);
  EXPECT_NEAR(t->iteration_s, 3.1, kEps);
}

TEST(Timeline, ThreeTensorsMixedStrategies) {
  // int8 on P = 2: link = beta * n bytes + decode(n/2) + encode(n/2); final decode(n).
  BackwardProfile p{{{"a", 1'000'000, 0.5}, {"b", 1'000'000, 0.6}, {"c", 2'000'000, 1.0}}, 1.2};
  TimelineSimulator sim = Sim(p, HandModel());
  std::vector<TensorStrategy> plan = {
      {0, Placement::kCompute}, {2, Placement::kCompute}, {2, Placement::kOffload}};
  Result<Timeline> t = sim.Run(plan);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->tensors[0].comm_end_s, 1.5, kEps);
  EXPECT_NEAR(t->tensors[1].encode_end_s, 0.7, kEps);
  EXPECT_NEAR(t->tensors[1].comm_start_s, 1.5, kEps);
  EXPECT_NEAR(t->tensors[1].comm_end_s, 1.825, kEps);  // 0.25 + 0.025 + 0.05
  EXPECT_NEAR(t->tensors[2].ready_s, 1.1, kEps);
  EXPECT_NEAR(t->tensors[2].encode_end_s, 1.3, kEps);  // offload, 0.2 s
  EXPECT_NEAR(t->tensors[2].comm_end_s, 2.475, kEps);  // 1.825 + 0.5 + 0.05 + 0.1
  EXPECT_NEAR(t->tensors[2].decode_end_s, 2.575, kEps);
  EXPECT_NEAR(t->backward_end_s, 1.3, kEps);
  EXPECT_NEAR(t->tensors[1].decode_start_s, 1.825, kEps);
  EXPECT_NEAR(t->tensors[1].decode_end_s, 1.875, kEps);
  EXPECT_NEAR(t->iteration_s, 2.575, kEps);
}

TEST(Timeline, LinkPlacementSerializesEncodeTransferDecodeOnTheLink) {
  // a: int8 on P = 2, link = 0.25 + decode-add(n/2) 0.025 + encode(n/2) 0.05 = 0.325 s, encode
  // 0.1 s, final decode 0.05 s. b: fp16, encode 0.1 s, 2e6 x 2 bytes = 1 s, decode 0.2 s.
  BackwardProfile p{{{"a", 1'000'000, 1.0}, {"b", 2'000'000, 1.3}}, 2.0};
  TimelineSimulator sim = Sim(p, HandModel());
  std::vector<TensorStrategy> plan = {{2, Placement::kLink}, {1, Placement::kLink}};
  Result<Timeline> t = sim.Run(plan);
  ASSERT_TRUE(t.ok()) << t.status();
  const TensorTimes& a = t->tensors[0];
  EXPECT_NEAR(a.ready_s, 1.0, kEps);
  EXPECT_NEAR(a.link_start_s, 1.0, kEps);
  EXPECT_NEAR(a.encode_start_s, 1.0, kEps);
  EXPECT_NEAR(a.encode_end_s, 1.1, kEps);
  EXPECT_NEAR(a.comm_start_s, 1.1, kEps);
  EXPECT_NEAR(a.comm_end_s, 1.425, kEps);
  EXPECT_NEAR(a.decode_start_s, 1.425, kEps);  // before backward ends: not on compute
  EXPECT_NEAR(a.decode_end_s, 1.475, kEps);
  EXPECT_NEAR(a.link_end_s, 1.475, kEps);
  const TensorTimes& b = t->tensors[1];
  EXPECT_NEAR(b.ready_s, 1.3, kEps);  // a's encode did not delay backward
  EXPECT_NEAR(b.link_ready_s, 1.3, kEps);
  EXPECT_NEAR(b.link_start_s, 1.475, kEps);  // waits for a's decode on the link thread
  EXPECT_NEAR(b.encode_end_s, 1.575, kEps);
  EXPECT_NEAR(b.comm_end_s, 2.575, kEps);
  EXPECT_NEAR(b.decode_end_s, 2.775, kEps);
  EXPECT_NEAR(b.link_end_s, 2.775, kEps);
  EXPECT_NEAR(t->backward_end_s, 2.0, kEps);
  EXPECT_NEAR(t->iteration_s, 2.775, kEps);
  EXPECT_NEAR(sim.IterationSeconds(plan), 2.775, kEps);

  // b uncompressed behind a on the link: 1 s per 10^6 fp32 elements.
  plan[1] = {0, Placement::kLink};
  t = sim.Run(plan);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->tensors[1].comm_start_s, 1.475, kEps);
  EXPECT_NEAR(t->tensors[1].decode_end_s, 3.475, kEps);
  EXPECT_NEAR(t->iteration_s, 3.475, kEps);

  // b offloaded: the worker is idle (a's encode ran on the link thread), so b encodes at once
  // and then waits for the link.
  plan[1] = {1, Placement::kOffload};
  t = sim.Run(plan);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->tensors[1].encode_start_s, 1.3, kEps);
  EXPECT_NEAR(t->tensors[1].encode_end_s, 1.4, kEps);
  EXPECT_NEAR(t->tensors[1].link_ready_s, 1.4, kEps);
  EXPECT_NEAR(t->tensors[1].comm_start_s, 1.475, kEps);
  EXPECT_NEAR(t->tensors[1].comm_end_s, 2.475, kEps);
  EXPECT_NEAR(t->tensors[1].decode_end_s, 2.675, kEps);
  EXPECT_NEAR(t->iteration_s, 2.675, kEps);

  // The same codecs on the compute stream, for contrast: both encodes shift backward (b ready at
  // 1.4, encoded at 1.5, backward ends at 2.2); a's decode waits for backward; b's transfer ends
  // at 2.5, its decode at 2.7.
  plan = {{2, Placement::kCompute}, {1, Placement::kCompute}};
  t = sim.Run(plan);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->tensors[0].decode_start_s, 2.2, kEps);
  EXPECT_NEAR(t->tensors[1].comm_start_s, 1.5, kEps);
  EXPECT_NEAR(t->tensors[1].decode_end_s, 2.7, kEps);
  EXPECT_NEAR(t->iteration_s, 2.7, kEps);
}

TEST(Timeline, RejectsBadInputs) {
  CostModel m = HandModel();
  BackwardProfile unordered{{{"a", 10, 1.0}, {"b", 10, 0.5}}, 2.0};
  Result<TimelineSimulator> s = TimelineSimulator::Create(unordered, m);
  EXPECT_NE(s.status().message().find("'b'"), std::string::npos) << s.status();
  BackwardProfile early_end{{{"a", 10, 1.0}}, 0.5};
  EXPECT_FALSE(TimelineSimulator::Create(early_end, m).ok());
  BackwardProfile dup{{{"a", 10, 1.0}, {"a", 10, 1.0}}, 2.0};
  EXPECT_FALSE(TimelineSimulator::Create(dup, m).ok());
  m.links.push_back(LinkModel{"intra", 0, 0});
  EXPECT_EQ(TimelineSimulator::Create(BackwardProfile{}, m).status().code(),
            StatusCode::kUnimplemented);
  TimelineSimulator sim = Sim(BackwardProfile{{{"a", 10, 1.0}}, 1.0}, HandModel());
  EXPECT_FALSE(sim.Run(std::vector<TensorStrategy>(2)).ok());
  EXPECT_FALSE(sim.Run(std::vector<TensorStrategy>{{7, Placement::kCompute}}).ok());
  EXPECT_FALSE(sim.Run(std::vector<TensorStrategy>{{1, static_cast<Placement>(3)}}).ok());
}

}  // namespace
}  // namespace loom::compress::planner
