#include "loom/compress/collectives/quantized_collectives.h"

#include <chrono>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "loom/compress/testing/codec_testing.h"

#include "loom/base/philox.h"
#include "loom/base/thread_pool.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::compress {
namespace {

using comm::ReduceOp;

std::unique_ptr<Codec> Make(const char* spec) { return testing::MakeTestCodec(spec); }

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
double RunningSumDrift(bool error_feedback, bool server, int64_t pipeline_bytes = 4 << 20) {
  const int P = 2;
  const int64_t n = 256;
  auto codec = Make("int2:g32:nearest");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<double> drift(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec.get(),
                            {.worker_error_feedback = error_feedback,
                             .server_error_feedback = error_feedback && server,
                             .comm = {},
                             .pipeline_bytes = pipeline_bytes});
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

// ---- Pipelining: calls cut into pieces (Options::pipeline_bytes) ----

// The pipeline encodes each piece of a block against its slice of one residual.
TEST(ErrorFeedbackInPieces, SentPlusResidualTelescopesAndAFailedEncodeKeepsTheResidual) {
  auto c = Make("int2:g64");
  const int64_t n = 777;
  const std::vector<std::pair<int64_t, int64_t>> pieces = {{0, 256}, {256, 256}, {512, 265}};
  ErrorFeedback ef(c.get(), n);
  std::vector<double> inputs(n, 0), sent(n, 0);
  std::vector<char> wire(c->MaxEncodedBytes(n));
  std::vector<float> y(n), decoded(n);
  for (int step = 0; step < 50; ++step) {
    const std::vector<float> x = Gaussian(100 + step, n);
    for (int64_t i = 0; i < n; ++i) inputs[i] += x[i];
    for (const auto& [begin, len] : pieces) {
      std::vector<float> xs(x.begin() + begin, x.begin() + begin + len);
      // The last piece also asks for what the receivers decode, in place of its input.
      float* dec = begin == 512 ? xs.data() : nullptr;
      auto bytes = ef.EncodeRange(xs.data(), begin, len, wire.data(), {1, step, 0, begin}, dec);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      ASSERT_EQ(*bytes, c->MaxEncodedBytes(len));
      ASSERT_TRUE(c->Decode(wire.data(), *bytes, len, y.data() + begin).ok());
      if (dec != nullptr) {
        for (int64_t i = 0; i < len; ++i) ASSERT_EQ(xs[i], y[begin + i]) << i;
      }
    }
    for (int64_t i = 0; i < n; ++i) sent[i] += y[i];
  }
  testing::ExpectErrorFeedbackTelescopes(sent, ef.residual(), inputs);
  // A NaN (e.g. an overflowed fp16 step that the trainer skips) must not poison the residual.
  const std::vector<float> before = ef.residual();
  std::vector<float> bad(256, 1.0f);
  bad[44] = std::nanf("");
  EXPECT_FALSE(ef.EncodeRange(bad.data(), 256, 256, wire.data(), {1, 50, 0, 0}).ok());
  EXPECT_EQ(ef.residual(), before);
}

constexpr std::chrono::milliseconds kTestTimeout{20000};  // a broken pipeline fails, not hangs

// The wire bytes of a call whose blocks of `count` are cut into pieces of `piece` elements.
int64_t PiecedWire(const Codec& codec, int64_t count, int64_t piece) {
  int64_t wire = 0;
  for (int64_t b = 0; b < count; b += piece)
    wire += codec.MaxEncodedBytes(std::min(piece, count - b));
  return wire;
}

TEST(QuantizedCollectivesPipelined, ReduceScatterStaysWithinOneStepPerSourceForAnyPieceSize) {
  const int64_t count = 1000;  // not a multiple of any piece size below, nor of the group
  auto codec = Make("int8:g32");
  // pipeline_bytes -> elements per piece: whole groups of 32, at least one.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {128 * 4, 128}, {100 * 4, 96}, {4, 32}, {999 * 4, 992}, {0, count}, {1 << 20, count}};
  for (int P = 2; P <= 4; ++P) {
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < P; ++r) inputs.push_back(Gaussian(300 + r, P * count));
    for (const auto& [bytes, piece] : sizes) {
      SCOPED_TRACE("P=" + std::to_string(P) + " pipeline_bytes=" + std::to_string(bytes));
      auto comms = comm::MakeInProcCommunicators(P);
      std::vector<std::vector<float>> outs(P, std::vector<float>(count));
      std::vector<CollectiveStats> stats(P);
      comm::testing::RunRanks(P, [&](int rank) {
        QuantizedCollectives qc(
            comms[rank].get(), codec.get(),
            {.seed = 5, .comm = {.timeout = kTestTimeout}, .pipeline_bytes = bytes});
        Status s = qc.ReduceScatter(inputs[rank].data(), count, outs[rank].data(), ReduceOp::kSum,
                                    {.step = 1, .chunk = 0, .what = "bucket 0"});
        EXPECT_TRUE(s.ok()) << s;
        stats[rank] = qc.stats();
      });
      for (int r = 0; r < P; ++r) {
        EXPECT_EQ(stats[r].calls, 1);
        EXPECT_EQ(stats[r].wire_bytes_sent, (P - 1) * PiecedWire(*codec, count, piece));
        EXPECT_EQ(stats[r].fp32_bytes, (P - 1) * count * 4);
        std::vector<double> bound = StochasticBound(inputs, r, count, 32, 127);
        double err = 0;
        for (int64_t i = 0; i < count; ++i) {
          double exact = 0;
          for (int j = 0; j < P; ++j) exact += inputs[j][r * count + i];
          ASSERT_LE(std::fabs(outs[r][i] - exact), bound[i] * 1.0001 + 1e-5) << r << " " << i;
          err += std::fabs(outs[r][i] - exact);
        }
        EXPECT_GT(err, 0.0);  // it was quantized
      }
    }
  }
}

// Runs a kAvg AllReduce of Gaussian inputs on P in-process ranks; returns every rank's buffer.
std::vector<std::vector<float>> AllReduceOnRanks(int P, int64_t n, const Codec* codec,
                                                 QuantizedCollectives::Options options,
                                                 int steps = 1) {
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<std::vector<float>> bufs(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), codec, options);
    for (int step = 0; step < steps; ++step) {
      bufs[rank] = Gaussian(500 + rank, n);
      Status s = qc.AllReduce(bufs[rank].data(), n, ReduceOp::kAvg,
                              {.step = step, .chunk = 3, .what = "grads"});
      ASSERT_TRUE(s.ok()) << s;
    }
  });
  return bufs;
}

double RelativeErrorOfAverage(int P, const std::vector<float>& out) {
  const int64_t n = static_cast<int64_t>(out.size());
  std::vector<double> exact(n, 0.0);
  for (int j = 0; j < P; ++j) {
    std::vector<float> x = Gaussian(500 + j, n);
    for (int64_t i = 0; i < n; ++i) exact[i] += static_cast<double>(x[i]) / P;
  }
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += std::pow(out[i] - exact[i], 2);
    norm += exact[i] * exact[i];
  }
  return std::sqrt(err / norm);
}

TEST(QuantizedCollectivesPipelined, AllReduceIsBitIdenticalAcrossRanksWithTheUnpipelinedError) {
  auto codec = Make("int4:g64:hadamard");
  for (int P = 2; P <= 4; ++P) {
    const int64_t n = PaddedCount(P * 5000, P, codec->spec());  // 5000+ per block
    const QuantizedCollectives::Options base{.seed = 11, .comm = {.timeout = kTestTimeout}};
    QuantizedCollectives::Options whole = base;
    whole.pipeline_bytes = 0;
    // Two steps: the second runs against the server-side residuals of the first.
    const double whole_err =
        RelativeErrorOfAverage(P, AllReduceOnRanks(P, n, codec.get(), whole, /*steps=*/2)[0]);
    EXPECT_GT(whole_err, 0.0);
    for (int64_t bytes : {int64_t{64 * 4}, int64_t{1000 * 4}, int64_t{4096 * 4}}) {
      SCOPED_TRACE("P=" + std::to_string(P) + " pipeline_bytes=" + std::to_string(bytes));
      QuantizedCollectives::Options opt = base;
      opt.pipeline_bytes = bytes;
      auto bufs = AllReduceOnRanks(P, n, codec.get(), opt, /*steps=*/2);
      for (int r = 1; r < P; ++r) ASSERT_EQ(bufs[r], bufs[0]) << r;
      const double err = RelativeErrorOfAverage(P, bufs[0]);
      // Only the rounding draws differ from the unpipelined call: the same error, up to noise.
      EXPECT_LT(err, 1.25 * whole_err);
      EXPECT_GT(err, 0.8 * whole_err);
    }
  }
}

TEST(QuantizedCollectivesPipelined, ResultsDoNotDependOnTheExecutor) {
  const int P = 3;
  auto codec = Make("int8:g32");
  const int64_t n = P * 32 * 37;
  QuantizedCollectives::Options opt{.seed = 2,
                                    .worker_error_feedback = true,
                                    .comm = {.timeout = kTestTimeout},
                                    .pipeline_bytes = 5 * 32 * 4};
  const auto owned = AllReduceOnRanks(P, n, codec.get(), opt, /*steps=*/3);
  InlineExecutor inline_executor;
  opt.executor = &inline_executor;
  EXPECT_EQ(AllReduceOnRanks(P, n, codec.get(), opt, 3), owned);
  // Several threads shared by all ranks: pieces of one call run concurrently.
  ThreadPool pool({.num_threads = 3, .name = "qc-test"});
  pool.Start();
  opt.executor = &pool;
  EXPECT_EQ(AllReduceOnRanks(P, n, codec.get(), opt, 3), owned);
  pool.Stop();
}

TEST(QuantizedCollectivesPipelined, ErrorFeedbackStillKeepsTheRunningSumFromDrifting) {
  // 256 floats over 2 ranks: blocks of 128, pieces of one int2 group (32) each.
  const double without = RunningSumDrift(false, false, 32 * 4);
  const double with = RunningSumDrift(true, true, 32 * 4);
  EXPECT_GT(without, 50.0);
  EXPECT_LT(with, 8.0);
}

TEST(QuantizedCollectivesPipelined, MismatchedCodecsFailOnEveryRank) {
  const int P = 2;
  auto int8 = Make("int8:g32");
  auto int4 = Make("int4:g32");
  auto comms = comm::MakeInProcCommunicators(P);
  std::vector<Status> st(P);
  comm::testing::RunRanks(P, [&](int rank) {
    QuantizedCollectives qc(comms[rank].get(), rank == 1 ? int4.get() : int8.get(),
                            {.comm = {.timeout = kTestTimeout}, .pipeline_bytes = 32 * 4});
    std::vector<float> x(P * 320, 1.0f);
    st[rank] = qc.AllReduce(x.data(), P * 320, ReduceOp::kSum, {.what = "b"});
  });
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r];
    EXPECT_NE(st[r].message().find("int4:g32"), std::string::npos) << st[r];
    EXPECT_NE(st[r].message().find("int8:g32"), std::string::npos) << st[r];
  }
}

// Every rank must fail and stay in step: afterwards an ordinary all-reduce still works.
void ExpectEveryRankFailedAndInStep(const std::vector<Status>& st, int bad_rank,
                                    const std::string& what) {
  for (int r = 0; r < static_cast<int>(st.size()); ++r) {
    ASSERT_FALSE(st[r].ok()) << r;
    EXPECT_NE(st[r].message().find("non-finite"), std::string::npos) << st[r];
    EXPECT_NE(st[r].message().find(what), std::string::npos) << st[r];
    if (r != bad_rank) {
      EXPECT_NE(st[r].message().find("rank " + std::to_string(bad_rank)), std::string::npos)
          << st[r];
    }
  }
}

TEST(QuantizedCollectivesPipelined, NonFiniteInputInALaterPieceFailsEveryRank) {
  const int P = 3;
  const int64_t count = 1000;  // pieces of 96: the last one is [960, 1000)
  auto codec = Make("int4:g32");
  for (const bool all_reduce : {false, true}) {
    SCOPED_TRACE(all_reduce ? "all-reduce" : "reduce-scatter");
    auto comms = comm::MakeInProcCommunicators(P);
    std::vector<Status> st(P);
    comm::testing::RunRanks(P, [&](int rank) {
      QuantizedCollectives qc(comms[rank].get(), codec.get(),
                              {.comm = {.timeout = kTestTimeout}, .pipeline_bytes = 100 * 4});
      std::vector<float> x(P * count, 0.5f), out(count);
      if (rank == 2) x[970] = std::nanf("");  // block 0, last piece
      st[rank] =
          all_reduce
              ? qc.AllReduce(x.data(), P * count, ReduceOp::kSum, {.what = "bucket 7"})
              : qc.ReduceScatter(x.data(), count, out.data(), ReduceOp::kSum, {.what = "bucket 7"});
      float one = 1;
      EXPECT_TRUE(comms[rank]->AllReduce(TensorView::Of(&one, 1), ReduceOp::kSum).ok());
      EXPECT_EQ(one, 3.0f);
    });
    ExpectEveryRankFailedAndInStep(st, 2, "bucket 7");
    // The failing rank names the piece: the element is 10 of [960, 1000).
    EXPECT_NE(st[2].message().find("elements [960, 1000) of block 0"), std::string::npos) << st[2];
    EXPECT_NE(st[2].message().find("at element 10 "), std::string::npos) << st[2];
  }
}

TEST(QuantizedCollectivesPipelined, AnOwnerWhoseSumOverflowsFailsEveryRank) {
  // Both ranks send 3e38 in piece 2 of block 1: the owner (rank 1) sums to Inf and cannot
  // re-encode it for the all-gather, so rank 0 must learn it from there.
  const int P = 2;
  const int64_t count = 640;
  auto codec = Make("int8:g32");
  for (const int64_t bytes : {int64_t{0}, int64_t{64 * 4}}) {
    SCOPED_TRACE("pipeline_bytes=" + std::to_string(bytes));
    auto comms = comm::MakeInProcCommunicators(P);
    std::vector<Status> st(P);
    comm::testing::RunRanks(P, [&](int rank) {
      QuantizedCollectives qc(comms[rank].get(), codec.get(),
                              {.comm = {.timeout = kTestTimeout}, .pipeline_bytes = bytes});
      std::vector<float> x = Gaussian(9 + rank, P * count);
      x[count + 2 * 64 + 5] = 3e38f;
      st[rank] = qc.AllReduce(x.data(), P * count, ReduceOp::kSum, {.what = "bucket 4"});
      float one = 1;
      EXPECT_TRUE(comms[rank]->AllReduce(TensorView::Of(&one, 1), ReduceOp::kSum).ok());
      EXPECT_EQ(one, 2.0f);
    });
    ExpectEveryRankFailedAndInStep(st, 1, "bucket 4");
  }
}

}  // namespace
}  // namespace loom::compress
