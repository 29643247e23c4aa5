// Host helpers of the single-GPU overlap experiments; see overlap_cuda_common.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "loom/overlap/cuda/overlap_cuda_common.h"

namespace loom::overlap::cuda {

Summary Summarize(std::vector<double> samples) {
  Summary s;
  s.reps = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (pos - static_cast<double>(lo)) * (samples[hi] - samples[lo]);
  };
  s.median = quantile(0.5);
  s.q1 = quantile(0.25);
  s.q3 = quantile(0.75);
  s.min = samples.front();
  return s;
}

double OverlapEfficiency(double t_comp, double t_comm, double t_x) {
  const double denom = std::min(t_comp, t_comm);
  return denom > 0 ? (t_comp + t_comm - t_x) / denom : 0.0;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(ch));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

void JsonObject::Key(const std::string& key) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + JsonEscape(key) + "\":";
}

JsonObject& JsonObject::Num(const std::string& key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", value);
    body_ += buf;
  }
  return *this;
}

JsonObject& JsonObject::Int(const std::string& key, long long value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::Bool(const std::string& key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::Str(const std::string& key, const std::string& value) {
  Key(key);
  body_ += "\"" + JsonEscape(value) + "\"";
  return *this;
}

JsonObject& JsonObject::Raw(const std::string& key, const std::string& json) {
  Key(key);
  body_ += json;
  return *this;
}

JsonObject& JsonObject::Stats(const std::string& key, const Summary& s) {
  JsonObject o;
  o.Num("median", s.median).Num("q1", s.q1).Num("q3", s.q3).Num("min", s.min).Int("reps", s.reps);
  return Raw(key, o.Dump());
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  return out + "]";
}

bool Context::TakeError(const std::string& what) {
  LOOM_CUDA_OK(cudaDeviceSynchronize());
  DeviceError host{};
  LOOM_CUDA_OK(cudaMemcpy(&host, error, sizeof(host), cudaMemcpyDeviceToHost));
  if (host.code == kNoError) return true;
  static const char* const kNames[] = {"none", "AG chunk flag", "tile-done counter", "host ping"};
  const char* name = host.code >= 0 && host.code <= 3 ? kNames[host.code] : "unknown";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%s: timed out waiting for %s %d (saw %u, wanted >= %u); results of this run "
                "are invalid",
                what.c_str(), name, host.index, host.observed, host.expected);
  failures.push_back(buf);
  wait_failed = true;
  std::fprintf(stderr, "%s\n", buf);
  LOOM_CUDA_OK(cudaMemset(error, 0, sizeof(DeviceError)));
  LOOM_CUDA_OK(cudaDeviceSynchronize());
  return false;
}

bool Context::ShouldStop(const std::string& what) {
  const double used =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!wait_failed && used <= budget_s) return false;
  const std::string why = wait_failed ? "an earlier wait timed out" : "time budget spent";
  failures.push_back(what + ": remaining points skipped (" + why + ")");
  std::fprintf(stderr, "%s: remaining points skipped (%s)\n", what.c_str(), why.c_str());
  return true;
}

DualStreamTimer::DualStreamTimer(Context& ctx) : ctx_(ctx) {
  LOOM_CUDA_OK(cudaEventCreate(&start_));
  LOOM_CUDA_OK(cudaEventCreateWithFlags(&copy_done_, cudaEventDisableTiming));
  LOOM_CUDA_OK(cudaEventCreate(&stop_));
}

DualStreamTimer::~DualStreamTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(copy_done_);
  cudaEventDestroy(stop_);
}

void DualStreamTimer::Begin() {
  LOOM_CUDA_OK(cudaEventRecord(start_, ctx_.comp));
  LOOM_CUDA_OK(cudaStreamWaitEvent(ctx_.copy, start_, 0));
}

double DualStreamTimer::End() {
  LOOM_CUDA_OK(cudaEventRecord(copy_done_, ctx_.copy));
  LOOM_CUDA_OK(cudaStreamWaitEvent(ctx_.comp, copy_done_, 0));
  LOOM_CUDA_OK(cudaEventRecord(stop_, ctx_.comp));
  LOOM_CUDA_OK(cudaEventSynchronize(stop_));
  float ms = 0;
  LOOM_CUDA_OK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { LOOM_CUDA_OK(cudaMalloc(&ptr_, bytes)); }
DeviceBuffer::~DeviceBuffer() { cudaFree(ptr_); }

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  LOOM_CUDA_OK(cudaHostAlloc(&host_, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  LOOM_CUDA_OK(cudaHostGetDevicePointer(&device_, host_, 0));
}
PinnedBuffer::~PinnedBuffer() { cudaFreeHost(host_); }

unsigned long long CountMismatches(Context& ctx, const float* a, const float* b, int row0, int rows,
                                   int cols) {
  DeviceBuffer count(sizeof(unsigned long long));
  LOOM_CUDA_OK(cudaMemsetAsync(count.get(), 0, count.bytes(), ctx.comp));
  const size_t offset = static_cast<size_t>(row0) * cols;
  LaunchCountMismatch(a + offset, b + offset, static_cast<size_t>(rows) * cols,
                      count.as<unsigned long long>(), ctx.comp);
  unsigned long long host = 0;
  LOOM_CUDA_OK(cudaMemcpyAsync(&host, count.get(), sizeof(host), cudaMemcpyDeviceToHost, ctx.comp));
  LOOM_CUDA_OK(cudaStreamSynchronize(ctx.comp));
  return host;
}

void CublasGemm(Context& ctx, ElemType type, const void* a, const void* b, float* c, int m, int n,
                int k) {
  // Row-major C = A B is column-major C^T = B^T A^T: pass B as the first operand.
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t in = type == ElemType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
  LOOM_CUBLAS_OK(cublasGemmEx(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, in, n, a,
                              in, k, &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}

template <typename T>
void FillHost(T* dst, size_t count, uint32_t seed, size_t index_base) {
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(HashUniform(seed, index_base + i));
}
template void FillHost<__half>(__half*, size_t, uint32_t, size_t);
template void FillHost<__nv_bfloat16>(__nv_bfloat16*, size_t, uint32_t, size_t);

Diff Compare(const float* a, const float* b, size_t count) {
  Diff d;
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(a[i])) {
      ++d.non_finite;
      continue;
    }
    d.max_abs = std::max(d.max_abs, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return d;
}

}  // namespace loom::overlap::cuda
