// Gloo's own algorithms (the peers of `loom bench collectives`) return the right values on 2, 3
// and 4 ranks; reduce-scatter's result block must be this rank's, whatever order Gloo's
// halving-doubling leaves the blocks in.
#include "loom/comm/gloo/gloo_native.h"

#include <gtest/gtest.h>

#include <vector>

#include "loom/comm/gloo/gloo_transport.h"
#include "loom/comm/memory_store.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::comm {
namespace {

std::vector<std::unique_ptr<Communicator>> Connect(int n) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::unique_ptr<Communicator>> comms(n);
  testing::RunRanks(n, [&](int r) {
    WorldInfo info{.rank = r, .world_size = n, .local_rank = r, .local_world_size = n};
    auto c = ConnectGloo(info, *store, {.timeout = std::chrono::seconds(30)});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    comms[r] = std::move(c).value();
  });
  return comms;
}

// Rank r's input element i: small integers, so float sums are exact.
float In(int r, size_t i) { return static_cast<float>((r + 1) * 3 + static_cast<int>(i % 1000)); }

class GlooNativeTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooNativeTest, ReduceScatterHalvingDoublingGivesEachRankItsOwnBlock) {
  const int P = GetParam();
  auto comms = Connect(P);
  for (size_t block : {size_t{256}, size_t{3000}, size_t{1} << 18}) {
    const size_t n = block * P;
    testing::RunRanks(P, [&](int r) {
      std::vector<float> in(n), out(block, -1);
      for (size_t i = 0; i < n; ++i) in[i] = In(r, i);
      auto g = GlooNativeCollective::Create(*comms[r], "reduce_scatter_halving_doubling",
                                            in.data(), out.data(), n);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      for (int rep = 0; rep < 2; ++rep) {
        ASSERT_TRUE((*g)->Run().ok());
        size_t bad = 0;
        for (size_t j = 0; j < block; ++j) {
          float want = 0;
          for (int q = 0; q < P; ++q) want += In(q, r * block + j);
          bad += out[j] != want;
        }
        EXPECT_EQ(bad, 0u) << "rank " << r << " of " << P << ", block " << block;
      }
    });
  }
}

TEST_P(GlooNativeTest, AllgatherRingAndAllreduceRingMatchTheReference) {
  const int P = GetParam();
  auto comms = Connect(P);
  const size_t block = 1000, n = block * P;
  testing::RunRanks(P, [&](int r) {
    std::vector<float> shard(block), gathered(n, -1), in(n), sum(n, -1);
    for (size_t j = 0; j < block; ++j) shard[j] = In(r, j);
    for (size_t i = 0; i < n; ++i) in[i] = In(r, i);
    auto ag = GlooNativeCollective::Create(*comms[r], "allgather_ring", shard.data(),
                                           gathered.data(), n);
    ASSERT_TRUE(ag.ok()) << ag.status().ToString();
    ASSERT_TRUE((*ag)->Run().ok());
    for (int q = 0; q < P; ++q) EXPECT_EQ(gathered[q * block + 7], In(q, 7)) << "rank " << r;
    auto ar = GlooNativeCollective::Create(*comms[r], "allreduce_ring", in.data(), sum.data(), n);
    ASSERT_TRUE(ar.ok()) << ar.status().ToString();
    ASSERT_TRUE((*ar)->Run().ok());
    float want = 0;
    for (int q = 0; q < P; ++q) want += In(q, n - 1);
    EXPECT_EQ(sum[n - 1], want) << "rank " << r;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooNativeTest, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace loom::comm
