// Host-side plumbing shared by the single-GPU overlap experiments (issue 7, spec §10): error
// checks that turn CUDA/cuBLAS/driver failures into a message naming the call, a per-run context
// (streams, cuBLAS handle, the device error word every bounded spin reports into), medians over
// repetitions, a tiny JSON writer and the experiment entry points.
//
// Thread-safety: none; the benchmark is one host thread (which also plays the host side of the
// latency probe in experiment (e)).
//
// Status: compile-checked with nvcc 13 (-arch=sm_90a) on a machine without a GPU; never run.
#ifndef LOOM_OVERLAP_CUDA_OVERLAP_CUDA_COMMON_H_
#define LOOM_OVERLAP_CUDA_OVERLAP_CUDA_COMMON_H_

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/overlap/cuda/overlap_cuda_kernels.h"

// Aborts with the failing call and its error string. The benchmark is a throwaway process run by
// scripts/device/overlap_cuda.sh; a CUDA error leaves the context unusable, so there is nothing
// to recover (a timed-out spin is not a CUDA error: it is reported through DeviceError).
#define LOOM_CUDA_OK(expr)                                                      \
  do {                                                                          \
    cudaError_t loom_cuda_err_ = (expr);                                        \
    if (loom_cuda_err_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(loom_cuda_err_));                         \
      std::exit(3);                                                             \
    }                                                                           \
  } while (0)

#define LOOM_CUBLAS_OK(expr)                                                                  \
  do {                                                                                        \
    cublasStatus_t loom_cublas_st_ = (expr);                                                  \
    if (loom_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                           \
      std::fprintf(stderr, "%s:%d: %s failed: cuBLAS status %d\n", __FILE__, __LINE__, #expr, \
                   static_cast<int>(loom_cublas_st_));                                        \
      std::exit(3);                                                                           \
    }                                                                                         \
  } while (0)

#define LOOM_CU_OK(expr)                                                             \
  do {                                                                               \
    CUresult loom_cu_res_ = (expr);                                                  \
    if (loom_cu_res_ != CUDA_SUCCESS) {                                              \
      const char* loom_cu_msg_ = nullptr;                                            \
      cuGetErrorString(loom_cu_res_, &loom_cu_msg_);                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,      \
                   loom_cu_msg_ != nullptr ? loom_cu_msg_ : "unknown driver error"); \
      std::exit(3);                                                                  \
    }                                                                                \
  } while (0)

namespace loom::overlap::cuda {

// Robust summary of one variant's repetitions (milliseconds unless named otherwise).
struct Summary {
  double median = 0;
  double q1 = 0;  // 25th percentile
  double q3 = 0;  // 75th percentile
  double min = 0;
  int reps = 0;
};
Summary Summarize(std::vector<double> samples);

// Overlap efficiency E = (t_comp + t_comm - t_x) / min(t_comp, t_comm) (spec §9); 1 = perfect
// overlap, 0 = no overlap, negative = slower than running the two back to back.
double OverlapEfficiency(double t_comp, double t_comm, double t_x);

// Minimal JSON object writer: keys in insertion order, numbers printed with %.6g, nested values
// passed as already-serialised JSON text.
class JsonObject {
 public:
  JsonObject& Num(const std::string& key, double value);
  JsonObject& Int(const std::string& key, long long value);
  JsonObject& Bool(const std::string& key, bool value);
  JsonObject& Str(const std::string& key, const std::string& value);
  JsonObject& Raw(const std::string& key, const std::string& json);
  JsonObject& Stats(const std::string& key, const Summary& s);  // {median,q1,q3,min,reps}
  std::string Dump() const { return "{" + body_ + "}"; }

 private:
  void Key(const std::string& key);
  std::string body_;
};
std::string JsonArray(const std::vector<std::string>& items);
std::string JsonEscape(const std::string& s);

// Everything the experiments share. Created once by main().
struct Context {
  int device = 0;
  cudaDeviceProp prop{};
  int reps = 11;       // repetitions per variant (>= 5), variants interleaved within a repetition
  bool quick = false;  // fewer shapes (the script's --quick)
  // Both are blocking streams, so synchronous legacy-stream calls in setup code (cudaMemcpy,
  // cudaMemset) order after the work queued on them; they run concurrently with each other.
  cudaStream_t comp = nullptr;  // GEMM kernels
  cudaStream_t copy = nullptr;  // copy-engine transfers and stream-written flags
  cublasHandle_t cublas = nullptr;
  DeviceError* error = nullptr;       // device memory, read after every variant
  uint32_t epoch = 0;                 // last signal epoch handed out; flags are never reset
  std::vector<std::string> failures;  // human-readable check failures / timeouts
  bool wait_failed = false;           // a device spin timed out: later sweeps are skipped
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double budget_s = 230;  // sweeps stop adding points past this (the script kills at 280 s)

  // True when the remaining points of a sweep should be skipped (time budget spent or a wait
  // already timed out, which would make every further fused run cost a timeout); records why.
  bool ShouldStop(const std::string& what);

  uint32_t NextEpoch() { return ++epoch; }
  // Reads and clears the device error word; on a timeout records "<what>: <dump>" in failures
  // and returns false.
  bool TakeError(const std::string& what);
  // Records a failed value check.
  void Fail(const std::string& what) { failures.push_back(what); }
};

// Event pair timing one variant across both streams: Begin() records on comp and makes copy wait
// for it; End() makes comp wait for copy's tail and returns the elapsed milliseconds.
class DualStreamTimer {
 public:
  explicit DualStreamTimer(Context& ctx);
  ~DualStreamTimer();
  void Begin();
  double End();

 private:
  Context& ctx_;
  cudaEvent_t start_ = nullptr, copy_done_ = nullptr, stop_ = nullptr;
};

// Owning device allocation (cudaMalloc), aborting on failure.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Owning pinned host allocation (cudaHostAlloc, portable + mapped): host() for the CPU,
// device() for kernels (SM loads/stores over PCIe), either for cudaMemcpyAsync.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  template <typename T>
  T* host() const {
    return static_cast<T*>(host_);
  }
  template <typename T>
  T* device() const {
    return static_cast<T*>(device_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

// Times `enqueue` (work put on ctx.comp only) with an event pair; returns milliseconds.
template <typename F>
double TimeOnComp(Context& ctx, F&& enqueue) {
  cudaEvent_t start, stop;
  LOOM_CUDA_OK(cudaEventCreate(&start));
  LOOM_CUDA_OK(cudaEventCreate(&stop));
  LOOM_CUDA_OK(cudaEventRecord(start, ctx.comp));
  enqueue();
  LOOM_CUDA_OK(cudaEventRecord(stop, ctx.comp));
  LOOM_CUDA_OK(cudaEventSynchronize(stop));
  float ms = 0;
  LOOM_CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  LOOM_CUDA_OK(cudaEventDestroy(start));
  LOOM_CUDA_OK(cudaEventDestroy(stop));
  return ms;
}

// Number of positions where a and b differ bitwise (NaN poison counts as different), computed on
// the device over rows [row0, row0 + rows) of two row-major matrices with `cols` columns (either
// may be mapped host memory).
unsigned long long CountMismatches(Context& ctx, const float* a, const float* b, int row0, int rows,
                                   int cols);

// Row-major C (M x N, fp32) = A (M x K) * B (K x N) with cuBLAS (cublasGemmEx, fp32 compute).
void CublasGemm(Context& ctx, ElemType type, const void* a, const void* b, float* c, int m, int n,
                int k);

// Fills a host buffer with the same values FillDevice writes (value(i) = hash(seed, i) in
// [-1, 1]), so host-resident "remote" shards and device-resident local shards look alike.
template <typename T>
void FillHost(T* dst, size_t count, uint32_t seed, size_t index_base);

// Compares two float arrays; returns the max |a - b| and the number of non-finite entries of a.
struct Diff {
  double max_abs = 0;
  size_t non_finite = 0;
};
Diff Compare(const float* a, const float* b, size_t count);

// Experiments; each returns a serialised JSON value and prints its table rows.
std::string RunChecks(Context& ctx);         // host reference, small shapes, fp16 and bf16
std::string RunOverlapTax(Context& ctx);     // (a)
std::string RunAgGemm(Context& ctx);         // (b)
std::string RunGemmRs(Context& ctx);         // (c)
std::string RunCometSplit(Context& ctx);     // (d)
std::string RunSignalLatency(Context& ctx);  // (e)

}  // namespace loom::overlap::cuda

#endif  // LOOM_OVERLAP_CUDA_OVERLAP_CUDA_COMMON_H_
