#include "loom/train/grad_ready_hooks_torch.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "loom/base/check.h"

namespace loom::train {

struct GradReadyHooks::Impl {
  // The accumulators are held so they (and their hooks) live as long as this object: autograd
  // only keeps a weak reference to a leaf's AccumulateGrad node.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::function<void(int)> on_ready;
};

GradReadyHooks::GradReadyHooks(const std::vector<at::Tensor>& params,
                               std::function<void(int)> on_ready)
    : impl_(std::make_unique<Impl>()) {
  impl_->on_ready = std::move(on_ready);
  Impl* impl = impl_.get();
  for (size_t i = 0; i < params.size(); ++i) {
    LOOM_CHECK(params[i].requires_grad() && params[i].is_leaf())
        << "gradient hooks need leaf parameters that require grad";
    auto acc = torch::autograd::impl::grad_accumulator(params[i]);
    LOOM_CHECK(acc != nullptr);
    int index = static_cast<int>(i);
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [impl, index](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list& /*inputs*/) {
          impl->on_ready(index);
          return outputs;
        }));
    impl_->accumulators.push_back(std::move(acc));
  }
}

GradReadyHooks::~GradReadyHooks() = default;

}  // namespace loom::train
