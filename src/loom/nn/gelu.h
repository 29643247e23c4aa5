// Gelu: the GPT's activation (exact erf GELU, as torch's default) as an autograd function over
// gelu_kernels.h: one vectorised pass forward and one backward, fp32 math for bf16 storage.
// libtorch 1.13's bf16 gelu_backward is several times slower on CPU.
// Thread-safety: as other torch ops; chunks run on libtorch's intra-op threads.
#pragma once

#include <ATen/ATen.h>

namespace loom::nn {

at::Tensor Gelu(const at::Tensor& x);

}  // namespace loom::nn
