#include "loom/nn/gpt_generate.h"

#include <algorithm>

#include "loom/base/check.h"
#include "loom/base/philox.h"

namespace loom::nn {

std::vector<int32_t> Generate(const Gpt& model, const std::vector<int32_t>& prompt,
                              const SampleOptions& options) {
  LOOM_CHECK(!prompt.empty()) << "Generate needs a non-empty prompt";
  at::NoGradGuard no_grad;
  const int64_t ctx = model.config().context_length;
  std::vector<int32_t> window(prompt.end() - std::min<int64_t>(prompt.size(), ctx), prompt.end());
  KvCache cache;
  PhiloxStream rng(options.seed, 0x5a3);
  std::vector<int32_t> out;
  at::Tensor input = at::tensor(std::vector<int64_t>(window.begin(), window.end()), at::kLong)
                         .unsqueeze(0);
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    if (cache.length() + input.size(1) > ctx) break;
    at::Tensor logits = model.ForwardCached(input, &cache).select(1, -1).squeeze(0).to(at::kFloat);
    int32_t next;
    if (options.temperature <= 0) {
      next = static_cast<int32_t>(logits.argmax().item<int64_t>());
    } else {
      logits = logits / options.temperature;
      if (options.top_k > 0 && options.top_k < logits.size(0)) {
        at::Tensor kth = std::get<0>(logits.topk(options.top_k)).select(0, -1);
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
      }
      at::Tensor probs = at::softmax(logits, 0).contiguous();
      const float* p = probs.data_ptr<float>();
      float u = rng.NextUniform(), acc = 0;
      next = static_cast<int32_t>(probs.size(0) - 1);
      for (int64_t i = 0; i < probs.size(0); ++i) {
        acc += p[i];
        if (u < acc) {
          next = static_cast<int32_t>(i);
          break;
        }
      }
    }
    out.push_back(next);
    input = at::full({1, 1}, static_cast<int64_t>(next), at::kLong);
  }
  return out;
}

}  // namespace loom::nn
