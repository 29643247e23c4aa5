#include "loom/compress/collectives/summable_allreduce.h"

#include <cmath>
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

std::vector<float> Gaussian(uint64_t seed, int64_t n) {
  PhiloxStream rng(seed, 17);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.NextNormal();
  return v;
}

// Largest |result - fp64 mean| relative to max|mean|, after checking all ranks agree.
double SummableError(const char* spec, int P, int64_t n, int64_t* wire_bytes) {
  auto codec = testing::MakeTestCodec(spec);
  std::vector<std::vector<float>> bufs;
  for (int r = 0; r < P; ++r) bufs.push_back(Gaussian(40 + r, n));
  const auto inputs = bufs;
  auto comms = comm::MakeInProcCommunicators(P);
  comm::testing::RunRanks(P, [&](int rank) {
    auto sum = SummableAllReduce::Create(comms[rank].get(), codec.get(), {});
    ASSERT_TRUE(sum.ok()) << sum.status();
    Status s = (*sum)->AllReduce(bufs[rank].data(), n, ReduceOp::kAvg, {.what = "b"});
    EXPECT_TRUE(s.ok()) << s;
    if (rank == 0) *wire_bytes = (*sum)->stats().wire_bytes_sent;
  });
  for (int r = 1; r < P; ++r) EXPECT_EQ(bufs[r], bufs[0]) << spec << " rank " << r;
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0;
    for (const auto& in : inputs) mean += in[i];
    mean /= P;
    worst = std::max(worst, std::fabs(bufs[0][i] - mean));
    scale = std::max(scale, std::fabs(mean));
  }
  return worst / scale;
}

TEST(SummableAllReduce, Fp16AndBf16StayWithinTheirPrecisionOverTheRing) {
  const int P = 4;
  const int64_t n = 50001;  // odd, above the direct threshold: the pipelined ring runs
  int64_t wire = 0;
  // One rounding of each input plus one per hop (P - 1) and per gather copy: a few ulps of the
  // largest partial sum (|sum| <~ 4 * 4.5 here, fp16 ulp 2^-10 relative).
  const double fp16 = SummableError("fp16", P, n, &wire);
  EXPECT_LT(fp16, 4 * std::ldexp(1.0, -11) * P);
  EXPECT_GT(fp16, 0.0);
  // 16 bits on the wire: the ring sends 2 (P - 1) / P of the 2-byte payload.
  EXPECT_EQ(wire, 2 * (P - 1) * (2 * n) / P);
  const double bf16 = SummableError("bf16", P, n, &wire);
  EXPECT_LT(bf16, 4 * std::ldexp(1.0, -8) * P);
  EXPECT_GT(bf16, fp16);
  EXPECT_LT(SummableError("none", P, 1000, &wire), 1e-6);  // fp32 on the wire
}

TEST(SummableAllReduce, RejectsCodecsThatAreNotSummableAndFailsEveryRankOnNan) {
  auto int4 = testing::MakeTestCodec("int4:g128");
  auto fp16 = testing::MakeTestCodec("fp16");
  const int P = 3;
  auto comms = comm::MakeInProcCommunicators(P);
  auto bad = SummableAllReduce::Create(comms[0].get(), int4.get(), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not 'int4:g128:stochastic'"), std::string::npos)
      << bad.status();
  std::vector<Status> st(P);
  comm::testing::RunRanks(P, [&](int rank) {
    auto sum = SummableAllReduce::Create(comms[rank].get(), fp16.get(), {});
    ASSERT_TRUE(sum.ok());
    std::vector<float> buf = Gaussian(rank, 3000);
    if (rank == 1) buf[77] = std::numeric_limits<float>::quiet_NaN();
    st[rank] = (*sum)->AllReduce(buf.data(), 3000, ReduceOp::kSum, {.what = "bucket 2"});
  });
  for (int r = 0; r < P; ++r) {
    EXPECT_FALSE(st[r].ok()) << r;
    EXPECT_NE(st[r].message().find("bucket 2"), std::string::npos) << st[r];
  }
  EXPECT_NE(st[1].message().find("element 77"), std::string::npos) << st[1];
}

}  // namespace
}  // namespace loom::compress
