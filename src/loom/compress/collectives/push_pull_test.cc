#include "loom/compress/collectives/push_pull.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loom/base/clock.h"
#include "loom/base/philox.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"
#include "loom/compress/testing/codec_testing.h"

namespace loom::compress {
namespace {

using comm::ReduceOp;
constexpr std::chrono::milliseconds kTestTimeout{20000};

std::unique_ptr<Codec> Make(const char* spec) { return testing::MakeTestCodec(spec); }

std::vector<float> Gaussian(uint64_t seed, int64_t n, float scale = 1.0f) {
  PhiloxStream rng(seed, 11);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = scale * rng.NextNormal();
  return v;
}

PushPull::Options Opts(int64_t partition_bytes, bool worker_ef = false, bool server_ef = true) {
  return {.seed = 3,
          .worker_error_feedback = worker_ef,
          .server_error_feedback = server_ef,
          .comm = {.timeout = kTestTimeout, .tag = 5},
          .partition_bytes = partition_bytes};
}

double GroupStep(const float* x, int64_t begin, int64_t end, int qmax) {
  double amax = 0;
  for (int64_t i = begin; i < end; ++i) amax = std::max(amax, double(std::fabs(x[i])));
  return amax / qmax;
}

// One int8 sum of P = 3 ranks, cut into pieces of 2 groups: each element within one quantization
// step per pushing source (the owner's values are exact) plus one step of the server's encoding of
// the sum; all ranks bit-identical; bytes on the wire as the frames say.
TEST(PushPull, SumStaysWithinTheTwoEncodingsBoundAndRanksAreBitIdentical) {
  const int P = 3;
  const int G = 128, qmax = 127;
  const int64_t n = PaddedCount(3000, P, Make("int8:g128")->spec());
  ASSERT_EQ(n, 3072);
  const int64_t count = n / P;
  auto codec = Make("int8:g128");
  std::vector<std::vector<float>> inputs, bufs(P);
  for (int r = 0; r < P; ++r) inputs.push_back(Gaussian(20 + r, n));
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<CollectiveStats> stats(P);
  comm::testing::RunRanks(P, [&](int rank) {
    PushPull ps(comms[rank].get(), codec.get(), Opts(2 * G * 4));
    bufs[rank] = inputs[rank];
    Status s = ps.AllReduce(bufs[rank].data(), n, ReduceOp::kSum, {.step = 1, .what = "bucket 0"});
    EXPECT_TRUE(s.ok()) << s;
    stats[rank] = ps.stats();
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(bufs[r], bufs[0]) << r;
  std::vector<double> exact(n, 0.0);
  for (int j = 0; j < P; ++j) {
    for (int64_t i = 0; i < n; ++i) exact[i] += inputs[j][i];
  }
  std::vector<float> exact_f(exact.begin(), exact.end());
  double worst_ratio = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int owner = static_cast<int>(i / count);
    const int64_t g0 = owner * count + (i - owner * count) / G * G;
    const int64_t g1 = std::min(g0 + G, (owner + 1) * count);
    double bound = GroupStep(exact_f.data(), g0, g1, qmax) * 1.01;  // the server's encoding
    for (int j = 0; j < P; ++j) {
      if (j != owner) bound += GroupStep(inputs[j].data(), g0, g1, qmax);
    }
    const double err = std::fabs(bufs[0][i] - exact[i]);
    ASSERT_LE(err, bound + 1e-5) << i;
    worst_ratio = std::max(worst_ratio, err / bound);
  }
  EXPECT_GT(worst_ratio, 0.05);  // it was quantized
  // 4 pieces per shard; every rank pushes 2 shards and its server sends its sum to 2 peers.
  const std::vector<push_pull::Piece> pieces = push_pull::SplitShard(count, *codec, 2 * G * 4);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(stats[0].calls, 1);
  EXPECT_EQ(stats[0].wire_bytes_sent, 2 * (P - 1) * push_pull::FramesBytes(pieces));
  EXPECT_EQ(stats[0].fp32_bytes, 2 * (P - 1) * count * 4);
}

// Codec none: the server sums in rank order and divides like the Communicator, so push-pull
// equals the direct all-reduce bit for bit (P = 3) and the ring all-reduce for P = 2.
TEST(PushPull, UncompressedEqualsTheCommunicatorsAllReduceExactly) {
  auto none = Make("none");
  for (const int P : {2, 3}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      SCOPED_TRACE("P=" + std::to_string(P) + " op=" + std::string(comm::ReduceOpName(op)));
      const int64_t n = P * 9000;
      auto comms = comm::MakeInProcCommunicators(P);
      std::vector<std::vector<float>> ps_out(P), ar_out(P);
      comm::testing::RunRanks(P, [&](int rank) {
        PushPull ps(comms[rank].get(), none.get(), Opts(1000 * 4));
        ps_out[rank] = Gaussian(60 + rank, n);
        ar_out[rank] = ps_out[rank];
        ASSERT_TRUE(ps.AllReduce(ps_out[rank].data(), n, op, {.what = "b"}).ok());
        const comm::Algorithm algo = P == 2 ? comm::Algorithm::kRing : comm::Algorithm::kDirect;
        ASSERT_TRUE(comms[rank]
                        ->AllReduce(TensorView::Of(ar_out[rank].data(), n), op,
                                    {.timeout = kTestTimeout, .algorithm = algo})
                        .ok());
      });
      for (int r = 0; r < P; ++r) ASSERT_EQ(ps_out[r], ar_out[r]) << r;
    }
  }
}

// Steps of a biased codec (int2, nearest rounding) on fixed inputs: with worker- and server-side
// error feedback the running mean of the outputs converges to the running mean of the exact
// averages (error ~ residuals / steps); without, it keeps the codec's systematic error.
double RunningMeanError(bool error_feedback, int steps) {
  const int P = 2;
  const int64_t n = 2 * 512;
  auto codec = Make("int2:g128:nearest");
  std::vector<std::vector<float>> inputs = {Gaussian(1, n), Gaussian(2, n)};
  std::vector<double> exact_mean(n), out_mean0(n), out_mean1(n);
  for (int64_t i = 0; i < n; ++i) exact_mean[i] = (double(inputs[0][i]) + inputs[1][i]) / 2;
  auto comms = comm::MakeInProcCommunicators(P);
  comm::testing::RunRanks(P, [&](int rank) {
    PushPull ps(comms[rank].get(), codec.get(), Opts(256 * 4, error_feedback, error_feedback));
    std::vector<double>& mean = rank == 0 ? out_mean0 : out_mean1;
    for (int t = 0; t < steps; ++t) {
      std::vector<float> buf = inputs[rank];
      Status s = ps.AllReduce(buf.data(), n, ReduceOp::kAvg, {.step = t, .chunk = 7, .what = "g"});
      ASSERT_TRUE(s.ok()) << s;
      for (int64_t i = 0; i < n; ++i) mean[i] += buf[i] / double(steps);
    }
  });
  EXPECT_EQ(out_mean0, out_mean1);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += std::pow(out_mean0[i] - exact_mean[i], 2);
    norm += std::pow(exact_mean[i], 2);
  }
  return std::sqrt(err / norm);
}

TEST(PushPull, ErrorFeedbackMakesTheRunningMeanConverge) {
  const double without = RunningMeanError(false, 40);
  const double with10 = RunningMeanError(true, 10);
  const double with40 = RunningMeanError(true, 40);
  EXPECT_GT(without, 0.2);            // int2 nearest: a large systematic error
  EXPECT_LT(with40, 0.05);            // residuals / 40 steps
  EXPECT_LT(with40 * 2.5, with10);    // and still shrinking like 1 / steps
  EXPECT_LT(with40 * 10, without);
}

TEST(PushPull, MismatchedCodecsFailEveryRankNamingTheRank) {
  const int P = 3;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<Status> st(P);
  comm::testing::RunRanks(P, [&](int rank) {
    PushPull ps(comms[rank].get(), rank == 1 ? int4.get() : int8.get(), Opts(0));
    std::vector<float> x(P * 128, 1.0f);
    st[rank] = ps.AllReduce(x.data(), P * 128, ReduceOp::kSum, {.what = "b"});
  });
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r];
    EXPECT_NE(st[r].message().find("rank 1 uses 'int4:g128:stochastic'"), std::string::npos) << st[r];
  }
}

// A NaN in a pushed shard (rank 2, shard 0) and one in a server's own shard (rank 1, shard 1):
// every rank fails naming the rank, no message is left over (the next call succeeds).
TEST(PushPull, NonFiniteInputFailsEveryRankNamingItsRankAndTheNextCallWorks) {
  const int P = 3;
  const int64_t count = 640;
  auto codec = Make("int4:g32");
  struct Case {
    int bad_rank;
    int64_t bad_element;
  };
  for (const Case k : {Case{2, 5 * 64 + 3}, Case{1, count + 70}}) {
    SCOPED_TRACE("bad rank " + std::to_string(k.bad_rank));
    auto comms = comm::MakeInProcCommunicators(P);
    std::vector<Status> st(P), next(P);
    std::vector<std::vector<float>> after(P);
    comm::testing::RunRanks(P, [&](int rank) {
      PushPull ps(comms[rank].get(), codec.get(), Opts(64 * 4));
      std::vector<float> x = Gaussian(30 + rank, P * count);
      if (rank == k.bad_rank) x[k.bad_element] = std::numeric_limits<float>::quiet_NaN();
      st[rank] = ps.AllReduce(x.data(), P * count, ReduceOp::kAvg, {.what = "bucket 4"});
      after[rank] = Gaussian(40 + rank, P * count);
      next[rank] = ps.AllReduce(after[rank].data(), P * count, ReduceOp::kAvg, {.what = "b5"});
    });
    const std::string who = "rank " + std::to_string(k.bad_rank);
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r];
      EXPECT_NE(st[r].message().find(who), std::string::npos) << st[r];
      EXPECT_NE(st[r].message().find("bucket 4"), std::string::npos) << st[r];
      EXPECT_TRUE(next[r].ok()) << next[r];
      EXPECT_EQ(after[r], after[0]);
    }
  }
}

TEST(PushPull, ASilentPeerTimesOutAndADeadPeerFailsFast) {
  const int P = 3;
  auto codec = Make("int8:g32");
  for (const bool dead : {false, true}) {
    SCOPED_TRACE(dead ? "dead" : "silent");
    std::shared_ptr<comm::InProcHub> hub;
    auto comms = comm::MakeInProcCommunicators(P, {}, &hub);
    std::vector<Status> st(P);
    std::vector<double> seconds(P);
    comm::testing::RunRanks(P, [&](int rank) {
      PushPull::Options o = Opts(32 * 4);
      o.comm.timeout = std::chrono::milliseconds(dead ? 20000 : 400);
      PushPull ps(comms[rank].get(), codec.get(), o);
      std::vector<float> x = Gaussian(rank, P * 320);
      ASSERT_TRUE(ps.AllReduce(x.data(), P * 320, ReduceOp::kSum, {.what = "warm"}).ok());
      ASSERT_TRUE(comms[rank]->Barrier().ok());
      if (rank == 2) {
        if (dead) hub->KillRank(2);
        return;  // never takes part in the second call
      }
      Stopwatch sw;
      st[rank] = ps.AllReduce(x.data(), P * 320, ReduceOp::kSum, {.what = "bucket 9"});
      seconds[rank] = sw.Seconds();
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(st[r].code(), dead ? StatusCode::kUnavailable : StatusCode::kDeadlineExceeded)
          << st[r];
      EXPECT_NE(st[r].message().find("rank 2"), std::string::npos) << st[r];
      EXPECT_LT(seconds[r], 5.0);
      if (!dead) {
        EXPECT_GT(seconds[r], 0.3);
      }
    }
  }
}

TEST(PushPull, RejectsUnpaddedBuffersAndOtherReductions) {
  auto codec = Make("int4:g64");
  auto comms = comm::MakeInProcCommunicators(2);
  comm::testing::RunRanks(2, [&](int rank) {
    PushPull ps(comms[rank].get(), codec.get(), Opts(0));
    std::vector<float> x(129, 1.0f);
    Status s = ps.AllReduce(x.data(), 129, ReduceOp::kSum, {.what = "odd"});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("pad to 256"), std::string::npos) << s;
    s = ps.AllReduce(x.data(), 128, ReduceOp::kMax, {.what = "max"});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  });
}

TEST(PushPullFrames, ACorruptOrMisplacedFrameIsDataLossNamingTheSender) {
  auto codec = Make("int8:g32");
  const std::vector<push_pull::Piece> pieces = push_pull::SplitShard(100, *codec, 64 * 4);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].begin, 64);
  EXPECT_EQ(pieces[1].count, 36);
  std::vector<char> frame(pieces[0].FrameBytes());
  push_pull::WriteDataFrame(frame.data(), 0, 0);
  EXPECT_TRUE(push_pull::ReadFrame(frame.data(), pieces[0], 0, 2).ok());
  Status wrong_piece = push_pull::ReadFrame(frame.data(), pieces[0], 1, 2);
  EXPECT_EQ(wrong_piece.code(), StatusCode::kDataLoss);
  EXPECT_NE(wrong_piece.message().find("rank 2"), std::string::npos) << wrong_piece;
  push_pull::WriteErrorFrame(frame.data(), pieces[0], 4, 0,
                             FailedPreconditionError("could not encode x: nan at 3"));
  Status err = push_pull::ReadFrame(frame.data(), pieces[0], 0, 2);
  EXPECT_EQ(err.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(err.message(), "rank 4 reports: could not encode x: nan at 3");
  // The code travels (a peer's timeout stays a timeout); long texts are cut to the body.
  push_pull::WriteErrorFrame(frame.data(), pieces[0], 1, 0,
                             DeadlineExceededError(std::string(2000, 'x')));
  err = push_pull::ReadFrame(frame.data(), pieces[0], 0, 2);
  EXPECT_EQ(err.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(err.message().size(), std::string("rank 1 reports: ").size() +
                                      push_pull::kMinBodyBytes - 1);
  frame[0] ^= 1;
  EXPECT_EQ(push_pull::ReadFrame(frame.data(), pieces[0], 0, 2).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace loom::compress
