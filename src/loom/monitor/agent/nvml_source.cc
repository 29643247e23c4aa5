// NvmlSource: see nvml_source.h.
#include "loom/monitor/agent/nvml_source.h"

#include <dlfcn.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>

namespace loom::monitor {

// The NVML C ABI used here (nvml.h, stable since the v2 entry points of driver 346).
namespace nvml {
using Return = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using Device = void*;
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
}  // namespace nvml

struct NvmlSource::Api {
  nvml::Return (*init)();
  nvml::Return (*shutdown)();
  const char* (*error_string)(nvml::Return);
  nvml::Return (*count)(unsigned int*);
  nvml::Return (*handle)(unsigned int, nvml::Device*);
  nvml::Return (*utilization)(nvml::Device, nvml::Utilization*);
  nvml::Return (*power)(nvml::Device, unsigned int*);
  nvml::Return (*temperature)(nvml::Device, unsigned int, unsigned int*);
  nvml::Return (*memory)(nvml::Device, nvml::Memory*);
};

namespace {

template <typename F>
bool Bind(void* handle, const char* name, F* fn, std::string* error) {
  *fn = reinterpret_cast<F>(::dlsym(handle, name));
  if (*fn == nullptr && error->empty()) error->assign(std::string("missing symbol ") + name);
  return *fn != nullptr;
}

std::string NvmlError(const char* (*error_string)(nvml::Return), nvml::Return r) {
  const char* s = error_string != nullptr ? error_string(r) : nullptr;
  return s != nullptr ? s : "NVML error " + std::to_string(r);
}

}  // namespace

NvmlSource NvmlSource::Open(const std::string& library) {
  NvmlSource s;
  if (library.empty()) return s;
  s.enabled_ = true;
  void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    s.error_ = "dlopen " + library + ": " + (e != nullptr ? e : "failed");
    return s;
  }
  auto api = std::make_unique<Api>();
  bool ok = Bind(h, "nvmlInit_v2", &api->init, &s.error_);
  ok = Bind(h, "nvmlShutdown", &api->shutdown, &s.error_) && ok;
  ok = Bind(h, "nvmlErrorString", &api->error_string, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetCount_v2", &api->count, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetHandleByIndex_v2", &api->handle, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetUtilizationRates", &api->utilization, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetPowerUsage", &api->power, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetTemperature", &api->temperature, &s.error_) && ok;
  ok = Bind(h, "nvmlDeviceGetMemoryInfo", &api->memory, &s.error_) && ok;
  if (!ok) {
    s.error_ = library + ": " + s.error_;
    ::dlclose(h);
    return s;
  }
  if (nvml::Return r = api->init(); r != 0) {
    s.error_ = "nvmlInit: " + NvmlError(api->error_string, r);
    ::dlclose(h);
    return s;
  }
  unsigned int n = 0;
  if (nvml::Return r = api->count(&n); r != 0) {
    s.error_ = "nvmlDeviceGetCount: " + NvmlError(api->error_string, r);
    api->shutdown();
    ::dlclose(h);
    return s;
  }
  for (unsigned int i = 0; i < n; ++i) {
    nvml::Device d = nullptr;
    // A GPU whose handle cannot be had (e.g. lost off the bus) keeps its index, with NaN gauges.
    if (api->handle(i, &d) != 0) d = nullptr;
    s.devices_.push_back(d);
  }
  s.handle_ = h;
  s.api_ = api.release();
  return s;
}

NvmlSource::NvmlSource(NvmlSource&& other) noexcept { *this = std::move(other); }

NvmlSource& NvmlSource::operator=(NvmlSource&& other) noexcept {
  if (this != &other) {
    Close();
    enabled_ = other.enabled_;
    handle_ = std::exchange(other.handle_, nullptr);
    api_ = std::exchange(other.api_, nullptr);
    devices_ = std::move(other.devices_);
    error_ = std::move(other.error_);
  }
  return *this;
}

NvmlSource::~NvmlSource() { Close(); }

void NvmlSource::Close() {
  if (handle_ != nullptr) {
    api_->shutdown();
    ::dlclose(handle_);
  }
  delete api_;
  handle_ = nullptr;
  api_ = nullptr;
  devices_.clear();
}

void NvmlSource::Sample(std::vector<MetricPoint>* out) {
  if (!enabled_) return;
  out->push_back(SourceAvailable("nvml", available()));
  if (!available()) return;
  out->push_back(Gauge("gpus", "GPUs NVML reports", static_cast<double>(devices_.size())));
  // Read every GPU first, then emit family by family (Prometheus families stay contiguous).
  struct Reading {
    double util = NAN, mem_util = NAN, watts = NAN, celsius = NAN, used = NAN, total = NAN;
  };
  std::vector<Reading> r(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    const nvml::Device d = devices_[i];
    if (d == nullptr) continue;
    if (nvml::Utilization u{}; api_->utilization(d, &u) == 0) {
      r[i].util = u.gpu / 100.0;
      r[i].mem_util = u.memory / 100.0;
    }
    if (unsigned int mw = 0; api_->power(d, &mw) == 0) r[i].watts = mw / 1000.0;
    if (unsigned int c = 0; api_->temperature(d, nvml::kTemperatureGpu, &c) == 0) {
      r[i].celsius = c;
    }
    if (nvml::Memory m{}; api_->memory(d, &m) == 0) {
      r[i].used = static_cast<double>(m.used);
      r[i].total = static_cast<double>(m.total);
    }
  }
  auto family = [&](const char* name, const char* help, double Reading::*field) {
    for (size_t i = 0; i < r.size(); ++i) {
      out->push_back(Gauge(name, help, r[i].*field, {{"gpu", std::to_string(i)}}));
    }
  };
  family("gpu_utilization_ratio", "fraction of time a kernel ran (NVML)", &Reading::util);
  family("gpu_memory_utilization_ratio",
         "fraction of time device memory was read or written (NVML)", &Reading::mem_util);
  family("gpu_power_watts", "board power draw (NVML)", &Reading::watts);
  family("gpu_temperature_celsius", "GPU die temperature (NVML)", &Reading::celsius);
  family("gpu_memory_used_bytes", "device memory in use (NVML)", &Reading::used);
  family("gpu_memory_total_bytes", "device memory size (NVML)", &Reading::total);
}

}  // namespace loom::monitor
