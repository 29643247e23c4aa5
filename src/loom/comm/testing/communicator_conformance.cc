#include "loom/comm/testing/communicator_conformance.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "loom/base/dtype.h"
#include "loom/base/philox.h"

namespace loom::comm::testing {

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CommunicatorConformance);

namespace {

using Buffer = std::vector<uint8_t>;

Buffer Alloc(DType t, int64_t n) { return Buffer(static_cast<size_t>(DTypeBytes(t, n)) + 1, 0); }

// Small integer values exactly representable (and summable over 4 ranks) in every dtype.
double Value(DType t, int rank, int64_t i, int salt) {
  PhiloxStream rng(1000 + salt, rank * 1000003ull + i);
  switch (t) {
    case DType::kBool: return rng.NextBelow(2);
    case DType::kU8: return rng.NextBelow(60);
    case DType::kI4: return static_cast<double>(rng.NextBelow(4)) - 2;  // sums stay in [-8, 7]
    case DType::kF8E5M2: return static_cast<double>(rng.NextBelow(5)) - 2;
    default: return static_cast<double>(rng.NextBelow(9)) - 4;
  }
}

void Fill(DType t, Buffer& b, int rank, int64_t n, int salt) {
  for (int64_t i = 0; i < n; ++i) StoreFromDouble(t, b.data(), i, Value(t, rank, i, salt));
}

double Reference(DType t, ReduceOp op, int world, int64_t i, int salt) {
  double acc = Value(t, 0, i, salt);
  for (int r = 1; r < world; ++r) {
    double v = Value(t, r, i, salt);
    if (op == ReduceOp::kMax) acc = std::max(acc, v);
    else if (op == ReduceOp::kMin) acc = std::min(acc, v);
    else acc += v;
  }
  if (t == DType::kBool) acc = acc != 0;  // sum and max are OR, min is AND
  if (op == ReduceOp::kAvg && t != DType::kBool) {
    acc = IsFloating(t) ? acc / world : std::trunc(acc / world);
  }
  // Round through the storage type, as the kernels do.
  uint8_t tmp[8] = {0};
  StoreFromDouble(t, tmp, 0, acc);
  return LoadAsDouble(t, tmp, 0);
}

double Tolerance(DType t, double ref) {
  if (!IsFloating(t)) return 0;
  double eps = t == DType::kF32 ? 1e-6 : t == DType::kF64 ? 1e-12 : t == DType::kBF16 ? 1e-2
               : t == DType::kF16 ? 1e-3 : 0.25;
  return eps * std::max(1.0, std::fabs(ref));
}

const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin};

TEST_P(CommunicatorConformance, AllReduceEveryDTypeOpAndAlgorithm) {
  for (int world : {1, 2, 3, 4}) {
    World w = Make(world);
    for (DType t : kAllDTypes) {
      for (ReduceOp op : kOps) {
        for (Algorithm algo : {Algorithm::kRing, Algorithm::kDirect}) {
          for (int64_t n : {int64_t{0}, int64_t{2}, int64_t{10}, int64_t{1030}}) {
            std::vector<Buffer> bufs(world);
            RunRanks(world, [&](int r) {
              bufs[r] = Alloc(t, n);
              Fill(t, bufs[r], r, n, 1);
              CommOptions o{.algorithm = algo, .segment_bytes = 64};
              Status s = w.comms[r]->AllReduce(TensorView::Flat(bufs[r].data(), t, n), op, o);
              EXPECT_TRUE(s.ok()) << s.ToString();
            });
            for (int64_t i = 0; i < n; ++i) {
              double ref = Reference(t, op, world, i, 1);
              double got = LoadAsDouble(t, bufs[0].data(), i);
              ASSERT_NEAR(got, ref, Tolerance(t, ref))
                  << DTypeName(t) << " " << ReduceOpName(op) << " world " << world << " n " << n
                  << " i " << i << " algo " << static_cast<int>(algo);
            }
            for (int r = 1; r < world; ++r) {
              ASSERT_EQ(0, std::memcmp(bufs[r].data(), bufs[0].data(), DTypeBytes(t, n)))
                  << "ranks disagree: " << DTypeName(t) << " world " << world;
            }
          }
        }
      }
    }
  }
}

TEST_P(CommunicatorConformance, AllReduceLargeRandomF32) {
  const int world = 3;
  const int64_t n = (1 << 18) + 77;
  World w = Make(world);
  std::vector<std::vector<float>> bufs(world, std::vector<float>(n));
  std::vector<double> ref(n, 0.0);
  for (int r = 0; r < world; ++r) {
    PhiloxStream rng(5, r);
    for (int64_t i = 0; i < n; ++i) {
      bufs[r][i] = rng.NextNormal();
      ref[i] += bufs[r][i];
    }
  }
  RunRanks(world, [&](int r) {
    Status s = w.comms[r]->AllReduce(TensorView::Of(bufs[r].data(), n), ReduceOp::kAvg);
    EXPECT_TRUE(s.ok()) << s.ToString();
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(bufs[0][i], ref[i] / world, 1e-5) << i;
  for (int r = 1; r < world; ++r) {
    ASSERT_EQ(0, std::memcmp(bufs[r].data(), bufs[0].data(), n * sizeof(float)));
  }
}

TEST_P(CommunicatorConformance, ReduceScatterEveryDType) {
  for (int world : {1, 2, 3, 4}) {
    World w = Make(world);
    for (DType t : kAllDTypes) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
        for (int64_t m : {int64_t{0}, int64_t{2}, int64_t{258}}) {
          for (bool in_place : {false, true}) {
            std::vector<Buffer> in(world), out(world);
            RunRanks(world, [&](int r) {
              in[r] = Alloc(t, m * world);
              out[r] = Alloc(t, m);
              Fill(t, in[r], r, m * world, 2);
              TensorView iv = TensorView::Flat(in[r].data(), t, m * world);
              TensorView ov = in_place ? iv.Slice(m * r, m) : TensorView::Flat(out[r].data(), t, m);
              Status s = w.comms[r]->ReduceScatter(iv, ov, op, {.segment_bytes = 100});
              EXPECT_TRUE(s.ok()) << s.ToString();
              if (in_place) std::memcpy(out[r].data(), ov.data(), DTypeBytes(t, m));
            });
            for (int r = 0; r < world; ++r) {
              for (int64_t i = 0; i < m; ++i) {
                double ref = Reference(t, op, world, r * m + i, 2);
                double got = LoadAsDouble(t, out[r].data(), i);
                ASSERT_NEAR(got, ref, Tolerance(t, ref))
                    << DTypeName(t) << " world " << world << " rank " << r << " i " << i;
              }
            }
          }
        }
      }
    }
  }
}

TEST_P(CommunicatorConformance, AllGatherAndAllGatherV) {
  for (int world : {1, 2, 3, 4}) {
    World w = Make(world);
    for (DType t : {DType::kF32, DType::kBF16, DType::kI4, DType::kU8, DType::kF64}) {
      for (int64_t m : {int64_t{0}, int64_t{4}, int64_t{1002}}) {
        std::vector<Buffer> out(world);
        RunRanks(world, [&](int r) {
          Buffer in = Alloc(t, m);
          Fill(t, in, r, m, 3);
          out[r] = Alloc(t, m * world);
          Status s = w.comms[r]->AllGather(TensorView::Flat(in.data(), t, m),
                                           TensorView::Flat(out[r].data(), t, m * world),
                                           {.segment_bytes = 64});
          EXPECT_TRUE(s.ok()) << s.ToString();
        });
        for (int r = 0; r < world; ++r) {
          for (int src = 0; src < world; ++src) {
            for (int64_t i = 0; i < m; ++i) {
              ASSERT_EQ(LoadAsDouble(t, out[r].data(), src * m + i), Value(t, src, i, 3));
            }
          }
        }
      }
      // Uneven counts, including a rank that contributes nothing.
      std::vector<int64_t> counts(world);
      int64_t total = 0;
      for (int r = 0; r < world; ++r) total += counts[r] = (r == 1 ? 0 : 2 * (r + 3));
      std::vector<Buffer> out(world);
      RunRanks(world, [&](int r) {
        Buffer in = Alloc(t, counts[r]);
        Fill(t, in, r, counts[r], 4);
        out[r] = Alloc(t, total);
        Status s = w.comms[r]->AllGatherV(TensorView::Flat(in.data(), t, counts[r]),
                                          TensorView::Flat(out[r].data(), t, total), counts);
        EXPECT_TRUE(s.ok()) << s.ToString();
      });
      for (int r = 0; r < world; ++r) {
        int64_t off = 0;
        for (int src = 0; src < world; ++src) {
          for (int64_t i = 0; i < counts[src]; ++i) {
            ASSERT_EQ(LoadAsDouble(t, out[r].data(), off + i), Value(t, src, i, 4));
          }
          off += counts[src];
        }
      }
    }
  }
}

TEST_P(CommunicatorConformance, BroadcastFromEveryRoot) {
  for (int world : {1, 2, 3, 4}) {
    World w = Make(world);
    for (int root = 0; root < world; ++root) {
      for (int64_t n : {int64_t{1}, int64_t{999}}) {
        std::vector<std::vector<int32_t>> bufs(world, std::vector<int32_t>(n));
        RunRanks(world, [&](int r) {
          for (int64_t i = 0; i < n; ++i) bufs[r][i] = r == root ? static_cast<int32_t>(i * 7 + root) : -1;
          Status s = w.comms[r]->Broadcast(TensorView::Of(bufs[r].data(), n), root,
                                           {.segment_bytes = 128});
          EXPECT_TRUE(s.ok()) << s.ToString();
        });
        for (int r = 0; r < world; ++r) {
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bufs[r][i], i * 7 + root);
        }
      }
    }
  }
}

TEST_P(CommunicatorConformance, AllToAllAndAllToAllV) {
  for (int world : {1, 2, 3, 4}) {
    World w = Make(world);
    const int64_t m = 5;
    std::vector<std::vector<int32_t>> out(world, std::vector<int32_t>(m * world));
    RunRanks(world, [&](int r) {
      std::vector<int32_t> in(m * world);
      for (int64_t i = 0; i < m * world; ++i) in[i] = static_cast<int32_t>(r * 1000 + i);
      Status s = w.comms[r]->AllToAll(TensorView::Of(in.data(), m * world),
                                      TensorView::Of(out[r].data(), m * world));
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    for (int r = 0; r < world; ++r) {
      for (int src = 0; src < world; ++src) {
        for (int64_t i = 0; i < m; ++i) ASSERT_EQ(out[r][src * m + i], src * 1000 + r * m + i);
      }
    }
    // V: rank s sends (s + d + 1) elements to rank d.
    RunRanks(world, [&](int r) {
      std::vector<int64_t> in_counts(world), out_counts(world);
      for (int d = 0; d < world; ++d) in_counts[d] = r + d + 1;
      for (int s = 0; s < world; ++s) out_counts[s] = s + r + 1;
      std::vector<float> in, outv;
      for (int d = 0; d < world; ++d) {
        for (int64_t i = 0; i < in_counts[d]; ++i) in.push_back(static_cast<float>(r * 100 + d * 10 + i));
      }
      int64_t total_out = 0;
      for (int64_t c : out_counts) total_out += c;
      outv.resize(total_out);
      Status s = w.comms[r]->AllToAllV(TensorView::Of(in.data(), in.size()), in_counts,
                                       TensorView::Of(outv.data(), total_out), out_counts);
      ASSERT_TRUE(s.ok()) << s.ToString();
      int64_t off = 0;
      for (int src = 0; src < world; ++src) {
        for (int64_t i = 0; i < out_counts[src]; ++i) {
          EXPECT_EQ(outv[off + i], src * 100 + r * 10 + i);
        }
        off += out_counts[src];
      }
    });
  }
}

TEST_P(CommunicatorConformance, SendRecvRingAndBarrier) {
  const int world = 4;
  World w = Make(world);
  std::atomic<int> arrived{0};
  RunRanks(world, [&](int r) {
    std::vector<double> out(33, r + 0.5), in(33, -1);
    int right = (r + 1) % world, left = (r + world - 1) % world;
    if (r % 2 == 0) {
      ASSERT_TRUE(w.comms[r]->Send(TensorView::Of(out.data(), 33), right).ok());
      ASSERT_TRUE(w.comms[r]->Recv(TensorView::Of(in.data(), 33), left).ok());
    } else {
      ASSERT_TRUE(w.comms[r]->Recv(TensorView::Of(in.data(), 33), left).ok());
      ASSERT_TRUE(w.comms[r]->Send(TensorView::Of(out.data(), 33), right).ok());
    }
    EXPECT_EQ(in[32], left + 0.5);
    arrived++;
    ASSERT_TRUE(w.comms[r]->Barrier().ok());
    EXPECT_EQ(arrived.load(), world);  // nobody leaves the barrier before everyone arrived
  });
}

TEST_P(CommunicatorConformance, BadArgumentsAreInvalidAndLeaveCommunicatorUsable) {
  const int world = 2;
  World w = Make(world);
  RunRanks(world, [&](int r) {
    std::vector<float> a(10), b(3);
    Status s = w.comms[r]->ReduceScatter(TensorView::Of(a.data(), 10), TensorView::Of(b.data(), 3),
                                         ReduceOp::kSum);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("reduce_scatter"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("world size 2"), std::string::npos) << s.message();
    EXPECT_TRUE(w.comms[r]->AllReduce(TensorView::Of(a.data(), 10), ReduceOp::kSum).ok());
  });
}

TEST_P(CommunicatorConformance, TimeoutNamesOperationRankAndPeer) {
  const int world = 2;
  World w = Make(world);
  std::vector<float> a(1000, 1.0f);
  auto start = SteadyClock::now();
  Status s = w.comms[0]->AllReduce(TensorView::Of(a.data(), 1000), ReduceOp::kSum,
                                   {.timeout = std::chrono::milliseconds(300)});
  double secs = std::chrono::duration<double>(SteadyClock::now() - start).count();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_LT(secs, 5.0);
  EXPECT_NE(s.message().find("allreduce"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
  // Broken from now on: fails fast and says why.
  Status again = w.comms[0]->Barrier();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("broken"), std::string::npos);
}

TEST_P(CommunicatorConformance, DeadPeerIsReportedNotAHang) {
  const int world = 3;
  World w = Make(world);
  std::vector<std::vector<float>> bufs(world, std::vector<float>(4096, 1.0f));
  w.Kill(2);
  std::vector<Status> results(2);
  RunRanks(2, [&](int r) {
    results[r] = w.comms[r]->AllReduce(TensorView::Of(bufs[r].data(), 4096), ReduceOp::kSum,
                                       {.timeout = std::chrono::seconds(3)});
  });
  // Rank 1 receives from rank 0 in the ring and may only see rank 0's failure, so only rank 0's
  // error is required to name rank 2; both must fail, neither may hang.
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(results[r].ok()) << "rank " << r;
    EXPECT_TRUE(results[r].code() == StatusCode::kUnavailable ||
                results[r].code() == StatusCode::kDeadlineExceeded)
        << results[r].ToString();
  }
  EXPECT_NE(results[0].message().find("rank 2"), std::string::npos) << results[0].ToString();
}

}  // namespace
}  // namespace loom::comm::testing
