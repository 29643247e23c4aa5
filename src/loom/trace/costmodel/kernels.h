// Loom-owned kernels whose latency the predictor learns, generated from a KernelSpec.
//
// Each ISA (scalar, AVX2, AVX-512) is the same template source (internal/kernels_impl.inc)
// compiled in its own file with its own flags; Run() dispatches at run time. Threads = 2 splits
// the outermost parallel loop (the one BuildAst annotates `parallel`) between the calling thread
// and one helper thread from an injected Executor. Devices are ISA/thread variants of one host
// sharing its memory hierarchy.
//
// Thread-safety: a KernelInstance is used by one caller at a time (Run() itself uses the helper).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"
#include "loom/trace/costmodel/kernel_spec.h"

namespace loom::trace::costmodel {

// True when this CPU can run `isa` (cpuid).
bool IsaSupported(Isa isa);

class KernelInstance {
 public:
  // Allocates the buffers of `spec` and fills the inputs with values in [-1, 1] from `seed`.
  // Fails (kInvalidArgument) on a non-positive dimension or tile, and (kResourceExhausted) above
  // `max_bytes` of buffers.
  static Result<KernelInstance> Create(const KernelSpec& spec, uint64_t seed,
                                       int64_t max_bytes = int64_t{1} << 30);

  // Runs the kernel once on `device`. Accumulating kernels (GEMM, conv) add into the output,
  // so call ResetOutput() before a run whose values matter. `helper` runs the second thread's
  // share when device.threads == 2 (nullptr: run everything on the caller).
  void Run(const Device& device, Executor* helper);
  void ResetOutput();
  // Plain scalar reference (double accumulation, std::exp/tanh) into ReferenceOutput().
  void RunReference();

  const std::vector<float>& Output() const { return out_; }
  const std::vector<float>& ReferenceOutput() const { return ref_; }
  const KernelSpec& spec() const { return spec_; }
  int64_t BufferBytes() const;

 private:
  explicit KernelInstance(KernelSpec spec) : spec_(std::move(spec)) {}
  KernelSpec spec_;
  std::vector<float> a_, b_, out_, ref_, col_;
};

}  // namespace loom::trace::costmodel
