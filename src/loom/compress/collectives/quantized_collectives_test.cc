#include "loom/compress/collectives/quantized_collectives.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "loom/base/philox.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::compress {
namespace {

using comm::ReduceOp;

std::unique_ptr<Codec> Make(const char* spec) {
  auto parsed = ParseCodecSpec(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto codec = MakeCodec(*parsed);
  EXPECT_TRUE(codec.ok()) << codec.status();
  return std::move(*codec);
}

std::vector<float> Gaussian(uint64_t seed, int64_t n, float scale = 1.0f) {
  PhiloxStream rng(seed, 7);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = scale * rng.NextNormal();
  return v;
}

// Per element of block `block`: the largest quantization step any source rank's group holding
// the element can have (max|x| over the group / qmax), summed over the sources != owner.
std::vector<double> StochasticBound(const std::vector<std::vector<float>>& inputs, int owner,
                                    int64_t count, int group, int qmax) {
  std::vector<double> bound(static_cast<size_t>(count), 0.0);
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (static_cast<int>(j) == owner) continue;
    const float* x = inputs[j].data() + owner * count;
    for (int64_t g = 0; g < count; g += group) {
      double amax = 0;
      for (int64_t i = g; i < std::min(count, g + group); ++i) amax = std::max(amax, double(std::fabs(x[i])));
      for (int64_t i = g; i < std::min(count, g + group); ++i) bound[i] += amax / qmax;
    }
  }
  return bound;
}

TEST(QuantizedCollectives, ReduceScatterInt8StaysWithinOneStepPerSource) {
  const int P = 3;
  const int64_t count = 1000;  // not a multiple of the group: a partial last group
  auto codec = Make("int8:g128");
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < P; ++r) inputs.push_back(Gaussian(100 + r, P * count));
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> outs(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(), {.seed = 5, .comm = {}});
    std::vector<float> in = inputs[rank];
    outs[rank].resize(count);
    Status s = qc.ReduceScatter(in.data(), count, outs[rank].data(), ReduceOp::kSum,
                                {.step = 1, .chunk = 0, .what = "bucket 0"});
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(qc.stats().calls, 1);  // the codec agreement does not count
    EXPECT_EQ(qc.stats().wire_bytes_sent, (P - 1) * codec->MaxEncodedBytes(count));
  });
  for (int r = 0; r < P; ++r) {
    std::vector<double> bound = StochasticBound(inputs, r, count, 128, 127);
    for (int64_t i = 0; i < count; ++i) {
      double exact = 0;
      for (int j = 0; j < P; ++j) exact += inputs[j][r * count + i];
      ASSERT_LE(std::fabs(outs[r][i] - exact), bound[i] * 1.0001 + 1e-5) << r << " " << i;
    }
  }
}

TEST(QuantizedCollectives, ReduceScatterAveragesInPlaceAndKeepsTheOwnBlockExact) {
  const int P = 2;
  const int64_t count = 256;
  auto codec = Make("fp16");
  // Rank 1 sends zeros, so the owner 0's block must be exactly half of its own input.
  std::vector<std::vector<float>> inputs = {Gaussian(1, P * count),
                                            std::vector<float>(P * count, 0.f)};
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> bufs = inputs;
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(), {});
    float* own = bufs[rank].data() + rank * count;
    ASSERT_TRUE(qc.ReduceScatter(bufs[rank].data(), count, own, ReduceOp::kAvg, {.what = "b"}).ok());
  });
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_EQ(bufs[0][i], inputs[0][i] * 0.5f);
    // Rank 1 owns block 1: rank 0's values went through fp16.
    ASSERT_NEAR(bufs[1][count + i], inputs[0][count + i] * 0.5f,
                std::fabs(inputs[0][count + i]) * 1e-3 + 1e-7);
  }
}

TEST(QuantizedCollectives, AllGatherGivesEveryRankIdenticalValues) {
  const int P = 3;
  const int64_t count = 300;
  auto codec = Make("int4:g64:hadamard");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> outs(P, std::vector<float>(P * count, 1.0f));
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(), {.seed = 9, .comm = {}});
    std::vector<float> mine = Gaussian(40 + rank, count, 0.01f);
    ASSERT_TRUE(qc.AllGather(mine.data(), count, outs[rank].data(), /*add=*/true,
                             {.step = 3, .chunk = 2, .what = "weights"}).ok());
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(outs[r], outs[0]);
  // add=true: 1 + decode(rank j's values), each within int4's error of the input.
  for (int j = 0; j < P; ++j) {
    std::vector<float> mine = Gaussian(40 + j, count, 0.01f);
    double err = 0, norm = 0;
    for (int64_t i = 0; i < count; ++i) {
      err += std::pow(outs[0][j * count + i] - 1.0 - mine[i], 2);
      norm += std::pow(mine[i], 2);
    }
    EXPECT_LT(std::sqrt(err / norm), 0.35) << j;
    EXPECT_GT(std::sqrt(err / norm), 0.0) << j;  // it was quantized
  }
}

TEST(QuantizedCollectives, AllReduceIsBitIdenticalAcrossRanksAndRejectsUnpaddedBuffers) {
  const int P = 4;
  const int64_t n = PaddedCount(1000, P, Make("int8:g32")->spec());
  EXPECT_EQ(n, 1024);
  auto codec = Make("int8:g32");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> bufs(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(), {.seed = 1, .comm = {}});
    bufs[rank] = Gaussian(rank, n);
    ASSERT_TRUE(qc.AllReduce(bufs[rank].data(), n, ReduceOp::kAvg, {.what = "grads"}).ok());
    std::vector<float> odd(n - 2);
    Status s = qc.AllReduce(odd.data(), n - 2, ReduceOp::kAvg, {.what = "odd"});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("pad to 1024"), std::string::npos) << s;
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(bufs[r], bufs[0]);
  std::vector<double> exact(n, 0.0);
  for (int j = 0; j < P; ++j) {
    std::vector<float> x = Gaussian(j, n);
    for (int64_t i = 0; i < n; ++i) exact[i] += x[i] / P;
  }
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += std::pow(bufs[0][i] - exact[i], 2);
    norm += exact[i] * exact[i];
  }
  EXPECT_LT(std::sqrt(err / norm), 0.05);
}

// With nearest rounding the same input gives the same error every step: without error feedback
// the running sum drifts linearly; with it the drift stays within one quantization step.
double RunningSumDrift(bool error_feedback, bool server) {
  const int P = 2;
  const int64_t n = 256;
  auto codec = Make("int2:g32:nearest");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<double> drift(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(),
                            {.worker_error_feedback = error_feedback,
                             .server_error_feedback = error_feedback && server,
                             .comm = {}});
    std::vector<float> x = Gaussian(77 + rank, n);
    std::vector<double> sum(n, 0.0);
    const std::vector<float> x0 = Gaussian(77, n), x1 = Gaussian(78, n);
    for (int step = 0; step < 40; ++step) {
      std::vector<float> buf = x;
      ASSERT_TRUE(qc.AllReduce(buf.data(), n, ReduceOp::kSum, {.step = step, .what = "g"}).ok());
      for (int64_t i = 0; i < n; ++i) sum[i] += buf[i];
    }
    for (int64_t i = 0; i < n; ++i) {
      const double exact = 40.0 * (static_cast<double>(x0[i]) + x1[i]);
      drift[rank] = std::max(drift[rank], std::fabs(sum[i] - exact));
    }
  });
  EXPECT_EQ(drift[0], drift[1]);
  return drift[0];
}

TEST(QuantizedCollectives, ErrorFeedbackKeepsTheRunningSumFromDrifting) {
  const double without = RunningSumDrift(false, false);
  const double with = RunningSumDrift(true, true);
  // Without: 40 steps x a systematic error of order one int2 step (~2.5 for these groups).
  EXPECT_GT(without, 50.0);
  // With: bounded by the two final residuals (worker and server), each within about one step.
  EXPECT_LT(with, 8.0);
  EXPECT_LT(with * 10, without);
}

TEST(QuantizedCollectives, MismatchedCodecsFailOnEveryRankNamingBoth) {
  const int P = 3;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<Status> st(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), rank == 1 ? int4.get() : int8.get(), {});
    std::vector<float> x(P * 128, 1.0f), out(128);
    st[rank] = qc.ReduceScatter(x.data(), 128, out.data(), ReduceOp::kSum, {.what = "b"});
  });
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r];
    EXPECT_NE(st[r].message().find("int4:g128"), std::string::npos) << st[r];
    EXPECT_NE(st[r].message().find("int8:g128"), std::string::npos) << st[r];
  }
}

TEST(QuantizedCollectives, NonFiniteInputOnOneRankFailsEveryRankNamingTheSource) {
  const int P = 3;
  auto codec = Make("int4:g32");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<Status> st(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(), {});
    std::vector<float> x(P * 64, 0.5f), out(64);
    if (rank == 2) x[5] = std::nanf("");  // only block 0 (owned by rank 0) is bad
    st[rank] = qc.ReduceScatter(x.data(), 64, out.data(), ReduceOp::kSum,
                                {.what = "bucket 7"});
    // The communicator is still usable afterwards: nobody was left inside a collective.
    float one = 1;
    EXPECT_TRUE(comms[rank]->AllReduce(TensorView::Of(&one, 1), ReduceOp::kSum).ok());
    EXPECT_EQ(one, 3.0f);
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_FALSE(st[r].ok()) << r;
    EXPECT_NE(st[r].message().find("non-finite"), std::string::npos) << st[r];
    EXPECT_NE(st[r].message().find("bucket 7"), std::string::npos) << st[r];
    if (r != 2) {
      EXPECT_NE(st[r].message().find("rank 2"), std::string::npos) << st[r];
    }
  }
}

}  // namespace
}  // namespace loom::compress
