#include "loom/compress/collectives/two_level_collectives.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "loom/base/philox.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"
#include "loom/compress/testing/codec_testing.h"

namespace loom::compress {
namespace {

using comm::ReduceOp;

std::unique_ptr<Codec> Make(const char* spec) { return testing::MakeTestCodec(spec); }

std::vector<float> Gaussian(uint64_t seed, int64_t n) {
  PhiloxStream rng(seed, 11);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.NextNormal();
  return v;
}

std::vector<std::vector<float>> Inputs(int P, int64_t n, uint64_t seed = 300) {
  std::vector<std::vector<float>> in;
  for (int r = 0; r < P; ++r) in.push_back(Gaussian(seed + r, n));
  return in;
}

// Runs a reduce-scatter (two-level when node_size > 0, else single-level with `inter`) and
// returns every rank's block.
std::vector<std::vector<float>> ReduceScatterAll(const std::vector<std::vector<float>>& inputs,
                                                 int64_t count, const Codec* intra,
                                                 const Codec* inter, int node_size) {
  const int P = static_cast<int>(inputs.size());
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> outs(P, std::vector<float>(count));
  comm::testing::RunRanks(P, [&](int rank) {
    const CollectiveCall call{.step = 2, .chunk = 0, .what = "bucket 0"};
    Status s;
    if (node_size > 0) {
      auto tl = TwoLevelCollectives::Create(comms[rank].get(), intra, inter,
                                            {.node_size = node_size, .seed = 17, .comm = {}});
      ASSERT_TRUE(tl.ok()) << tl.status();
      s = (*tl)->ReduceScatter(inputs[rank].data(), count, outs[rank].data(), ReduceOp::kSum,
                               call);
    } else {
      QuantizedCollectives qc(comms[rank].get(), inter, {.seed = 17, .comm = {}});
      s = qc.ReduceScatter(inputs[rank].data(), count, outs[rank].data(), ReduceOp::kSum, call);
    }
    EXPECT_TRUE(s.ok()) << s;
  });
  return outs;
}

// Relative L2 error of the reduce-scatter blocks against the fp64 sums.
double RelativeError(const std::vector<std::vector<float>>& inputs,
                     const std::vector<std::vector<float>>& outs, int64_t count) {
  double err = 0, norm = 0;
  for (size_t r = 0; r < outs.size(); ++r) {
    for (int64_t i = 0; i < count; ++i) {
      double exact = 0;
      for (const auto& in : inputs) exact += in[r * count + i];
      err += std::pow(outs[r][i] - exact, 2);
      norm += exact * exact;
    }
  }
  return std::sqrt(err / norm);
}

double GroupMax(const float* x, int64_t begin, int64_t group) {
  double m = 0;
  for (int64_t i = begin; i < begin + group; ++i) m = std::max(m, double(std::fabs(x[i])));
  return m;
}

TEST(TwoLevelCollectives, ReduceScatterStaysWithinOneInt8StepPerSourceAndOneInt4StepPerNode) {
  const int P = 4, L = 2, G = 128;
  const int64_t count = 8 * G;  // whole groups: a group never straddles two blocks
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128");
  const auto inputs = Inputs(P, P * count);
  const auto outs = ReduceScatterAll(inputs, count, int8.get(), int4.get(), L);
  for (int r = 0; r < P; ++r) {
    const int node = r / L, local = r % L;
    for (int64_t g = 0; g < count; g += G) {
      // Stage 1 in every node m: the sources other than (m, local) add one int8 step each;
      // stage 2: the node sums of the other nodes add one int4 step (of the decoded sum, whose
      // group max is at most the exact one plus the stage-1 error).
      double bound = 0;
      for (int m = 0; m < P / L; ++m) {
        double stage1 = 0;
        std::vector<float> node_sum(count, 0.f);
        for (int l = 0; l < L; ++l) {
          const float* x = inputs[m * L + l].data() + r * count;
          for (int64_t i = 0; i < count; ++i) node_sum[i] += x[i];
          if (l != local) stage1 += GroupMax(x, g, G) / 127;
        }
        bound += stage1;
        if (m != node) bound += (GroupMax(node_sum.data(), g, G) + stage1) / 7;
      }
      for (int64_t i = g; i < g + G; ++i) {
        double exact = 0;
        for (int j = 0; j < P; ++j) exact += inputs[j][r * count + i];
        ASSERT_LE(std::fabs(outs[r][i] - exact), bound * 1.0001 + 1e-5) << r << " " << i;
      }
    }
  }
}

TEST(TwoLevelCollectives, ErrorIsSmallerThanSingleLevelInt4OnTheSameData) {
  const int P = 4, L = 2;
  const int64_t count = 64 * 128;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128");
  const auto inputs = Inputs(P, P * count, 900);
  const double two_level = RelativeError(inputs, ReduceScatterAll(inputs, count, int8.get(),
                                                                  int4.get(), L), count);
  const double single = RelativeError(inputs, ReduceScatterAll(inputs, count, nullptr,
                                                               int4.get(), 0), count);
  // int4 sees N - 1 = 1 node sum of variance 2 instead of P - 1 = 3 unit inputs: the error ratio
  // is about sqrt(2 / 3) = 0.82 (int8's share is ~1/300 of the variance).
  EXPECT_LT(two_level, 0.9 * single) << two_level << " vs " << single;
  EXPECT_GT(two_level, 0.7 * single) << two_level << " vs " << single;
  std::printf("two-level 8/4 %.4f, single-level int4 %.4f\n", two_level, single);
  // Degenerate groupings: node_size = world is one int8 level, node_size 1 one int4 level.
  const double intra_only = RelativeError(inputs, ReduceScatterAll(inputs, count, int8.get(),
                                                                   int4.get(), P), count);
  const double inter_only = RelativeError(inputs, ReduceScatterAll(inputs, count, int8.get(),
                                                                   int4.get(), 1), count);
  EXPECT_LT(intra_only, 0.1 * single) << intra_only;  // int8 steps are 127/7 = 18x finer
  EXPECT_NEAR(inter_only, single, 0.05 * single) << inter_only;
}

TEST(TwoLevelCollectives, AllReduceIsBitIdenticalAcrossRanksAndNearTheFp64Mean) {
  const int P = 4;
  const int64_t n = 4 * 1024;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128:hadamard");
  const auto inputs = Inputs(P, n, 50);
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> bufs = inputs;
  comm::testing::RunRanks(P, [&](int rank) {
    auto tl = TwoLevelCollectives::Create(comms[rank].get(), int8.get(), int4.get(),
                                          {.node_size = 2, .seed = 3, .comm = {}});
    ASSERT_TRUE(tl.ok()) << tl.status();
    Status s = (*tl)->AllReduce(bufs[rank].data(), n, ReduceOp::kAvg, {.step = 1, .what = "g"});
    ASSERT_TRUE(s.ok()) << s;
    // Stage 1 sends 3/4 of... per rank: stage 1 one block of n/2 to the node peer, stage 2 one
    // block of n/4 to the rail peer, and the gather n/4 along the rail + n/2 inside the node.
    EXPECT_EQ((*tl)->stats().fp32_bytes, 2 * (P - 1) * (n / P) * 4);
    Status odd = (*tl)->AllReduce(bufs[rank].data(), n - 2, ReduceOp::kAvg, {.what = "odd"});
    EXPECT_EQ(odd.code(), StatusCode::kInvalidArgument) << odd;
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(bufs[r], bufs[0]);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0;
    for (const auto& in : inputs) mean += in[i] / P;
    err += std::pow(bufs[0][i] - mean, 2);
    norm += mean * mean;
  }
  EXPECT_LT(std::sqrt(err / norm), 0.3);
  EXPECT_GT(std::sqrt(err / norm), 0.01);  // it was quantized
}

TEST(TwoLevelCollectives, AllGatherDecodesTheSameBytesEverywhere) {
  const int P = 4;
  const int64_t count = 500;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g64");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> outs(P, std::vector<float>(P * count, 1.0f));
  comm::testing::RunRanks(P, [&](int rank) {
    auto tl = TwoLevelCollectives::Create(comms[rank].get(), int8.get(), int4.get(),
                                          {.node_size = 2, .comm = {}});
    ASSERT_TRUE(tl.ok());
    std::vector<float> mine = Gaussian(70 + rank, count);
    ASSERT_TRUE((*tl)->AllGather(mine.data(), count, outs[rank].data(), /*add=*/true,
                                 {.what = "w"}).ok());
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(outs[r], outs[0]);
  for (int j = 0; j < P; ++j) {
    std::vector<float> mine = Gaussian(70 + j, count);
    double err = 0, norm = 0;
    for (int64_t i = 0; i < count; ++i) {
      err += std::pow(outs[0][j * count + i] - 1.0 - mine[i], 2);
      norm += mine[i] * mine[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.35) << j;
  }
}

TEST(TwoLevelCollectives, NodeSizeMustDivideTheWorld) {
  auto int8 = Make("int8:g128");
  auto comms = comm::MakeInProcCommunicators(4);
  for (int bad : {3, 0, 8}) {
    auto tl = TwoLevelCollectives::Create(comms[0].get(), int8.get(), int8.get(),
                                          {.node_size = bad, .comm = {}});
    ASSERT_FALSE(tl.ok());
    EXPECT_EQ(tl.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(tl.status().message().find("node_size " + std::to_string(bad) +
                                         " does not divide the world size 4"),
              std::string::npos)
        << tl.status();
  }
}

TEST(TwoLevelCollectives, NanOnOneRankFailsEveryRankAndMismatchedCodecsAreNamed) {
  const int P = 4;
  const int64_t count = 256;
  auto int8 = Make("int8:g128");
  auto int4 = Make("int4:g128");
  auto int2 = Make("int2:g128");
  {
    auto comms = comm::MakeInProcCommunicators(P);
    std::vector<Status> st(P);
    comm::testing::RunRanks(P, [&](int rank) {
      auto tl = TwoLevelCollectives::Create(comms[rank].get(), int8.get(), int4.get(),
                                            {.node_size = 2, .comm = {}});
      ASSERT_TRUE(tl.ok());
      std::vector<float> buf = Gaussian(rank, P * count);
      if (rank == 3) buf[5] = std::numeric_limits<float>::quiet_NaN();  // block 0, node 1
      st[rank] = (*tl)->AllReduce(buf.data(), P * count, ReduceOp::kAvg, {.what = "bucket 7"});
    });
    for (int r = 0; r < P; ++r) {
      EXPECT_FALSE(st[r].ok()) << r;
      EXPECT_NE(st[r].message().find("bucket 7"), std::string::npos) << st[r];
    }
    EXPECT_NE(st[2].message().find("stage 1 (intra-node, ranks {2,3})"), std::string::npos)
        << st[2];
  }
  {
    auto comms = comm::MakeInProcCommunicators(P);
    std::vector<Status> st(P);
    comm::testing::RunRanks(P, [&](int rank) {
      auto tl = TwoLevelCollectives::Create(comms[rank].get(), int8.get(),
                                            rank == 1 ? int2.get() : int4.get(), {.node_size = 2, .comm = {}});
      ASSERT_TRUE(tl.ok());
      std::vector<float> buf = Gaussian(rank, P * count), out(count);
      st[rank] = (*tl)->ReduceScatter(buf.data(), count, out.data(), ReduceOp::kSum, {});
    });
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r];
      EXPECT_NE(st[r].message().find("rank 1 uses 'intra=int8:g128:stochastic inter=int2:g128:stochastic node_size=2'"),
                std::string::npos)
          << st[r];
    }
  }
}

}  // namespace
}  // namespace loom::compress
