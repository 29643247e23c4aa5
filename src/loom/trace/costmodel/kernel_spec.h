// The kernel space of the CDMPP-style latency predictor: what a loom-owned kernel instance is.
//
// A KernelSpec names one kernel (tiled GEMM, direct or im2col 2-D convolution, elementwise op,
// row reduction) with its shape and schedule parameters (tiles, loop order, unroll). A Device is
// where it runs: an ISA build (scalar, AVX2, AVX-512, chosen by runtime dispatch) times a thread
// count (1 or 2). "Devices" here are ISA/thread variants on the same host sharing one memory
// hierarchy (same L1/L2/L3, same DRAM), not distinct hardware.
//
// The same spec drives the generated kernel (kernels.h, templates instantiated per ISA) and the
// loop-nest AST (ast.h) that the models read, so the AST describes exactly the code that runs.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom::trace::costmodel {

enum class KernelKind { kGemm, kConvDirect, kConvIm2col, kElementwise, kReduction };
// Order of the three innermost (intra-tile) loops of a GEMM tile: i over M, j over N, k over K.
enum class LoopOrder { kIKJ, kIJK, kJKI };
enum class EltOp { kAdd, kMul, kRelu, kGelu };
enum class ReduceOp { kSum, kMax, kSoftmax };
enum class Isa { kScalar, kAvx2, kAvx512 };

std::string_view KernelKindName(KernelKind k);
std::string_view LoopOrderName(LoopOrder o);
std::string_view EltOpName(EltOp o);
std::string_view ReduceOpName(ReduceOp o);
std::string_view IsaName(Isa isa);
// Float lanes per vector register: 1, 8, 16.
int IsaLanes(Isa isa);

// C[m,n] += A[m,k] * B[k,n], row-major, tiles mt x nt x kt; `unroll` in {1,2,4,8} unrolls the
// middle intra-tile loop (k for IKJ/IJK/JKI) into that many independent streams.
struct GemmParams {
  int64_t m = 64, n = 64, k = 64;
  int mt = 32, nt = 64, kt = 64;
  LoopOrder order = LoopOrder::kIKJ;
  int unroll = 1;
};

// NCHW convolution, filter [cout, cin, r, s], input pre-padded (pad copy not timed).
// Direct: tiles tile_co (output channels) x tile_ow (output columns).
// Im2col: col[cin*r*s, oh*ow] per image, then GEMM with `gemm` tiles/order/unroll.
struct ConvParams {
  int64_t batch = 1, cin = 8, h = 16, w = 16, cout = 8;
  int r = 3, s = 3, stride = 1, pad = 1;
  int tile_co = 4, tile_ow = 16;
  GemmParams gemm;  // only tiles/order/unroll are used (im2col variant)
  int64_t OutH() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t OutW() const { return (w + 2 * pad - s) / stride + 1; }
};

struct EltParams {
  EltOp op = EltOp::kAdd;
  int64_t size = 1024;
};

// Row-wise over a [rows, cols] matrix: sum/max -> [rows]; softmax -> [rows, cols].
struct ReduceParams {
  ReduceOp op = ReduceOp::kSum;
  int64_t rows = 16, cols = 256;
};

struct KernelSpec {
  KernelKind kind = KernelKind::kGemm;
  GemmParams gemm;
  ConvParams conv;
  EltParams elt;
  ReduceParams reduce;
  // Which "network" family the shape was drawn from (cross-model split key), e.g. "mlp".
  std::string shape_group = "synthetic";

  // Shape only (no schedule), e.g. "gemm:m=128,n=64,k=256": the held-out-shape split key.
  std::string ShapeKey() const;
  // Shape + schedule, device-independent: identifies the kernel instance across devices.
  std::string InstanceKey() const;
  // Floating-point operations (an FMA counts 2) and compulsory DRAM bytes (each buffer once).
  double Flops() const;
  double CompulsoryBytes() const;
};

struct Device {
  Isa isa = Isa::kScalar;
  int threads = 1;
  std::string Name() const;  // "avx2x2"
};

nlohmann::json SpecToJson(const KernelSpec& spec);
Result<KernelSpec> SpecFromJson(const nlohmann::json& j);
Result<Device> DeviceFromName(std::string_view name);

}  // namespace loom::trace::costmodel
