// Dataset collection: sample kernel instances, time them on each "device", extract features.
//
// Devices are ISA builds (scalar/AVX2/AVX-512, runtime dispatch) x threads (1/2) of this host;
// they share one memory hierarchy, so cross-device transfer here is a proxy, not new hardware.
// Timing: the caller is pinned to CPU 0 and the helper thread to CPU 1 (when they exist);
// `warmup` untimed runs, then the median of k CLOCK_MONOTONIC-timed runs, k chosen so the timed
// runs take about `target_seconds` (within [min_runs, max_runs]); caches are warm (as TenSet).
//
// Thread-safety: Collect() owns its helper thread; call it from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"
#include "loom/trace/costmodel/dataset.h"
#include "loom/trace/costmodel/kernels.h"

namespace loom::trace::costmodel {

struct CollectOptions {
  int num_samples = 2000;            // measurements (kernel instance x device) to collect
  uint64_t seed = 1;                 // kernel sampling and input values
  double time_budget_s = 120;        // stop early (with fewer samples) after this wall time
  std::vector<Device> devices;       // empty: scalar/avx2/avx512 x threads 1/2, where supported
  int devices_per_kernel = 2;        // each instance is timed on this many random devices
  int warmup = 1;                    // untimed runs before timing
  int min_runs = 20, max_runs = 40;  // timed runs per measurement (CDMPP: >= 20)
  double target_seconds = 0.02;      // aim for this much timed work per measurement
  double max_flops = 2e7;            // shapes above this are resampled (keeps scalar runs short)
  double max_bytes = 64e6;           // ... and above this many compulsory bytes
  double min_flops = 1e5;            // shapes below both minima are resampled: sub-microsecond
  double min_bytes = 64 << 10;       // kernels are dominated by timer and dispatch noise
  bool pin_threads = true;           // sched_setaffinity: caller -> CPU 0, helper -> CPU 1
  std::function<void(int done, int total)> progress;  // called every 100 samples (optional)
};

struct Timing {
  double median_s = 0;
  double cv = 0;       // stddev / mean (inflated by preemption outliers on a shared machine)
  double iqr_rel = 0;  // (p75 - p25) / median: robust spread
  double min_s = 0;
  int runs = 0;
};

// Draws one kernel instance (kind, shape group, shape, schedule) from the parameter spaces.
KernelSpec SampleKernelSpec(std::mt19937_64& rng, const CollectOptions& options);

// Times `kernel` on `device` as described above.
Timing TimeKernel(KernelInstance& kernel, const Device& device, Executor* helper,
                  const CollectOptions& options);

// Measures peak GFLOP/s (fastest of 75 runs of a 256x128x128 L2-resident GEMM, IKJ, unroll 4)
// and memory GB/s (fastest of 8 streaming adds over 3 x 32 MiB) of `device`; reads cache sizes.
DeviceInfo ProbeDevice(const Device& device, Executor* helper);

// The devices of this host: options.devices or all supported ISA x {1, 2} threads.
std::vector<Device> HostDevices(const CollectOptions& options);

// Builds the sample (AST features, positions) for a measured instance.
Sample MakeSample(int64_t id, const KernelSpec& spec, const DeviceInfo& device,
                  const Timing& timing);

// Runs the collection. Fails on an unsupported device in options.devices.
Result<Dataset> Collect(const CollectOptions& options);

}  // namespace loom::trace::costmodel
