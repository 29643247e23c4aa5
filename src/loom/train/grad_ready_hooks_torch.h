// Gradient-ready hooks: calls `on_ready(i)` right after autograd has accumulated the gradient of
// params[i] (a post-hook on the parameter's AccumulateGrad node, the mechanism PyTorch's DDP
// reducer uses). This is the only place loom touches autograd internals; keep it small so it can
// follow libtorch across versions.
// Thread-safety: the callback runs on the thread executing backward (the caller's thread for CPU
// tensors).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

namespace loom::train {

class GradReadyHooks {
 public:
  GradReadyHooks(const std::vector<at::Tensor>& params, std::function<void(int)> on_ready);
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::train
