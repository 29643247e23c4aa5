#include "loom/trace/costmodel/collect.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <latch>

#include "loom/trace/costmodel/ast.h"

namespace loom::trace::costmodel {
namespace {

double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void PinCurrentThread(int cpu) {
  if (cpu >= static_cast<int>(std::thread::hardware_concurrency())) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

int64_t LogUniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  std::uniform_real_distribution<double> d(std::log(lo), std::log(hi + 1));
  return std::clamp<int64_t>(static_cast<int64_t>(std::exp(d(rng))), lo, hi);
}

GemmParams SampleSchedule(std::mt19937_64& rng) {
  GemmParams g;
  g.mt = Pick(rng, {4, 8, 16, 32, 64});
  g.nt = Pick(rng, {16, 32, 64, 128, 256});
  g.kt = Pick(rng, {16, 32, 64, 128, 256});
  g.order = Pick(rng, {LoopOrder::kIKJ, LoopOrder::kIJK, LoopOrder::kJKI});
  g.unroll = Pick(rng, {1, 2, 4, 8});
  return g;
}

void SampleGemmShape(std::mt19937_64& rng, KernelSpec& s) {
  GemmParams& g = s.gemm;
  s.shape_group = Pick(rng, {"mlp", "attention", "synthetic"});
  if (s.shape_group == "mlp") {  // tokens x hidden -> hidden
    g.m = Pick<int64_t>(rng, {1, 4, 16, 32, 64, 128, 256});
    g.k = Pick<int64_t>(rng, {64, 128, 256, 384, 512, 768, 1024});
    g.n = Pick<int64_t>(rng, {64, 128, 256, 512, 1024, 2048});
  } else if (s.shape_group == "attention") {  // Q K^T and P V per head
    g.m = Pick<int64_t>(rng, {16, 32, 64, 128, 256});
    bool qk = rng() % 2 == 0;
    g.k = qk ? Pick<int64_t>(rng, {32, 64, 128}) : g.m;
    g.n = qk ? g.m : Pick<int64_t>(rng, {32, 64, 128});
  } else {
    g.m = LogUniform(rng, 4, 512);
    g.n = LogUniform(rng, 4, 1024);
    g.k = LogUniform(rng, 4, 1024);
  }
}

void SampleConvShape(std::mt19937_64& rng, KernelSpec& s) {
  ConvParams& c = s.conv;
  s.shape_group = Pick(rng, {"cnn", "synthetic"});
  if (s.shape_group == "cnn") {  // ResNet-ish stages
    c.batch = Pick<int64_t>(rng, {1, 2});
    c.cin = Pick<int64_t>(rng, {3, 16, 32, 64, 128});
    c.cout = Pick<int64_t>(rng, {16, 32, 64, 128});
    c.h = c.w = Pick<int64_t>(rng, {7, 14, 28, 56});
    c.r = c.s = Pick(rng, {1, 3});
  } else {
    c.batch = 1;
    c.cin = LogUniform(rng, 1, 96);
    c.cout = LogUniform(rng, 1, 96);
    c.h = LogUniform(rng, 4, 64);
    c.w = LogUniform(rng, 4, 64);
    c.r = c.s = Pick(rng, {1, 3, 5});
  }
  c.stride = Pick(rng, {1, 1, 2});
  c.pad = c.r / 2;
  c.tile_co = Pick(rng, {1, 2, 4, 8, 16});
  c.tile_ow = Pick(rng, {4, 8, 16, 32, 64});
  c.gemm = SampleSchedule(rng);
}

}  // namespace

KernelSpec SampleKernelSpec(std::mt19937_64& rng, const CollectOptions& options) {
  for (;;) {
    KernelSpec s;
    std::uniform_real_distribution<double> u(0, 1);
    double r = u(rng);
    if (r < 0.4) {
      s.kind = KernelKind::kGemm;
      s.gemm = SampleSchedule(rng);
      SampleGemmShape(rng, s);
    } else if (r < 0.7) {
      s.kind = r < 0.55 ? KernelKind::kConvDirect : KernelKind::kConvIm2col;
      SampleConvShape(rng, s);
    } else if (r < 0.85) {
      s.kind = KernelKind::kElementwise;
      s.elt.op = Pick(rng, {EltOp::kAdd, EltOp::kMul, EltOp::kRelu, EltOp::kGelu});
      s.shape_group = Pick(rng, {"mlp", "synthetic"});
      s.elt.size = s.shape_group == "mlp" ? Pick<int64_t>(rng, {1, 16, 64, 256}) *
                                                Pick<int64_t>(rng, {256, 512, 1024, 2048, 4096})
                                          : LogUniform(rng, 256, 4 << 20);
    } else {
      s.kind = KernelKind::kReduction;
      s.reduce.op = Pick(rng, {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kSoftmax});
      s.shape_group = Pick(rng, {"attention", "synthetic"});
      if (s.shape_group == "attention") {
        s.reduce.rows = Pick<int64_t>(rng, {4, 8, 12}) * Pick<int64_t>(rng, {16, 64, 128, 256});
        s.reduce.cols = Pick<int64_t>(rng, {16, 64, 128, 256});
      } else {
        s.reduce.rows = LogUniform(rng, 4, 4096);
        s.reduce.cols = LogUniform(rng, 4, 4096);
      }
    }
    const bool too_big = s.Flops() > options.max_flops || s.CompulsoryBytes() > options.max_bytes;
    const bool too_small = s.Flops() < options.min_flops && s.CompulsoryBytes() < options.min_bytes;
    if (!too_big && !too_small) return s;
  }
}

Timing TimeKernel(KernelInstance& kernel, const Device& device, Executor* helper,
                  const CollectOptions& options) {
  double first = 0;
  for (int i = 0; i < std::max(options.warmup, 1); ++i) {
    const double t0 = MonotonicSeconds();
    kernel.Run(device, helper);
    first = MonotonicSeconds() - t0;
  }
  int runs = static_cast<int>(options.target_seconds / std::max(first, 1e-9));
  runs = std::clamp(runs, options.min_runs, options.max_runs);
  std::vector<double> t(runs);
  for (int i = 0; i < runs; ++i) {
    const double t0 = MonotonicSeconds();
    kernel.Run(device, helper);
    t[i] = MonotonicSeconds() - t0;
  }
  double mean = 0, var = 0;
  for (double x : t) mean += x / runs;
  for (double x : t) var += (x - mean) * (x - mean) / runs;
  std::sort(t.begin(), t.end());
  Timing out;
  out.median_s = t[runs / 2];
  out.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  out.iqr_rel = (t[(3 * runs) / 4] - t[runs / 4]) / out.median_s;
  out.min_s = t[0];
  out.runs = runs;
  return out;
}

DeviceInfo ProbeDevice(const Device& device, Executor* helper) {
  DeviceInfo info;
  info.device = device;
  info.caches = HostCacheSizes();
  CollectOptions o;
  o.warmup = 3;
  o.min_runs = o.max_runs = 15;
  KernelSpec gemm;
  gemm.gemm = GemmParams{.m = 256,
                         .n = 128,
                         .k = 128,
                         .mt = 32,
                         .nt = 128,
                         .kt = 128,
                         .order = LoopOrder::kIKJ,
                         .unroll = 4};
  KernelInstance g = *KernelInstance::Create(gemm, 1);
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {  // best of 5 x 15 runs: the machine is shared
    Timing t = TimeKernel(g, device, helper, o);
    best = std::min(best, t.min_s);
  }
  info.peak_gflops = gemm.Flops() / best * 1e-9;
  KernelSpec add;
  add.kind = KernelKind::kElementwise;
  add.elt.size = 8 << 20;
  KernelInstance a = *KernelInstance::Create(add, 2);
  o.warmup = 1;
  o.min_runs = o.max_runs = 8;
  info.mem_gbps = add.CompulsoryBytes() / TimeKernel(a, device, helper, o).min_s * 1e-9;
  return info;
}

std::vector<Device> HostDevices(const CollectOptions& options) {
  if (!options.devices.empty()) return options.devices;
  std::vector<Device> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    out.push_back(Device{isa, 1});
    if (std::thread::hardware_concurrency() >= 2) out.push_back(Device{isa, 2});
  }
  return out;
}

Sample MakeSample(int64_t id, const KernelSpec& spec, const DeviceInfo& device,
                  const Timing& timing) {
  Sample s;
  s.id = id;
  s.spec = spec;
  s.shape_key = spec.ShapeKey();
  s.instance_key = spec.InstanceKey();
  s.device = device.device.Name();
  s.latency_s = timing.median_s;
  s.runs = timing.runs;
  s.cv = timing.cv;
  s.iqr_rel = timing.iqr_rel;
  s.flops = spec.Flops();
  s.bytes = spec.CompulsoryBytes();
  const Ast ast = BuildAst(spec, device.device);
  s.num_nodes = ast.NumNodes();
  s.leaf_pos = LeafPositions(ast);
  s.leaves = LeafFeatures(ast, device.caches);
  return s;
}

Result<Dataset> Collect(const CollectOptions& options) {
  std::vector<Device> devices = HostDevices(options);
  for (const Device& d : devices) {
    if (!IsaSupported(d.isa)) {
      return FailedPreconditionError("costmodel: device " + d.Name() +
                                     " needs an ISA this CPU lacks");
    }
  }
  if (devices.empty()) return InvalidArgumentError("costmodel: no devices to collect on");
  ThreadPool helper({.num_threads = 1, .name = "costmodel-helper"});
  helper.Start();
  if (options.pin_threads) {
    PinCurrentThread(0);
    std::latch pinned(1);
    helper.Schedule([&] {
      PinCurrentThread(1);
      pinned.count_down();
    });
    pinned.wait();
  }
  Dataset ds;
  for (const Device& d : devices) ds.devices.push_back(ProbeDevice(d, &helper));
  std::mt19937_64 rng(options.seed);
  const double start = MonotonicSeconds();
  const int per_kernel = std::clamp<int>(options.devices_per_kernel, 1, devices.size());
  while (static_cast<int>(ds.samples.size()) < options.num_samples &&
         MonotonicSeconds() - start < options.time_budget_s) {
    KernelSpec spec = SampleKernelSpec(rng, options);
    Result<KernelInstance> kernel = KernelInstance::Create(spec, rng());
    if (!kernel.ok()) continue;  // cannot happen for sampled specs; skip defensively
    std::vector<int> order(devices.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng);
    for (int i = 0; i < per_kernel && static_cast<int>(ds.samples.size()) < options.num_samples;
         ++i) {
      const DeviceInfo& dev = ds.devices[order[i]];
      Timing t = TimeKernel(*kernel, dev.device, &helper, options);
      ds.samples.push_back(MakeSample(static_cast<int64_t>(ds.samples.size()), spec, dev, t));
      if (options.progress && ds.samples.size() % 100 == 0) {
        options.progress(static_cast<int>(ds.samples.size()), options.num_samples);
      }
    }
  }
  helper.Stop();
  return ds;
}

}  // namespace loom::trace::costmodel
