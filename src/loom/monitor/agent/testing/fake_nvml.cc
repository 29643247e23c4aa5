// A stand-in for libnvidia-ml.so with the few entry points NvmlSource binds, for tests on hosts
// without a GPU. Two GPUs: GPU 0 reports fixed readings; GPU 1 does not support power readings
// (NVML_ERROR_NOT_SUPPORTED). FAKE_NVML_INIT_FAILS=1 makes nvmlInit_v2 fail with "Driver Not
// Loaded". Built twice: with FAKE_NVML_NO_POWER the power entry point is left out.
// fake_nvml_open_count() = nvmlInit_v2 calls minus nvmlShutdown calls (the tests check shutdown).
#include <cstdlib>
#include <cstring>

namespace {
int g_open = 0;
int g_device_tag[2];  // the opaque nvmlDevice_t handles point here
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
int Index(void* d) { return d == &g_device_tag[1] ? 1 : 0; }
}  // namespace

extern "C" {

int fake_nvml_open_count() { return g_open; }

int nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_INIT_FAILS");
  if (fail != nullptr && std::strcmp(fail, "1") == 0) return 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  ++g_open;
  return 0;
}
int nvmlShutdown() {
  --g_open;
  return 0;
}
const char* nvmlErrorString(int r) { return r == 9 ? "Driver Not Loaded" : "Not Supported"; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** d) {
  if (i > 1) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = &g_device_tag[i];
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* d, Utilization* u) {
  u->gpu = Index(d) == 0 ? 37 : 90;
  u->memory = Index(d) == 0 ? 12 : 45;
  return 0;
}
#ifndef FAKE_NVML_NO_POWER
int nvmlDeviceGetPowerUsage(void* d, unsigned int* mw) {
  if (Index(d) == 1) return 3;  // NVML_ERROR_NOT_SUPPORTED
  *mw = 123456;
  return 0;
}
#endif
int nvmlDeviceGetTemperature(void* d, unsigned int sensor, unsigned int* c) {
  if (sensor != 0) return 2;
  *c = Index(d) == 0 ? 61 : 70;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, Memory* m) {
  m->total = 80ull << 30;
  m->used = Index(d) == 0 ? 1ull << 30 : 3ull << 30;
  m->free = m->total - m->used;
  return 0;
}

}  // extern "C"
