// Tests of the kernel space, the loop-nest AST, features, kernels and the dataset format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "loom/base/thread_pool.h"
#include "loom/trace/costmodel/ast.h"
#include "loom/trace/costmodel/collect.h"
#include "loom/trace/costmodel/dataset.h"
#include "loom/trace/costmodel/features.h"
#include "loom/trace/costmodel/kernels.h"

namespace loom::trace::costmodel {
namespace {

float L2p(double x) { return static_cast<float>(std::log2(1 + x)); }

KernelSpec HandGemm(LoopOrder order) {
  KernelSpec s;
  s.gemm = GemmParams{
      .m = 64, .n = 48, .k = 40, .mt = 32, .nt = 16, .kt = 16, .order = order, .unroll = 4};
  return s;
}

TEST(AstTest, HandBuiltGemmExtentsAndLeaves) {
  const Ast ast = BuildAst(HandGemm(LoopOrder::kIKJ), Device{Isa::kAvx2, 1});
  // seq > i0(2) > j0(3) > k0(3) > i(32) > k(16, unroll 4) > j(16, vectorize 8) > leaf
  EXPECT_EQ(ast.NumNodes(), 8);
  const std::vector<LeafContext> leaves = ast.Leaves();
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_EQ(leaves[0].preorder_index, 7);
  ASSERT_EQ(leaves[0].loops.size(), 6u);
  const int64_t want[] = {2, 3, 3, 32, 16, 16};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(leaves[0].loops[i]->extent, want[i]) << i;
  EXPECT_EQ(leaves[0].loops[4]->annot, LoopAnnot::kUnroll);
  EXPECT_EQ(leaves[0].loops[4]->annot_factor, 4);
  EXPECT_EQ(leaves[0].loops[5]->annot, LoopAnnot::kVectorize);
  EXPECT_EQ(leaves[0].loops[5]->annot_factor, 8);
  EXPECT_EQ(leaves[0].leaf->ops.fma, 1);
}

TEST(AstTest, LeafPositionsArePreorderInWholeTree) {
  // IJK: ... > j > {k > acc-leaf, store-leaf}: nodes seq,i0,j0,k0,i,j,k,leaf(7),leaf(8).
  EXPECT_EQ(LeafPositions(BuildAst(HandGemm(LoopOrder::kIJK), Device{})), (std::vector<int>{7, 8}));
  KernelSpec softmax;
  softmax.kind = KernelKind::kReduction;
  softmax.reduce = ReduceParams{ReduceOp::kSoftmax, 8, 100};
  // seq, r, c, leaf(3), c, leaf(5), c, leaf(7)
  const Ast ast = BuildAst(softmax, Device{Isa::kAvx512, 2});
  EXPECT_EQ(LeafPositions(ast), (std::vector<int>{3, 5, 7}));
  EXPECT_EQ(ast.root.children[0].annot, LoopAnnot::kParallel);
  EXPECT_EQ(ast.root.children[0].annot_factor, 2);
}

TEST(FeaturesTest, HandBuiltGemmValues) {
  CacheSizes caches;
  caches.l1d_bytes = 32 << 10;
  caches.l2_bytes = 1 << 20;
  const auto f = LeafFeatures(BuildAst(HandGemm(LoopOrder::kIKJ), Device{Isa::kAvx2, 1}), caches);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].size(), static_cast<size_t>(kNumLeafFeatures));
  ASSERT_EQ(LeafFeatureNames().size(), static_cast<size_t>(kNumLeafFeatures));
  auto at = [&](const std::string& name) {
    for (size_t i = 0; i < LeafFeatureNames().size(); ++i) {
      if (LeafFeatureNames()[i] == name) return f[0][i];
    }
    ADD_FAILURE() << "no feature " << name;
    return -1.f;
  };
  const double exec = 2.0 * 3 * 3 * 32 * 16 * 16;
  EXPECT_FLOAT_EQ(at("log2_exec_count"), L2p(exec));
  EXPECT_FLOAT_EQ(at("log2_fma"), L2p(exec));
  EXPECT_FLOAT_EQ(at("log2_flops"), L2p(2 * exec));
  EXPECT_FLOAT_EQ(at("log2_add"), 0.f);
  EXPECT_FLOAT_EQ(at("log2_bytes_read"), L2p(3 * 4 * exec));
  EXPECT_FLOAT_EQ(at("log2_bytes_written"), L2p(4 * exec));
  EXPECT_FLOAT_EQ(at("log2_footprint"), L2p(4.0 * (64 * 40 + 40 * 48 + 64 * 48)));
  EXPECT_FLOAT_EQ(at("log2_extent_inner0"), L2p(16));
  EXPECT_FLOAT_EQ(at("log2_extent_inner2"), L2p(32));
  EXPECT_FLOAT_EQ(at("log2_extent_inner5"), L2p(2));
  EXPECT_FLOAT_EQ(at("depth"), 6.f);
  EXPECT_FLOAT_EQ(at("frac_stride0"), 0.25f);
  EXPECT_FLOAT_EQ(at("frac_stride1"), 0.75f);
  EXPECT_FLOAT_EQ(at("log2_vec_lanes"), 3.f);
  EXPECT_FLOAT_EQ(at("log2_unroll"), 2.f);
  EXPECT_FLOAT_EQ(at("threads"), 1.f);
  // Tile: A 32x16 + B 16x16 + C 32x16 floats = 1280 x 4 B against a 32 KiB L1.
  EXPECT_FLOAT_EQ(at("log2_tile_bytes"), L2p(5120));
  EXPECT_FLOAT_EQ(at("log2_tile_over_l1"), static_cast<float>(std::log2(5120.0 / 32768)));
  EXPECT_FLOAT_EQ(at("vec_remainder"), 0.f);
}

TEST(FeaturesTest, PositionalEncodingIsCdmppSinusoid) {
  EXPECT_EQ(PositionalEncoding(0, 4), (std::vector<float>{0, 1, 0, 1}));
  const std::vector<float> pe = PositionalEncoding(7, 32);
  EXPECT_FLOAT_EQ(pe[0], std::sin(7.f));
  EXPECT_FLOAT_EQ(pe[1], std::cos(7.f));
  EXPECT_NEAR(pe[2], std::sin(7.0 / std::pow(10000.0, 2.0 / 32)), 1e-6);
  EXPECT_NEAR(pe[31], std::cos(7.0 / std::pow(10000.0, 30.0 / 32)), 1e-6);
}

TEST(FeaturesTest, DeviceVectorAndPooling) {
  DeviceInfo d;
  d.device = Device{Isa::kAvx512, 2};
  d.peak_gflops = 64;
  d.mem_gbps = 16;
  d.caches = CacheSizes{32 << 10, 1 << 20, 32 << 20};
  EXPECT_EQ(DeviceVector(d), (std::vector<float>{4, 2, 5, 10, 5, 6, 4, 2}));
  std::vector<std::vector<float>> leaves(2, std::vector<float>(kNumLeafFeatures, 1.f));
  leaves[1][0] = 3.f;
  const std::vector<float> p = PoolLeaves(leaves);
  ASSERT_EQ(p.size(), static_cast<size_t>(2 * kNumLeafFeatures + 1));
  EXPECT_FLOAT_EQ(p[0], 4.f);                 // sum
  EXPECT_FLOAT_EQ(p[kNumLeafFeatures], 3.f);  // max
  EXPECT_FLOAT_EQ(p[1], 2.f);
  EXPECT_FLOAT_EQ(p.back(), 2.f);  // leaf count
}

// Every variant on every supported ISA, threads 1 and 2, odd shapes, against the reference.
class KernelCorrectnessTest : public ::testing::Test {
 protected:
  void SetUp() override { pool_.Start(); }
  void TearDown() override { pool_.Stop(); }
  void Check(const KernelSpec& spec) {
    Result<KernelInstance> k = KernelInstance::Create(spec, 3);
    ASSERT_TRUE(k.ok()) << k.status();
    k->RunReference();
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
      if (!IsaSupported(isa)) continue;
      for (int threads : {1, 2}) {
        k->ResetOutput();
        k->Run(Device{isa, threads}, &pool_);
        const auto& out = k->Output();
        const auto& ref = k->ReferenceOutput();
        ASSERT_EQ(out.size(), ref.size());
        int bad = 0;
        for (size_t i = 0; i < out.size() && bad < 3; ++i) {
          if (std::abs(out[i] - ref[i]) > 1e-3f * (1.f + std::abs(ref[i]))) {
            ++bad;
            ADD_FAILURE() << spec.InstanceKey() << " on " << Device{isa, threads}.Name() << " ["
                          << i << "] " << out[i] << " vs " << ref[i];
          }
        }
      }
    }
  }
  ThreadPool pool_{{.num_threads = 1, .name = "cm-test"}};
};

TEST_F(KernelCorrectnessTest, GemmAllOrdersAndUnrolls) {
  for (LoopOrder order : {LoopOrder::kIKJ, LoopOrder::kIJK, LoopOrder::kJKI}) {
    for (int unroll : {1, 2, 4, 8}) {
      KernelSpec s;
      s.gemm = GemmParams{
          .m = 13, .n = 37, .k = 29, .mt = 4, .nt = 16, .kt = 16, .order = order, .unroll = unroll};
      Check(s);
    }
  }
}

TEST_F(KernelCorrectnessTest, Convolutions) {
  for (KernelKind kind : {KernelKind::kConvDirect, KernelKind::kConvIm2col}) {
    for (int stride : {1, 2}) {
      KernelSpec s;
      s.kind = kind;
      s.conv = ConvParams{
          .batch = 2,
          .cin = 3,
          .h = 11,
          .w = 13,
          .cout = 5,
          .r = 3,
          .s = 3,
          .stride = stride,
          .pad = 1,
          .tile_co = 2,
          .tile_ow = 4,
          .gemm = GemmParams{.mt = 4, .nt = 16, .kt = 8, .order = LoopOrder::kIJK, .unroll = 2}};
      Check(s);
    }
  }
}

TEST_F(KernelCorrectnessTest, ElementwiseAndReductions) {
  for (EltOp op : {EltOp::kAdd, EltOp::kMul, EltOp::kRelu, EltOp::kGelu}) {
    KernelSpec s;
    s.kind = KernelKind::kElementwise;
    s.elt = EltParams{op, 1000};
    Check(s);
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kSoftmax}) {
    KernelSpec s;
    s.kind = KernelKind::kReduction;
    s.reduce = ReduceParams{op, 7, 53};
    Check(s);
  }
}

TEST(KernelInstanceTest, RejectsBadSpecs) {
  KernelSpec s;
  s.gemm.mt = 0;
  EXPECT_EQ(KernelInstance::Create(s, 1).status().code(), StatusCode::kInvalidArgument);
  s.gemm.mt = 8;
  s.gemm.unroll = 3;
  EXPECT_EQ(KernelInstance::Create(s, 1).status().code(), StatusCode::kInvalidArgument);
  s.gemm.unroll = 1;
  s.gemm.m = s.gemm.n = s.gemm.k = 4096;
  EXPECT_EQ(KernelInstance::Create(s, 1, 1 << 20).status().code(), StatusCode::kResourceExhausted);
}

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + std::to_string(getpid());
}

TEST(DatasetTest, RoundTrip) {
  Dataset ds;
  DeviceInfo d;
  d.device = Device{Isa::kAvx2, 2};
  d.peak_gflops = 50;
  d.mem_gbps = 12.5;
  ds.devices.push_back(d);
  KernelSpec conv;
  conv.kind = KernelKind::kConvIm2col;
  conv.shape_group = "cnn";
  ds.samples.push_back(MakeSample(
      0, HandGemm(LoopOrder::kIJK), d,
      Timing{.median_s = 1.5e-5, .cv = 0.02, .iqr_rel = 0.01, .min_s = 1.5e-5, .runs = 20}));
  ds.samples.push_back(MakeSample(
      1, conv, d,
      Timing{.median_s = 2.5e-4, .cv = 0.01, .iqr_rel = 0.01, .min_s = 2.5e-4, .runs = 7}));
  const std::string path = TempPath("cm_ds");
  ASSERT_TRUE(WriteDataset(ds, path).ok());
  Result<Dataset> back = ReadDataset(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->devices.size(), 1u);
  EXPECT_EQ(back->devices[0].device.Name(), "avx2x2");
  EXPECT_DOUBLE_EQ(back->devices[0].mem_gbps, 12.5);
  ASSERT_EQ(back->samples.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const Sample& a = ds.samples[i];
    const Sample& b = back->samples[i];
    EXPECT_EQ(b.instance_key, a.instance_key);
    EXPECT_EQ(b.spec.InstanceKey(), a.spec.InstanceKey());
    EXPECT_EQ(b.spec.shape_group, a.spec.shape_group);
    EXPECT_DOUBLE_EQ(b.latency_s, a.latency_s);
    EXPECT_EQ(b.runs, a.runs);
    EXPECT_DOUBLE_EQ(b.iqr_rel, 0.01);
    EXPECT_EQ(b.leaf_pos, a.leaf_pos);
    EXPECT_EQ(b.leaves, a.leaves);
    EXPECT_EQ(b.num_nodes, a.num_nodes);
  }
  EXPECT_EQ(back->samples[1].leaves.size(), 2u);  // im2col copy + GEMM
  std::remove(path.c_str());
}

TEST(DatasetTest, BadInputNamesFileAndLine) {
  const std::string path = TempPath("cm_bad");
  { std::ofstream(path) << "{\"format\":\"loom.costmodel.dataset\",\"leaf_features\":[]}\n"; }
  Result<Dataset> r = ReadDataset(path);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(path + ":1"), std::string::npos) << r.status();
  Dataset ds;
  DeviceInfo d;
  ds.devices.push_back(d);
  ds.samples.push_back(
      MakeSample(0, HandGemm(LoopOrder::kIKJ), d,
                 Timing{.median_s = 1e-5, .cv = 0, .iqr_rel = 0.01, .min_s = 1e-5, .runs = 5}));
  ASSERT_TRUE(WriteDataset(ds, path).ok());
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  { std::ofstream(path) << text.substr(0, text.size() - 20); }  // truncated last line
  r = ReadDataset(path);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(path + ":2"), std::string::npos) << r.status();
  EXPECT_EQ(ReadDataset(path + ".missing").status().code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(CollectTest, SmallCollectionOnOneDevice) {
  CollectOptions o;
  o.num_samples = 6;
  o.devices = {Device{Isa::kScalar, 1}};
  o.devices_per_kernel = 1;
  o.pin_threads = false;
  o.max_flops = 1e6;
  o.min_runs = o.max_runs = 3;
  Result<Dataset> ds = Collect(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ(ds->samples.size(), 6u);
  EXPECT_GT(ds->devices[0].peak_gflops, 0);
  EXPECT_GT(ds->devices[0].mem_gbps, 0);
  for (const Sample& s : ds->samples) {
    EXPECT_GT(s.latency_s, 0);
    EXPECT_EQ(s.runs, 3);
    EXPECT_EQ(s.device, "scalarx1");
    EXPECT_FALSE(s.leaves.empty());
    EXPECT_LE(s.flops, 1e6);
  }
  // Same seed, same kernels.
  Result<Dataset> again = Collect(o);
  ASSERT_TRUE(again.ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(again->samples[i].instance_key, ds->samples[i].instance_key);
  }
}

}  // namespace
}  // namespace loom::trace::costmodel
