// NvmlSource: per-GPU metrics from NVIDIA's management library (NVML), loaded at run time with
// dlopen, so loom builds and runs without a GPU, a driver or CUDA headers (the few C entry points
// are declared here from NVML's stable ABI).
//
//   NvmlSource nvml = NvmlSource::Open("libnvidia-ml.so.1");   // never fails; see available()
//   std::vector<MetricPoint> out;
//   nvml.Sample(&out);
//
// Per GPU (label gpu="<index>"): gpu_utilization_ratio, gpu_memory_utilization_ratio (busy
// fractions over NVML's last sample period), gpu_power_watts, gpu_temperature_celsius,
// gpu_memory_used_bytes, gpu_memory_total_bytes; and gpus (the count; promtool rejects a
// gauge named *_count).
// Missing library, a missing symbol or a failed nvmlInit: `source_available{source="nvml"} 0` and
// no GPU gauges; error() says why. A query that fails for one GPU (e.g. power not supported) gives
// NaN for that gauge, never 0.
// Thread-safety: not thread-safe; one sampling thread owns it. Move-only (owns the dlopen handle;
// the destructor calls nvmlShutdown and dlclose).
#pragma once

#include <string>
#include <vector>

#include "loom/monitor/agent/metric_point.h"

namespace loom::monitor {

class NvmlSource {
 public:
  // `library`: a soname or path for dlopen; empty: disabled (available() false, no gauges and no
  // availability gauge either).
  static NvmlSource Open(const std::string& library);

  NvmlSource(NvmlSource&& other) noexcept;
  NvmlSource& operator=(NvmlSource&& other) noexcept;
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;
  ~NvmlSource();

  bool enabled() const { return enabled_; }
  bool available() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  int gpu_count() const { return static_cast<int>(devices_.size()); }

  // Appends this sample's GPU gauges and the availability gauge (nothing when disabled).
  void Sample(std::vector<MetricPoint>* out);

 private:
  struct Api;
  NvmlSource() = default;
  void Close();

  bool enabled_ = false;
  void* handle_ = nullptr;
  Api* api_ = nullptr;
  std::vector<void*> devices_;  // nvmlDevice_t handles
  std::string error_;
};

}  // namespace loom::monitor
