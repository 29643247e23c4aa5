// loom_overlap_cuda_bench: the single-GPU experiments of issue 7 (spec §10) in one program.
//
//   loom_overlap_cuda_bench --out DIR [--quick] [--reps N] [--device I]
//
// Writes DIR/overlap_cuda.json and prints a table per experiment:
//   checks  loom's tile GEMM (plain; with flags, rotated order and the mapped-memory epilogue)
//           and cuBLAS against a double-precision host reference, fp16 and bf16;
//   (a)     overlap tax: the tile GEMM with all flags pre-set vs without flags vs cuBLAS;
//   (b)     AG+GEMM, remote shards in pinned host memory pulled by the copy engine with
//           stream-written flags: sequential | decomposed | fused (tile waits), S sweep;
//   (c)     GEMM+RS, remote segments to host: sequential | chunked D2H | epilogue stores to
//           mapped host memory;
//   (d)     Comet's split of resident blocks into k communication blocks and GEMM blocks;
//   (e)     host<->GPU signal round trips.
// Every variant's medians are over --reps repetitions (default 11, --quick 5, at least 5) with
// the variants interleaved inside each repetition; every variant's output is compared bitwise
// with a reference run after poisoning the not-yet-transferred data with NaN.
//
// Limits: one GPU, so PCIe and host memory play the link and the remote ranks; NVLink, NVSwitch,
// NVSHMEM, InfiniBand and multi-GPU reductions are not measured. Every device spin is bounded
// (%globaltimer timeout, error word dumped by the host), so a lost signal ends a run with an
// error instead of hanging the GPU.
//
// Exit status: 0 all checks passed, 1 a check or a wait failed (JSON still written), 2 usage,
// 3 CUDA error. Status: compile-checked only (nvcc 13, sm_90a); not yet run on a GPU.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "loom/overlap/cuda/overlap_cuda_common.h"

namespace loom::overlap::cuda {
namespace {

struct Flags {
  std::string out;
  bool quick = false;
  int reps = 0;  // 0: default for the mode
  int device = 0;
};

void Usage() {
  std::fprintf(stderr,
               "usage: loom_overlap_cuda_bench --out DIR [--quick] [--reps N>=5] "
               "[--device I]\n");
  std::exit(2);
}

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (arg == "--out") {
      f.out = value();
    } else if (arg == "--quick") {
      f.quick = true;
    } else if (arg == "--reps") {
      f.reps = std::atoi(value().c_str());
      if (f.reps < 5) Usage();
    } else if (arg == "--device") {
      f.device = std::atoi(value().c_str());
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", arg.c_str());
      Usage();
    }
  }
  if (f.out.empty()) Usage();
  return f;
}

std::string DeviceJson(const Context& ctx) {
  int driver = 0, runtime = 0, cublas = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cublasGetVersion(ctx.cublas, &cublas);
  const cudaDeviceProp& p = ctx.prop;
  return JsonObject()
      .Str("name", p.name)
      .Int("cc_major", p.major)
      .Int("cc_minor", p.minor)
      .Int("sms", p.multiProcessorCount)
      .Num("memory_gib", static_cast<double>(p.totalGlobalMem) / (1ull << 30))
      .Int("async_engines", p.asyncEngineCount)
      .Int("pci_bus", p.pciBusID)
      .Int("driver_version", driver)
      .Int("runtime_version", runtime)
      .Int("cublas_version", cublas)
      .Dump();
}

int Main(int argc, char** argv) {
  const Flags flags = Parse(argc, argv);
  // Load every kernel at start-up: a module loaded lazily while another kernel spins could stall.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  mkdir(flags.out.c_str(), 0755);  // may exist already; fopen below reports real problems
  const std::string path = flags.out + "/overlap_cuda.json";
  Context ctx;
  ctx.device = flags.device;
  ctx.quick = flags.quick;
  ctx.reps = flags.reps > 0 ? flags.reps : (flags.quick ? 5 : 11);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= flags.device) {
    std::fprintf(stderr, "no CUDA device %d (found %d): this benchmark needs a GPU\n", flags.device,
                 count);
    return 3;
  }
  LOOM_CUDA_OK(cudaSetDevice(ctx.device));
  LOOM_CUDA_OK(cudaGetDeviceProperties(&ctx.prop, ctx.device));
  LOOM_CUDA_OK(cudaFree(nullptr));  // create the primary context (the driver API needs it)
  LOOM_CU_OK(cuInit(0));
  // Blocking streams on purpose: setup code uses synchronous legacy-stream calls (cudaMemcpy,
  // cudaMemset), which then order after everything already queued on comp and copy. Timed code
  // only uses comp and copy, which run concurrently with each other.
  LOOM_CUDA_OK(cudaStreamCreate(&ctx.comp));
  LOOM_CUDA_OK(cudaStreamCreate(&ctx.copy));
  LOOM_CUBLAS_OK(cublasCreate(&ctx.cublas));
  LOOM_CUBLAS_OK(cublasSetStream(ctx.cublas, ctx.comp));
  LOOM_CUDA_OK(cudaMalloc(&ctx.error, sizeof(DeviceError)));
  LOOM_CUDA_OK(cudaMemset(ctx.error, 0, sizeof(DeviceError)));
  LOOM_CUDA_OK(cudaDeviceSynchronize());
  std::printf("loom_overlap_cuda_bench on %s (%d SMs, cc %d.%d), %d reps%s\n", ctx.prop.name,
              ctx.prop.multiProcessorCount, ctx.prop.major, ctx.prop.minor, ctx.reps,
              ctx.quick ? ", quick" : "");
  if (ctx.prop.major < 9) {
    std::fprintf(stderr, "built for sm_90a; device is cc %d.%d\n", ctx.prop.major, ctx.prop.minor);
    return 3;
  }
  const std::time_t start = std::time(nullptr);
  // The JSON is rewritten after every experiment, so a run cut short still leaves its results.
  std::vector<std::pair<std::string, std::string>> sections = {{"device", DeviceJson(ctx)}};
  auto write_json = [&](bool complete) {
    JsonObject root;
    root.Str("schema", "loom.overlap.cuda.v1")
        .Str("note",
             "single GPU: pinned/mapped host memory plays the remote ranks over PCIe; "
             "NVLink, NVSHMEM and multi-GPU reductions are not measured")
        .Bool("quick", ctx.quick)
        .Int("reps", ctx.reps)
        .Bool("complete", complete);
    for (const auto& [key, json] : sections) root.Raw(key, json);
    std::vector<std::string> failures;
    for (const std::string& f : ctx.failures) failures.push_back("\"" + JsonEscape(f) + "\"");
    root.Raw("failures", JsonArray(failures))
        .Int("wall_seconds", static_cast<long long>(std::time(nullptr) - start));
    const std::string tmp = path + ".tmp";
    std::FILE* out = std::fopen(tmp.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
      std::exit(3);
    }
    std::fprintf(out, "%s\n", root.Dump().c_str());
    std::fclose(out);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "cannot rename %s: %s\n", tmp.c_str(), std::strerror(errno));
      std::exit(3);
    }
  };
  write_json(false);  // fail early on an unwritable DIR
  sections.emplace_back("checks", RunChecks(ctx));
  write_json(false);
  sections.emplace_back("overlap_tax", RunOverlapTax(ctx));
  write_json(false);
  sections.emplace_back("ag_gemm", RunAgGemm(ctx));
  write_json(false);
  sections.emplace_back("gemm_rs", RunGemmRs(ctx));
  write_json(false);
  sections.emplace_back("comet_split", RunCometSplit(ctx));
  write_json(false);
  sections.emplace_back("signal_latency", RunSignalLatency(ctx));
  write_json(true);
  std::printf("\nwrote %s (%zu failures, %lld s)\n", path.c_str(), ctx.failures.size(),
              static_cast<long long>(std::time(nullptr) - start));
  for (const std::string& f : ctx.failures) std::printf("  FAILED: %s\n", f.c_str());
  cublasDestroy(ctx.cublas);
  cudaFree(ctx.error);
  return ctx.failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace loom::overlap::cuda

int main(int argc, char** argv) { return loom::overlap::cuda::Main(argc, argv); }
