// loom's own CUDA kernels for the single-GPU overlap experiments; see overlap_cuda_kernels.h.
//
// The GEMM is deliberately simple (WMMA 16x16x16 fragments, single shared-memory stage with a
// register prefetch of the next K slice): correct for fp16/bf16 inputs with fp32 accumulation,
// not tuned. Its gap to cuBLAS is reported by experiment (a); the overlap experiments compare
// variants of this same kernel, so the gap cancels out of their ratios.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdio>
#include <cstdlib>

#include "loom/overlap/cuda/overlap_cuda_kernels.h"

namespace loom::overlap::cuda {
namespace {

constexpr int kLdA = kTileK + 8;  // padded shared-memory row pitch of the A tile (elements)
constexpr int kLdB = kTileN + 8;  // padded shared-memory row pitch of the B tile (elements)

template <typename T>
struct SmemTiles {
  T a[kTileM * kLdA];
  T b[kTileK * kLdB];
};

void CheckLaunch(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "launch of %s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(3);
  }
}

void CheckShape(const char* what, int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0 || m % kTileM != 0 || n % kTileN != 0 || k % kTileK != 0) {
    std::fprintf(stderr, "%s: shape M=%d N=%d K=%d is not a multiple of the %dx%dx%d tile\n", what,
                 m, n, k, kTileM, kTileN, kTileK);
    std::exit(2);
  }
}

__device__ __forceinline__ uint32_t LoadAcquireGpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t LoadAcquireSys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void StoreReleaseGpu(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void StoreReleaseSys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void AddReleaseGpu(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void RecordError(DeviceError* err, int code, int index, uint32_t seen, uint32_t want) {
  if (err == nullptr) return;
  if (atomicCAS(&err->code, kNoError, code) == kNoError) {
    err->index = index;
    err->observed = seen;
    err->expected = want;
    __threadfence_system();
  }
}

// Spins until *flag >= target (acquire, gpu or sys scope). Gives up after timeout_ns, recording
// the failure, or at once when an earlier spin already failed (so one missing signal costs one
// timeout, not one per tile). Returns whether the flag was seen.
template <bool kSysScope>
__device__ bool SpinAtLeast(const uint32_t* flag, uint32_t target, DeviceError* err, int code,
                            int index, long long timeout_ns, bool backoff) {
  const unsigned long long start = GlobalTimerNs();
  uint32_t seen = 0;
  for (unsigned iter = 1;; ++iter) {
    seen = kSysScope ? LoadAcquireSys(flag) : LoadAcquireGpu(flag);
    if (seen >= target) return true;
    if ((iter & 255u) == 0) {
      if (err != nullptr && *reinterpret_cast<volatile int*>(&err->code) != kNoError) return false;
      if (static_cast<long long>(GlobalTimerNs() - start) > timeout_ns) {
        RecordError(err, code, index, seen, target);
        return false;
      }
    }
    if (backoff) __nanosleep(64);
  }
}

// One 128 x 128 tile: c[0:128, 0:128] = a[0:128, 0:k] * b[0:k, 0:128] (all row-major with the
// given pitches). a is read with plain (coherent) loads: in the AG experiment the copy engine fills
// it while the kernel runs, so the read-only (.nc) path must not be used for it.
template <typename T>
__device__ void ComputeTile(const T* a, int lda, const T* __restrict__ b, int ldb, int k, float* c,
                            int ldc, SmemTiles<T>& s) {
  using namespace nvcuda;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int wm = warp / 4;  // 2 x 4 warps, each owning 64 x 32 of the tile
  const int wn = warp % 4;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }
  // Each thread moves 2 x 16 bytes of the A slice (128 x 32) and of the B slice (32 x 128).
  uint4 ra[2];
  uint4 rb[2];
  auto load_global = [&](int k0) {
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      const int idx = tid + v * kGemmThreads;
      const int ar = idx / 4, ac = (idx % 4) * 8;
      ra[v] = *reinterpret_cast<const uint4*>(a + static_cast<size_t>(ar) * lda + k0 + ac);
      const int br = idx / 16, bc = (idx % 16) * 8;
      rb[v] = *reinterpret_cast<const uint4*>(b + static_cast<size_t>(k0 + br) * ldb + bc);
    }
  };
  auto store_shared = [&]() {
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      const int idx = tid + v * kGemmThreads;
      *reinterpret_cast<uint4*>(&s.a[(idx / 4) * kLdA + (idx % 4) * 8]) = ra[v];
      *reinterpret_cast<uint4*>(&s.b[(idx / 16) * kLdB + (idx % 16) * 8]) = rb[v];
    }
  };
  load_global(0);
  for (int k0 = 0; k0 < k; k0 += kTileK) {
    store_shared();
    __syncthreads();
    if (k0 + kTileK < k) load_global(k0 + kTileK);  // overlaps the MMAs below
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(fa[i], &s.a[(wm * 64 + i * 16) * kLdA + kk], kLdA);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], &s.b[kk * kLdB + wn * 32 + j * 16], kLdB);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float* dst = c + static_cast<size_t>(wm * 64 + i * 16) * ldc + wn * 32 + j * 16;
      wmma::store_matrix_sync(dst, acc[i][j], ldc, wmma::mem_row_major);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kGemmThreads, 2) TileGemmKernel(TileGemmArgs args) {
  __shared__ __align__(128) SmemTiles<T> s;
  const int tiles_m = args.m / kTileM;
  const int tiles_n = args.n / kTileN;
  const int t = static_cast<int>(blockIdx.x);
  const int mt = (t / tiles_n + args.row_tile_rotation) % tiles_m;
  const int row0 = mt * kTileM;
  const int col0 = (t % tiles_n) * kTileN;
  if (args.flags != nullptr) {
    if (threadIdx.x == 0) {
      const int first = row0 / args.rows_per_flag;
      const int last = (row0 + kTileM - 1) / args.rows_per_flag;
      for (int f = first; f <= last; ++f) {
        if (!SpinAtLeast<false>(args.flags + f, args.epoch, args.error, kFlagTimeout, f,
                                args.timeout_ns, /*backoff=*/true)) {
          break;
        }
      }
    }
    __syncthreads();  // extends thread 0's acquire to the whole block (bar.sync is CTA-ordering)
  }
  float* c = args.c;
  if (args.c_remote != nullptr && (row0 < args.own_row0 || row0 >= args.own_row0 + args.own_rows)) {
    c = args.c_remote;
  }
  const T* a = static_cast<const T*>(args.a) + static_cast<size_t>(row0) * args.k;
  const T* b = static_cast<const T*>(args.b) + col0;
  ComputeTile<T>(a, args.k, b, args.n, args.k, c + static_cast<size_t>(row0) * args.n + col0,
                 args.n, s);
}

// Communication role of the persistent kernel: dispatch chunks pull A rows from mapped host
// memory (16-byte loads, 4 in flight per thread), combine chunks push finished C rows out.
template <typename T>
__device__ void CommunicationRole(const GroupedSplitArgs& g) {
  const int tid = threadIdx.x;
  for (int ci = static_cast<int>(blockIdx.x); ci < g.num_chunks; ci += g.comm_blocks) {
    const CommChunk ch = g.chunks[ci];
    if (ch.kind == kDispatch) {
      const size_t offset = static_cast<size_t>(ch.row0) * g.k * sizeof(T);
      const uint4* src =
          reinterpret_cast<const uint4*>(static_cast<const char*>(g.a_host) + offset);
      uint4* dst = reinterpret_cast<uint4*>(static_cast<char*>(g.a) + offset);
      const size_t nvec = static_cast<size_t>(ch.rows) * g.k * sizeof(T) / sizeof(uint4);
      size_t v = tid;
      for (; v + 3 * kGemmThreads < nvec; v += 4 * kGemmThreads) {
        uint4 x0 = src[v], x1 = src[v + kGemmThreads], x2 = src[v + 2 * kGemmThreads],
              x3 = src[v + 3 * kGemmThreads];
        dst[v] = x0;
        dst[v + kGemmThreads] = x1;
        dst[v + 2 * kGemmThreads] = x2;
        dst[v + 3 * kGemmThreads] = x3;
      }
      for (; v < nvec; v += kGemmThreads) dst[v] = src[v];
      __syncthreads();
      if (tid == 0) StoreReleaseGpu(g.flags + ch.signal, g.epoch);  // cumulative over the block
    } else {
      if (tid == 0) {
        SpinAtLeast<false>(g.counters + ch.signal, ch.target, g.error, kCounterTimeout, ch.signal,
                           g.timeout_ns, /*backoff=*/true);
      }
      __syncthreads();
      const size_t offset = static_cast<size_t>(ch.row0) * g.n;
      const float4* src = reinterpret_cast<const float4*>(g.c + offset);
      float4* dst = reinterpret_cast<float4*>(g.c_host + offset);
      const size_t nvec = static_cast<size_t>(ch.rows) * g.n / 4;
      for (size_t v = tid; v < nvec; v += kGemmThreads) dst[v] = __ldcg(src + v);  // skip L1
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kGemmThreads, 2) GroupedSplitKernel(GroupedSplitArgs g) {
  __shared__ __align__(128) SmemTiles<T> s;
  if (static_cast<int>(blockIdx.x) < g.comm_blocks) {
    CommunicationRole<T>(g);
    return;
  }
  const int workers = static_cast<int>(gridDim.x) - g.comm_blocks;
  const T* a_all = static_cast<const T*>(g.a);
  const T* b_all = static_cast<const T*>(g.b);
  for (int t = static_cast<int>(blockIdx.x) - g.comm_blocks; t < g.num_tiles; t += workers) {
    const GroupedTile tile = g.tiles[t];
    if (g.use_signals && tile.wait_flag >= 0) {
      if (threadIdx.x == 0) {
        SpinAtLeast<false>(g.flags + tile.wait_flag, g.epoch, g.error, kFlagTimeout, tile.wait_flag,
                           g.timeout_ns, /*backoff=*/true);
      }
      __syncthreads();
    }
    const T* a = a_all + static_cast<size_t>(tile.row0) * g.k;
    const T* b = b_all + static_cast<size_t>(tile.expert) * g.k * g.n + tile.n0;
    ComputeTile<T>(a, g.k, b, g.n, g.k, g.c + static_cast<size_t>(tile.row0) * g.n + tile.n0, g.n,
                   s);
    if (g.use_signals && tile.done_counter >= 0) {
      __syncthreads();  // every warp's stores precede thread 0's release
      if (threadIdx.x == 0) AddReleaseGpu(g.counters + tile.done_counter, 1);
    }
  }
}

template <typename T>
__global__ void FillKernel(T* dst, size_t count, uint32_t seed, size_t index_base) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<T>(HashUniform(seed, index_base + i));
  }
}

__global__ void CountMismatchKernel(const float* a, const float* b, size_t n,
                                    unsigned long long* count) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    local += __float_as_uint(a[i]) != __float_as_uint(b[i]) ? 1 : 0;
  }
  if (local != 0) atomicAdd(count, local);
}

__global__ void SetFlagsKernel(uint32_t* flags, int count, uint32_t value) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) flags[i] = value;
}

__global__ void PingPongMappedKernel(const uint32_t* h2d, uint32_t* d2h, uint32_t base, int iters,
                                     unsigned long long* device_ns, DeviceError* error,
                                     long long timeout_ns) {
  const unsigned long long start = GlobalTimerNs();
  for (int i = 1; i <= iters; ++i) {
    if (!SpinAtLeast<true>(h2d, base + i, error, kPingTimeout, i, timeout_ns, false)) break;
    StoreReleaseSys(d2h, base + i);
  }
  *device_ns = GlobalTimerNs() - start;
}

__global__ void StreamWriteEchoKernel(const uint32_t* dev_flag, uint32_t* d2h, uint32_t base,
                                      int iters, unsigned long long* device_ns, DeviceError* error,
                                      long long timeout_ns) {
  const unsigned long long start = GlobalTimerNs();
  for (int i = 1; i <= iters; ++i) {
    if (!SpinAtLeast<true>(dev_flag, base + i, error, kPingTimeout, i, timeout_ns, false)) break;
    StoreReleaseSys(d2h, base + i);
  }
  *device_ns = GlobalTimerNs() - start;
}

}  // namespace

const char* ElemTypeName(ElemType t) { return t == ElemType::kF16 ? "fp16" : "bf16"; }

void LaunchTileGemm(ElemType type, const TileGemmArgs& args, cudaStream_t stream) {
  CheckShape("LaunchTileGemm", args.m, args.n, args.k);
  if (args.flags != nullptr && (args.rows_per_flag <= 0 || args.error == nullptr)) {
    std::fprintf(stderr, "LaunchTileGemm: flags need rows_per_flag > 0 and an error word\n");
    std::exit(2);
  }
  if (args.c_remote != nullptr && (args.own_row0 % kTileM != 0 || args.own_rows % kTileM != 0)) {
    std::fprintf(stderr, "LaunchTileGemm: own segment [%d, +%d) is not tile aligned\n",
                 args.own_row0, args.own_rows);
    std::exit(2);
  }
  const dim3 grid((args.m / kTileM) * (args.n / kTileN));
  if (type == ElemType::kF16) {
    TileGemmKernel<__half><<<grid, kGemmThreads, 0, stream>>>(args);
  } else {
    TileGemmKernel<__nv_bfloat16><<<grid, kGemmThreads, 0, stream>>>(args);
  }
  CheckLaunch("TileGemmKernel");
}

int GroupedSplitBlocksPerSm(ElemType type) {
  int blocks = 0;
  cudaError_t err = type == ElemType::kF16
                        ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                              &blocks, GroupedSplitKernel<__half>, kGemmThreads, 0)
                        : cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                              &blocks, GroupedSplitKernel<__nv_bfloat16>, kGemmThreads, 0);
  if (err != cudaSuccess || blocks <= 0) {
    std::fprintf(stderr, "occupancy query for GroupedSplitKernel failed: %s\n",
                 cudaGetErrorString(err));
    std::exit(3);
  }
  return blocks;
}

void LaunchGroupedSplit(ElemType type, const GroupedSplitArgs& args, int grid,
                        cudaStream_t stream) {
  CheckShape("LaunchGroupedSplit", args.m, args.n, args.k);
  if (args.comm_blocks < 0 || args.comm_blocks >= grid ||
      (args.comm_blocks == 0 && args.use_signals && args.num_chunks > 0)) {
    std::fprintf(stderr,
                 "LaunchGroupedSplit: %d communication blocks of %d cannot serve %d chunks\n",
                 args.comm_blocks, grid, args.num_chunks);
    std::exit(2);
  }
  if (type == ElemType::kF16) {
    GroupedSplitKernel<__half><<<grid, kGemmThreads, 0, stream>>>(args);
  } else {
    GroupedSplitKernel<__nv_bfloat16><<<grid, kGemmThreads, 0, stream>>>(args);
  }
  CheckLaunch("GroupedSplitKernel");
}

void LaunchFill(ElemType type, void* dst, size_t count, uint32_t seed, size_t index_base,
                cudaStream_t stream) {
  if (type == ElemType::kF16) {
    FillKernel<__half>
        <<<1024, 256, 0, stream>>>(static_cast<__half*>(dst), count, seed, index_base);
  } else {
    FillKernel<__nv_bfloat16>
        <<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), count, seed, index_base);
  }
  CheckLaunch("FillKernel");
}

void LaunchCountMismatch(const float* a, const float* b, size_t n, unsigned long long* count,
                         cudaStream_t stream) {
  CountMismatchKernel<<<1024, 256, 0, stream>>>(a, b, n, count);
  CheckLaunch("CountMismatchKernel");
}

void LaunchSetFlags(uint32_t* flags, int count, uint32_t value, cudaStream_t stream) {
  SetFlagsKernel<<<1, 256, 0, stream>>>(flags, count, value);
  CheckLaunch("SetFlagsKernel");
}

void LaunchPingPongMapped(const uint32_t* h2d, uint32_t* d2h, uint32_t base, int iters,
                          unsigned long long* device_ns, DeviceError* error, long long timeout_ns,
                          cudaStream_t stream) {
  PingPongMappedKernel<<<1, 1, 0, stream>>>(h2d, d2h, base, iters, device_ns, error, timeout_ns);
  CheckLaunch("PingPongMappedKernel");
}

void LaunchStreamWriteEcho(const uint32_t* dev_flag, uint32_t* d2h, uint32_t base, int iters,
                           unsigned long long* device_ns, DeviceError* error, long long timeout_ns,
                           cudaStream_t stream) {
  StreamWriteEchoKernel<<<1, 1, 0, stream>>>(dev_flag, d2h, base, iters, device_ns, error,
                                             timeout_ns);
  CheckLaunch("StreamWriteEchoKernel");
}

}  // namespace loom::overlap::cuda
