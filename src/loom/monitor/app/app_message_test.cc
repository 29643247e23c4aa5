#include "loom/monitor/app/app_message.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace loom::monitor {
namespace {

TEST(AppMessageTest, StepRoundTrip) {
  AppMessage m;
  m.kind = AppMessage::Kind::kStep;
  m.rank = 3;
  m.ts_ms = 1700000000123;
  m.step = 42;
  m.step_time_s = 0.513;
  m.data_wait_s = 0.012;
  std::string line = EncodeAppMessage(m);
  EXPECT_EQ(line, "v1 step rank=3 ts=1700000000123 step=42 t=0.513 wait=0.012");
  Result<AppMessage> back = ParseAppMessage(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, AppMessage::Kind::kStep);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->ts_ms, 1700000000123);
  EXPECT_EQ(back->step, 42);
  EXPECT_DOUBLE_EQ(back->step_time_s, 0.513);
  EXPECT_DOUBLE_EQ(back->data_wait_s, 0.012);
}

TEST(AppMessageTest, StepWithUnknownDataWaitIsNan) {
  AppMessage m;
  m.kind = AppMessage::Kind::kStep;
  m.step = 1;
  m.step_time_s = 2.5;
  m.data_wait_s = NAN;
  Result<AppMessage> back = ParseAppMessage(EncodeAppMessage(m) + "\n");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan(back->data_wait_s));
  EXPECT_TRUE(std::isnan(back->compute_s)) << "comp is optional and absent here";
  m.compute_s = 0.25;
  auto with_comp = ParseAppMessage(EncodeAppMessage(m));
  ASSERT_TRUE(with_comp.ok()) << with_comp.status();
  EXPECT_DOUBLE_EQ(with_comp->compute_s, 0.25);
  EXPECT_DOUBLE_EQ(back->step_time_s, 2.5);
}

TEST(AppMessageTest, CollectiveAndPhaseRoundTrip) {
  AppMessage c;
  c.kind = AppMessage::Kind::kCollective;
  c.rank = 7;
  c.ts_ms = 5;
  c.op = "allreduce";
  c.bytes = 4194304;
  c.seq = 981;
  c.duration_s = 0.0031;
  Result<AppMessage> cb = ParseAppMessage(EncodeAppMessage(c));
  ASSERT_TRUE(cb.ok()) << cb.status();
  EXPECT_EQ(cb->kind, AppMessage::Kind::kCollective);
  EXPECT_EQ(cb->op, "allreduce");
  EXPECT_EQ(cb->bytes, 4194304);
  EXPECT_EQ(cb->seq, 981);
  EXPECT_DOUBLE_EQ(cb->duration_s, 0.0031);
  EXPECT_EQ(cb->rank, 7);

  AppMessage p;
  p.kind = AppMessage::Kind::kPhase;
  p.rank = 1;
  p.ts_ms = 9;
  p.phase = "ckpt_save";
  Result<AppMessage> pb = ParseAppMessage(EncodeAppMessage(p));
  ASSERT_TRUE(pb.ok()) << pb.status();
  EXPECT_EQ(pb->kind, AppMessage::Kind::kPhase);
  EXPECT_EQ(pb->phase, "ckpt_save");
}

TEST(AppMessageTest, EncoderSanitizesNamesSoTheLineStaysParseable) {
  AppMessage p;
  p.kind = AppMessage::Kind::kPhase;
  p.phase = "bad phase=x";
  Result<AppMessage> pb = ParseAppMessage(EncodeAppMessage(p));
  ASSERT_TRUE(pb.ok()) << pb.status();
  EXPECT_EQ(pb->phase, "bad_phase_x");
}

// Each malformed frame fails with a message that names the offending field.
TEST(AppMessageTest, StrictErrorsNameTheField) {
  struct Case {
    const char* line;
    const char* needle;
  } cases[] = {
      {"", "header"},
      {"v2 step rank=0 ts=1 step=1 t=1 wait=1", "'version'"},
      {"v1 walk rank=0 ts=1", "'kind'"},
      {"v1 step rank=0 ts=1 step=1 t=1", "'wait' is missing"},
      {"v1 step rank=0 ts=1 step=1 t=1 wait=1 extra=3", "'extra' is unknown"},
      {"v1 step rank=0 ts=1 step=1 step=2 t=1 wait=1", "'step' appears twice"},
      {"v1 step rank=x ts=1 step=1 t=1 wait=1", "'rank' is not an integer"},
      {"v1 step rank=-1 ts=1 step=1 t=1 wait=1", "'rank' is out of range"},
      {"v1 step rank=0 ts=1 step=1 t=-0.5 wait=1", "'t' must be finite"},
      {"v1 step rank=0 ts=1 step=1 t=nan wait=1", "'t' must be a number"},
      {"v1 step rank=0 ts=1 step=1 t=1.5s wait=1", "'t' is not a number"},
      {"v1 step rank=0 ts=1 step=1 t=inf wait=1", "'t' must be finite"},
      {"v1 coll rank=0 ts=1 op=all/reduce bytes=1 seq=1 dur=1", "'op' has a character"},
      {"v1 coll rank=0 ts=1 op=ar bytes=-4 seq=1 dur=1", "'bytes' must be >= 0"},
      {"v1 coll rank=0 ts=1 op=ar bytes=4 seq=1 dur=1 ", "is not key=value"},
      {"v1 coll rank=0 ts=1 op= bytes=4 seq=1 dur=1", "'op' must have"},
      {"v1 phase rank=0 ts=1", "'phase' is missing"},
      {"v1 step rank=0 ts=1 step=99999999999999999999 t=1 wait=1", "'step' is not an integer"},
  };
  for (const Case& c : cases) {
    Result<AppMessage> r = ParseAppMessage(c.line);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.line;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos)
        << c.line << " -> " << r.status();
  }
}

TEST(AppMessageTest, OverlongLineIsRejected) {
  std::string line = "v1 phase rank=0 ts=1 phase=" + std::string(2000, 'a');
  Result<AppMessage> r = ParseAppMessage(line);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("longer than"), std::string::npos);
}

// Fuzz: random truncations and byte flips of valid frames are rejected with a message or parse
// into a message that re-encodes and re-parses to itself; never a crash.
TEST(AppMessageTest, FuzzedFramesNeverCrash) {
  AppMessage c;
  c.kind = AppMessage::Kind::kCollective;
  c.rank = 12;
  c.ts_ms = 1700000000000;
  c.op = "reduce_scatter";
  c.bytes = 123456;
  c.seq = 77;
  c.duration_s = 0.5;
  AppMessage st;
  st.step = 9;
  st.step_time_s = 1.25;
  const std::string frames[] = {EncodeAppMessage(c), EncodeAppMessage(st)};
  std::mt19937 rng(5);
  int rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s = frames[i % 2];
    if (i % 4 < 2) {
      s.resize(rng() % s.size());
    } else {
      for (int k = 0; k < 2; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 128);
    }
    Result<AppMessage> r = ParseAppMessage(s);
    if (!r.ok()) {
      ++rejected;
      EXPECT_FALSE(r.status().message().empty());
      continue;
    }
    Result<AppMessage> again = ParseAppMessage(EncodeAppMessage(*r));
    ASSERT_TRUE(again.ok()) << s;
    EXPECT_EQ(EncodeAppMessage(*again), EncodeAppMessage(*r)) << s;
  }
  EXPECT_GT(rejected, 2000);
}

}  // namespace
}  // namespace loom::monitor
