// CDMPP-style compact AST features: a leaf feature sequence, its pre-order positional encoding,
// and a device vector.
//
// Leaf features (kNumLeafFeatures per leaf statement, names in LeafFeatureNames()): op counts by
// type, bytes read/written, footprints, arithmetic intensity, the extents of the enclosing loops
// (innermost first), innermost stride pattern, vector width, unroll, threads, tile footprint
// against L1/L2. Counts are log2(1 + x) so the values span a few units.
// Positions: pos = the leaf's index in the pre-order serialisation of the whole tree (loops and
// leaves, root = 0), as CDMPP's rawdata.py:ast_positional_encoding; the encoding is the
// sinusoidal sin/cos(pos / 10000^(2i/F)). Consumers normalise features first, then add the
// encoding (a later libtorch trainer reads leaves + positions from the dataset and does this).
// Device vector (kNumDeviceFeatures): ISA lanes, threads, L1/L2/L3 sizes (sysconf), measured peak
// GFLOP/s and memory GB/s of that device. Devices are ISA/thread variants of one host sharing one
// memory hierarchy, so the cache entries are equal for all devices.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/trace/costmodel/ast.h"
#include "loom/trace/costmodel/kernel_spec.h"

namespace loom::trace::costmodel {

inline constexpr int kNumLeafFeatures = 32;
inline constexpr int kNumDeviceFeatures = 8;
inline constexpr int kMaxExtentSlots = 6;

struct CacheSizes {
  int64_t l1d_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;
};
// From sysconf(_SC_LEVEL*_CACHE_SIZE), falling back to the defaults above when unknown (0).
CacheSizes HostCacheSizes();

struct DeviceInfo {
  Device device;
  CacheSizes caches;
  double peak_gflops = 0;  // measured: fastest L2-resident GEMM of this ISA x threads
  double mem_gbps = 0;     // measured: fastest streaming add (3 x 32 MiB) of this ISA x threads
};

const std::vector<std::string>& LeafFeatureNames();
const std::vector<std::string>& DeviceFeatureNames();

// One fixed-length vector per leaf, in pre-order.
std::vector<std::vector<float>> LeafFeatures(const Ast& ast, const CacheSizes& caches);
// Pre-order index of each leaf (same order as LeafFeatures).
std::vector<int> LeafPositions(const Ast& ast);
// CDMPP's sinusoidal encoding of one position, `dim` values.
std::vector<float> PositionalEncoding(int pos, int dim);
std::vector<float> DeviceVector(const DeviceInfo& info);

// Pooled program features for the tree/MLP baselines: per-feature sum over leaves, then max,
// then the number of leaves (2 * kNumLeafFeatures + 1 values). No positions.
std::vector<float> PoolLeaves(const std::vector<std::vector<float>>& leaves);

}  // namespace loom::trace::costmodel
