#include "loom/trace/costmodel/features.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace loom::trace::costmodel {
namespace {

float Log2p(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

enum Slot {
  kAdd,
  kMul,
  kFma,
  kDiv,
  kTrans,
  kCmp,
  kFlops,
  kBytesRead,
  kBytesWritten,
  kFootprint,
  kTileBytes,
  kIntensity,
  kExecCount,
  kExtent0,
  kDepth = kExtent0 + kMaxExtentSlots,
  kStride0,
  kStride1,
  kStrided,
  kMaxStride,
  kVecLanes,
  kUnroll,
  kThreads,
  kTileOverL1,
  kTileOverL2,
  kNumAccesses,
  kReduction,
  kVecRemainder,
  kEnd
};
static_assert(kEnd == kNumLeafFeatures);

std::vector<float> OneLeaf(const LeafContext& ctx, const CacheSizes& caches) {
  std::vector<float> f(kNumLeafFeatures, 0.f);
  const LeafStmt& leaf = *ctx.leaf;
  double exec = 1;
  for (const AstNode* l : ctx.loops) exec *= static_cast<double>(l->extent);
  const OpCounts& o = leaf.ops;
  f[kAdd] = Log2p(o.add * exec);
  f[kMul] = Log2p(o.mul * exec);
  f[kFma] = Log2p(o.fma * exec);
  f[kDiv] = Log2p(o.div * exec);
  f[kTrans] = Log2p(o.transcendental * exec);
  f[kCmp] = Log2p(o.cmp * exec);
  const double flops = o.Flops() * exec;
  f[kFlops] = Log2p(flops);
  double read = 0, written = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> buffers;  // name -> footprint, tile
  int n_stride0 = 0, n_stride1 = 0, n_strided = 0;
  int64_t max_stride = 0;
  bool reduction = false;
  for (const BufferAccess& a : leaf.accesses) {
    (a.write ? written : read) += 4.0 * exec;
    auto& fp = buffers[a.buffer];
    fp.first = std::max(fp.first, a.footprint_bytes);
    fp.second = std::max(fp.second, a.tile_bytes);
    if (a.stride == 0)
      ++n_stride0;
    else if (a.stride == 1)
      ++n_stride1;
    else
      ++n_strided;
    max_stride = std::max(max_stride, a.stride);
    if (a.write && a.stride == 0) reduction = true;
  }
  if (leaf.name.rfind("acc", 0) == 0 || leaf.name.find("= max(") != std::string::npos) {
    reduction = true;
  }
  double footprint = 0, tile = 0;
  for (const auto& [name, fp] : buffers) {
    footprint += static_cast<double>(fp.first);
    tile += static_cast<double>(fp.second);
  }
  f[kBytesRead] = Log2p(read);
  f[kBytesWritten] = Log2p(written);
  f[kFootprint] = Log2p(footprint);
  f[kTileBytes] = Log2p(tile);
  f[kIntensity] = Log2p(footprint > 0 ? flops / footprint : 0);
  f[kExecCount] = Log2p(exec);
  for (int s = 0; s < kMaxExtentSlots && s < static_cast<int>(ctx.loops.size()); ++s) {
    f[kExtent0 + s] = Log2p(ctx.loops[ctx.loops.size() - 1 - s]->extent);
  }
  f[kDepth] = static_cast<float>(ctx.loops.size());
  const double n_acc = std::max<size_t>(leaf.accesses.size(), 1);
  f[kStride0] = static_cast<float>(n_stride0 / n_acc);
  f[kStride1] = static_cast<float>(n_stride1 / n_acc);
  f[kStrided] = static_cast<float>(n_strided / n_acc);
  f[kMaxStride] = Log2p(static_cast<double>(max_stride));
  int lanes = 1, unroll = 1, threads = 1;
  for (const AstNode* l : ctx.loops) {
    if (l->annot == LoopAnnot::kUnroll) unroll = std::max(unroll, l->annot_factor);
    if (l->annot == LoopAnnot::kParallel) threads = std::max(threads, l->annot_factor);
  }
  const AstNode* inner = ctx.loops.empty() ? nullptr : ctx.loops.back();
  if (inner != nullptr && inner->annot == LoopAnnot::kVectorize) lanes = inner->annot_factor;
  f[kVecLanes] = static_cast<float>(std::log2(lanes));
  f[kUnroll] = static_cast<float>(std::log2(unroll));
  f[kThreads] = static_cast<float>(threads);
  f[kTileOverL1] = static_cast<float>(std::log2(std::max(tile, 1.0) / caches.l1d_bytes));
  f[kTileOverL2] = static_cast<float>(std::log2(std::max(tile, 1.0) / caches.l2_bytes));
  f[kNumAccesses] = static_cast<float>(leaf.accesses.size());
  f[kReduction] = reduction ? 1.f : 0.f;
  if (inner != nullptr && lanes > 1) {
    f[kVecRemainder] = static_cast<float>(inner->extent % lanes) / static_cast<float>(lanes);
  }
  return f;
}

}  // namespace

CacheSizes HostCacheSizes() {
  CacheSizes c;
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
       l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l1 > 0) c.l1d_bytes = l1;
  if (l2 > 0) c.l2_bytes = l2;
  if (l3 > 0) c.l3_bytes = l3;
  return c;
}

const std::vector<std::string>& LeafFeatureNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> n = {"log2_add",       "log2_mul",        "log2_fma",
                                  "log2_div",       "log2_transc",     "log2_cmp",
                                  "log2_flops",     "log2_bytes_read", "log2_bytes_written",
                                  "log2_footprint", "log2_tile_bytes", "log2_intensity",
                                  "log2_exec_count"};
    for (int i = 0; i < kMaxExtentSlots; ++i) n.push_back("log2_extent_inner" + std::to_string(i));
    for (const char* s :
         {"depth", "frac_stride0", "frac_stride1", "frac_strided", "log2_max_stride",
          "log2_vec_lanes", "log2_unroll", "threads", "log2_tile_over_l1", "log2_tile_over_l2",
          "num_accesses", "reduction", "vec_remainder"}) {
      n.push_back(s);
    }
    return n;
  }();
  return kNames;
}

const std::vector<std::string>& DeviceFeatureNames() {
  static const std::vector<std::string> kNames = {
      "log2_lanes",  "threads",          "log2_l1d_kib",  "log2_l2_kib",
      "log2_l3_mib", "log2_peak_gflops", "log2_mem_gbps", "log2_ridge_flops_per_byte"};
  return kNames;
}

std::vector<std::vector<float>> LeafFeatures(const Ast& ast, const CacheSizes& caches) {
  std::vector<std::vector<float>> out;
  for (const LeafContext& ctx : ast.Leaves()) out.push_back(OneLeaf(ctx, caches));
  return out;
}

std::vector<int> LeafPositions(const Ast& ast) {
  std::vector<int> pos;
  for (const LeafContext& ctx : ast.Leaves()) pos.push_back(ctx.preorder_index);
  return pos;
}

std::vector<float> PositionalEncoding(int pos, int dim) {
  std::vector<float> pe(dim);
  for (int i = 0; i < dim; i += 2) {
    const double angle = pos / std::pow(10000.0, static_cast<double>(i) / dim);
    pe[i] = static_cast<float>(std::sin(angle));
    if (i + 1 < dim) pe[i + 1] = static_cast<float>(std::cos(angle));
  }
  return pe;
}

std::vector<float> DeviceVector(const DeviceInfo& d) {
  const double peak = std::max(d.peak_gflops, 1e-3), bw = std::max(d.mem_gbps, 1e-3);
  return {static_cast<float>(std::log2(IsaLanes(d.device.isa))),
          static_cast<float>(d.device.threads),
          static_cast<float>(std::log2(d.caches.l1d_bytes / 1024.0)),
          static_cast<float>(std::log2(d.caches.l2_bytes / 1024.0)),
          static_cast<float>(std::log2(d.caches.l3_bytes / 1048576.0)),
          static_cast<float>(std::log2(peak)),
          static_cast<float>(std::log2(bw)),
          static_cast<float>(std::log2(peak / bw))};
}

std::vector<float> PoolLeaves(const std::vector<std::vector<float>>& leaves) {
  std::vector<float> out(2 * kNumLeafFeatures + 1, 0.f);
  for (int i = 0; i < kNumLeafFeatures; ++i) out[kNumLeafFeatures + i] = -1e30f;
  for (const auto& l : leaves) {
    for (int i = 0; i < kNumLeafFeatures; ++i) {
      out[i] += l[i];
      out[kNumLeafFeatures + i] = std::max(out[kNumLeafFeatures + i], l[i]);
    }
  }
  if (leaves.empty()) std::fill(out.begin() + kNumLeafFeatures, out.end(), 0.f);
  out[2 * kNumLeafFeatures] = static_cast<float>(leaves.size());
  return out;
}

}  // namespace loom::trace::costmodel
