// Device side of the single-GPU overlap experiments (issue 7, spec §10): loom's own tile GEMM
// (WMMA mma.sync on fp16/bf16, fp32 accumulate, 128x128x32 block tiles, 8 warps of 64x32) with
// two overlap hooks, a persistent "Comet" kernel that splits its resident blocks into
// communication and compute roles, and the flag ping-pong kernels of the latency probe.
//
// Hooks of TileGemm:
//   * AG signals: before reading its 128 rows of A a tile waits (thread 0, ld.acquire.gpu) until
//     every flag covering those rows is >= epoch; flags are written by the copy stream
//     (cuStreamWriteValue32 after each chunk's cudaMemcpyAsync) or pre-set (overlap tax).
//   * RS epilogue: rows outside the own segment are stored to c_remote (mapped host memory, the
//     "remote ranks") instead of c, i.e. an SM-driven remote store like FLUX on Ampere.
//   * Tile order: row tile t runs as (t + row_tile_rotation) mod tiles_m ("own shard first" for
//     AG, "segment rank+1 first, own segment last" for RS).
//
// Every spin is bounded by %globaltimer (timeout_ns) and, on expiry, records the first failure
// (which flag, value seen, value wanted) in DeviceError and gives up waiting (the results are
// then garbage and the host reports the dump), so a missing signal never hangs the device.
//
// Shapes must be multiples of the tile: M % 128, N % 128, K % 32 (the launchers check and abort
// with the offending shape; the benchmark only uses such shapes).
//
// Thread-safety: launchers are plain stream launches; callers own stream ordering.
#ifndef LOOM_OVERLAP_CUDA_OVERLAP_CUDA_KERNELS_H_
#define LOOM_OVERLAP_CUDA_OVERLAP_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace loom::overlap::cuda {

inline constexpr int kTileM = 128;
inline constexpr int kTileN = 128;
inline constexpr int kTileK = 32;
inline constexpr int kGemmThreads = 256;

enum class ElemType { kF16, kBF16 };
const char* ElemTypeName(ElemType t);
inline size_t ElemBytes(ElemType) { return 2; }

// First failure of a bounded spin, written by the device, read and cleared by the host.
enum DeviceErrorCode : int {
  kNoError = 0,
  kFlagTimeout = 1,     // a GEMM tile waited for an AG chunk flag (index = flag)
  kCounterTimeout = 2,  // a combine block waited for a tile-done counter (index = counter)
  kPingTimeout = 3,     // the latency probe waited for the host (index = iteration)
};
struct DeviceError {
  int code;
  int index;
  unsigned observed;
  unsigned expected;
};

// Deterministic test data: value(seed, i) uniform in [-1, 1] (then rounded to the element type).
__host__ __device__ inline float HashUniform(uint32_t seed, uint64_t i) {
  uint64_t x = (static_cast<uint64_t>(seed) << 32) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

struct TileGemmArgs {
  const void* a = nullptr;  // M x K row-major (device memory; may be filled while the kernel runs)
  const void* b = nullptr;  // K x N row-major
  float* c = nullptr;       // M x N row-major
  int m = 0, n = 0, k = 0;
  // AG signals (optional): flags[f] covers A rows [f * rows_per_flag, (f + 1) * rows_per_flag).
  const uint32_t* flags = nullptr;
  int rows_per_flag = 0;
  uint32_t epoch = 0;
  // RS epilogue (optional): rows outside [own_row0, own_row0 + own_rows) go to c_remote, which has
  // c's layout (only the remote rows of it are written). Both bounds multiples of kTileM.
  float* c_remote = nullptr;
  int own_row0 = 0;
  int own_rows = 0;
  int row_tile_rotation = 0;
  DeviceError* error = nullptr;
  long long timeout_ns = 500000000ll;  // 0.5 s: legit waits are milliseconds
};
void LaunchTileGemm(ElemType type, const TileGemmArgs& args, cudaStream_t stream);

// One 128 x 128 output tile of the grouped GEMM: C[row0:+128, n0:+128] =
// A[row0:+128, :] * B_expert[:, n0:+128]. wait_flag >= 0: wait for that dispatch flag first;
// done_counter >= 0: release-add 1 to that counter after the tile is stored.
struct GroupedTile {
  int expert;
  int row0;
  int n0;
  int wait_flag;
  int done_counter;
};
enum CommChunkKind : int { kDispatch = 0, kCombine = 1 };
// Work of a communication block. kDispatch: copy A rows [row0, row0 + rows) from a_host to a, then
// set flags[signal] = epoch. kCombine: wait until counters[signal] >= target, then copy C rows
// [row0, row0 + rows) to c_host.
struct CommChunk {
  int kind;
  int row0;
  int rows;
  int signal;
  unsigned target;
};
struct GroupedSplitArgs {
  const void* a_host = nullptr;  // M x K, mapped host memory (device pointer); remote rows used
  void* a = nullptr;             // M x K device
  const void* b = nullptr;       // experts x K x N device
  float* c = nullptr;            // M x N device
  float* c_host = nullptr;       // M x N, mapped host memory (device pointer); remote rows used
  int m = 0, n = 0, k = 0;
  const GroupedTile* tiles = nullptr;  // in consumption order
  int num_tiles = 0;
  const CommChunk* chunks = nullptr;  // dispatch chunks first, then combine chunks
  int num_chunks = 0;
  uint32_t* flags = nullptr;     // one per dispatch chunk, zeroed by the caller before launch
  uint32_t* counters = nullptr;  // one per combined row tile, zeroed by the caller before launch
  uint32_t epoch = 1;
  int comm_blocks = 0;      // blocks [0, comm_blocks) communicate, the rest compute
  bool use_signals = true;  // false: compute tiles ignore wait_flag/done_counter (t_comp runs)
  DeviceError* error = nullptr;
  long long timeout_ns = 500000000ll;  // 0.5 s: legit waits are milliseconds
};
// Resident blocks per SM of the persistent kernel (grid = SMs x this keeps every block resident,
// which the spin-waits between blocks require).
int GroupedSplitBlocksPerSm(ElemType type);
void LaunchGroupedSplit(ElemType type, const GroupedSplitArgs& args, int grid, cudaStream_t stream);

// dst[i] = value(seed, index_base + i) for i < count.
void LaunchFill(ElemType type, void* dst, size_t count, uint32_t seed, size_t index_base,
                cudaStream_t stream);
// flags[i] = value for i < count.
void LaunchSetFlags(uint32_t* flags, int count, uint32_t value, cudaStream_t stream);

// *count += number of i < n with bits(a[i]) != bits(b[i]).
void LaunchCountMismatch(const float* a, const float* b, size_t n, unsigned long long* count,
                         cudaStream_t stream);

// Latency probes (one thread each). Mapped ping-pong: for i in 1..iters, wait until
// *h2d >= base + i, then store *d2h = base + i (both mapped host memory, .sys scope).
// Stream-write echo: wait until *dev_flag >= base + i (device memory written by
// cuStreamWriteValue32), then store *d2h = base + i. device_ns receives the kernel's own elapsed
// %globaltimer nanoseconds.
void LaunchPingPongMapped(const uint32_t* h2d, uint32_t* d2h, uint32_t base, int iters,
                          unsigned long long* device_ns, DeviceError* error, long long timeout_ns,
                          cudaStream_t stream);
void LaunchStreamWriteEcho(const uint32_t* dev_flag, uint32_t* d2h, uint32_t base, int iters,
                           unsigned long long* device_ns, DeviceError* error, long long timeout_ns,
                           cudaStream_t stream);

}  // namespace loom::overlap::cuda

#endif  // LOOM_OVERLAP_CUDA_OVERLAP_CUDA_KERNELS_H_
