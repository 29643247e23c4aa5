#include "loom/train/gemm_peak_torch.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"
#include "loom/base/env_params.h"
#include "loom/base/file_util.h"

#include <torch/version.h>

namespace loom::train {
namespace {

std::string CpuModel() {
  auto info = ReadFileToString("/proc/cpuinfo");
  if (!info.ok()) return "unknown-cpu";
  size_t p = info->find("model name");
  if (p == std::string::npos) return "unknown-cpu";
  size_t colon = info->find(':', p), nl = info->find('\n', p);
  return info->substr(colon + 2, nl - colon - 2);
}

std::string CacheFile() {
  Env env = Env::Process();
  std::string dir = env.Get("LOOM_CACHE_DIR").value_or("");
  if (dir.empty()) dir = env.Get("HOME").value_or("/tmp") + "/.cache/loom";
  return dir + "/gemm_peak.json";
}

// libtorch's thread setting governs OpenMP (oneDNN) but not OpenBLAS, which reads
// OPENBLAS_NUM_THREADS once at load time; set it explicitly when OpenBLAS is the BLAS.
void SetBlasThreads(int threads) {
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
}

int GetBlasThreads() {
  using GetFn = int (*)();
  auto fn = reinterpret_cast<GetFn>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return fn ? fn() : 0;
}

double Measure(at::ScalarType dtype) {
  double best = 0;
  at::manual_seed(0);
  for (int64_t n : {512, 1024, 2048}) {
    at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype);
    at::mm(a, b);  // warm-up (oneDNN primitive creation, page faults)
    int reps = n <= 1024 ? 6 : 3;
    for (int r = 0; r < reps; ++r) {
      Stopwatch sw;
      at::mm(a, b);
      best = std::max(best, 2.0 * n * n * n / sw.Seconds());
    }
  }
  return best;
}

}  // namespace

Result<GemmPeak> MeasureGemmPeak(at::ScalarType dtype, int threads, bool use_cache) {
  GemmPeak p;
  p.key = CpuModel() + "|" + std::string(at::toString(dtype)) + "|blas-threads=" +
          std::to_string(threads) + "|torch=" + TORCH_VERSION;
  const std::string file = CacheFile();
  nlohmann::json cache = nlohmann::json::object();
  if (auto text = ReadFileToString(file); text.ok()) {
    try {
      cache = nlohmann::json::parse(*text);
    } catch (...) {
      cache = nlohmann::json::object();  // a corrupt cache is just re-measured
    }
  }
  if (use_cache && cache.contains(p.key) && cache[p.key].is_number()) {
    p.flops = cache[p.key].get<double>();
    p.source = "cached in " + file;
    return p;
  }
  int saved = at::get_num_threads();
  int saved_blas = GetBlasThreads();
  at::set_num_threads(threads);
  SetBlasThreads(threads);
  p.flops = Measure(dtype);
  at::set_num_threads(saved);
  if (saved_blas > 0) SetBlasThreads(saved_blas);
  p.source = "measured";
  cache[p.key] = p.flops;
  if (MakeDirs(file.substr(0, file.rfind('/'))).ok()) {
    (void)WriteFileAtomic(file, cache.dump(2) + "\n");  // a read-only cache is not an error
  }
  return p;
}

}  // namespace loom::train
