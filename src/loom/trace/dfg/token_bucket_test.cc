// Token-bucket links: the bucket's arithmetic, fitting rate and burst from transfers, and the
// α-β fit staying as it was on α-β data.
#include "loom/trace/dfg/token_bucket.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/trace/dfg/link_fit.h"
#include "loom/trace/dfg/testing/synthetic_run.h"
#include "loom/trace/dfg/trace_builder.h"
#include "loom/trace/ingest/collective_match.h"

namespace loom::trace::dfg {
namespace {

constexpr double kRate = 40;             // ns/B: 25 MB/s (tbf 200 Mbit)
constexpr double kBurst = 256 * 1024.0;  // tbf burst 256kb
constexpr double kLine = 1;              // ns/B while tokens last
constexpr double kAlphaNs = 100'000;

TEST(TokenBucketTest, BurstThenRateThenQueue) {
  TokenBucket tb(kRate, kBurst, kLine);
  tb.Reset(0);
  // Covered by tokens: line rate.
  auto x = tb.Send(0, 100'000);
  EXPECT_DOUBLE_EQ(x.start_ns, 0);
  EXPECT_DOUBLE_EQ(x.drained_ns, 100'000);
  EXPECT_NEAR(tb.tokens(), kBurst - 100'000 + 100'000 / kRate, 1e-6);
  // Posted before the first left: queues behind it; the tokens left cover part of it.
  const double tokens = tb.tokens();
  x = tb.Send(50'000, 300'000);
  EXPECT_DOUBLE_EQ(x.start_ns, 100'000);
  EXPECT_NEAR(x.drained_ns, 100'000 + (300'000 - tokens) * kRate, 1e-3);
  EXPECT_DOUBLE_EQ(tb.tokens(), 0);
  // 10 ms idle refills 250 kB (< burst): 300 kB then leaves after (300k - 250k) · rate.
  const double t = x.drained_ns + 10e6;
  x = tb.Send(t, 300'000);
  EXPECT_NEAR(x.drained_ns - t, 50'000 * kRate, 1e-3);
  // A long idle refills only up to the burst.
  const double t2 = x.drained_ns + 1e9;
  x = tb.Send(t2, 300'000);
  EXPECT_NEAR(x.drained_ns - t2, (300'000 - kBurst) * kRate, 1e-3);
  // No burst, no line rate: bytes · rate behind a FIFO (the α-β link plus queueing).
  TokenBucket ab(kRate, 0, 0);
  ab.Reset(0);
  EXPECT_DOUBLE_EQ(ab.Send(0, 1000).drained_ns, 40'000);
  EXPECT_DOUBLE_EQ(ab.Send(10'000, 1000).drained_ns, 80'000);
}

// Transfers of two links over `steps` steps: bursts after idle gaps, back-to-back (queued)
// transfers, small messages; arrivals from the bucket (+ α); every 5th arrival is late by a
// receiver's wake-up and marked untimed.
std::vector<LinkSample> BucketTransfers(int steps, double rate, double burst, double line) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> gap(0.2e6, 30e6);
  const double sizes[] = {96'000, 200'000, 16, 48'000, 400'000, 96'000};
  std::vector<LinkSample> out;
  int k = 0;
  for (int link = 0; link < 2; ++link) {
    for (int step = 0; step < steps; ++step) {
      TokenBucket tb(rate, burst, line);
      double t = step * 200e6;
      tb.Reset(t);
      for (int i = 0; i < 12; ++i) {
        const double bytes = sizes[(i + step + link) % 6];
        const auto x = tb.Send(t, bytes);
        LinkSample s{bytes, x.drained_ns + kAlphaNs - x.start_ns, 1, 1, link, step};
        s.post_ns = t;
        s.arrival_ns = x.drained_ns + kAlphaNs;
        if (++k % 5 == 0) {
          s.arrival_ns += 2e6;
          s.timed = false;
        }
        out.push_back(s);
        t += i % 3 == 2 ? gap(rng) : 0.3e6;  // mostly back to back, sometimes idle
      }
    }
  }
  return out;
}

TEST(TokenBucketFitTest, RecoversRateAndBurstOfShapedLink) {
  for (double burst : {64 * 1024.0, kBurst, 512 * 1024.0}) {
    const std::vector<LinkSample> s = BucketTransfers(6, kRate, burst, kLine);
    auto ab = FitLinkStepTotals(s);
    ASSERT_TRUE(ab.ok()) << ab.status();
    // Recovery whatever share of the bytes the bucket shaped (min_shaped_fraction 0).
    auto f = FitTokenBucket(s, *ab, 0.85, 0);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(f->token_bucket) << burst << ": " << f->ToString();
    // The default also wants at least half the bytes shaped: the deep 512 KiB bucket sends most
    // of this traffic out of tokens (a link its rate hardly limits).
    auto d = FitTokenBucket(s, *ab);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->token_bucket, burst < 512 * 1024.0) << d->ToString();
    EXPECT_EQ(d->token_bucket, d->shaped_fraction >= 0.5) << d->ToString();
    EXPECT_NEAR(f->ns_per_byte, kRate, 0.05 * kRate) << f->ToString();
    EXPECT_NEAR(f->burst_bytes, burst, 0.10 * burst) << f->ToString();
    EXPECT_NEAR(f->alpha_ns, kAlphaNs, 1000) << f->ToString();  // 16 B at line rate
    EXPECT_LT(f->tb_error_ns, 0.3 * f->alpha_beta_error_ns) << f->ToString();
    EXPECT_LT(f->tb_error_ns, 0.2e6) << f->ToString();
  }
}

TEST(TokenBucketFitTest, AlphaBetaDataStaysAlphaBeta) {
  // α + bytes/β per transfer, each posted after the previous arrived (no queueing, no burst).
  std::vector<LinkSample> s;
  for (int link = 0; link < 2; ++link) {
    for (int step = 0; step < 5; ++step) {
      double t = step * 100e6;
      for (int i = 0; i < 10; ++i) {
        const double bytes = 1000.0 * (1 + (i * 37 + step) % 200);
        LinkSample x{bytes, kAlphaNs + bytes * kRate, 1, 1, link, step};
        x.post_ns = t;
        x.arrival_ns = t + x.ns;
        s.push_back(x);
        t = x.arrival_ns + 0.5e6 * (i % 4);
      }
    }
  }
  auto ab = FitLinkStepTotals(s);
  ASSERT_TRUE(ab.ok());
  EXPECT_NEAR(ab->alpha_ns, kAlphaNs, 1);  // as before
  EXPECT_NEAR(ab->ns_per_byte, kRate, 1e-6);
  auto f = FitTokenBucket(s, *ab);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->token_bucket) << f->ToString();
  EXPECT_DOUBLE_EQ(f->ns_per_byte, ab->ns_per_byte);
  EXPECT_DOUBLE_EQ(f->alpha_ns, ab->alpha_ns);
  EXPECT_NEAR(f->alpha_beta_error_ns, 0, 1);
  // No post/arrival times: an error, not a silent α-β.
  std::vector<LinkSample> untimed = {{1000, 5000, 1, 1}};
  EXPECT_FALSE(FitTokenBucket(untimed, *ab).ok());
}

TEST(TokenBucketFitTest, TraceBuilderKeepsAlphaBetaOnAlphaBetaTraces) {
  auto traces = testing::MakeRun(6, true);
  auto match = ingest::MatchCollectives(&traces);
  ASSERT_TRUE(match.ok()) << match.status();
  TraceModelOptions autod, ab;
  ab.link_model = TraceModelOptions::LinkModel::kAlphaBeta;
  auto m_auto = BuildModelFromTraces(traces, *match, autod);
  auto m_ab = BuildModelFromTraces(traces, *match, ab);
  ASSERT_TRUE(m_auto.ok() && m_ab.ok());
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(m_auto->spec.ranks[r].egress_burst_bytes, 0) << m_auto->rank_links[r].ToString();
    EXPECT_DOUBLE_EQ(m_auto->spec.ranks[r].egress_ns_per_byte,
                     m_ab->spec.ranks[r].egress_ns_per_byte);
    EXPECT_DOUBLE_EQ(m_auto->spec.ranks[r].egress_alpha_ns, m_ab->spec.ranks[r].egress_alpha_ns);
  }
}

}  // namespace
}  // namespace loom::trace::dfg
