#include "loom/nn/gpt_init.h"

#include <cmath>
#include <cstring>

#include "loom/base/philox.h"

namespace loom::nn {

void InitGptWeights(const GptConfig& config, const FlatLayout& layout, uint64_t seed, float* flat) {
  std::memset(flat, 0, sizeof(float) * layout.total_elements());
  const float std_normal = static_cast<float>(config.init_std);
  const float std_resid =
      static_cast<float>(config.init_std / std::sqrt(2.0 * static_cast<double>(config.n_layers)));
  for (size_t i = 0; i < layout.slots().size(); ++i) {
    const ParamSlot& s = layout.slots()[i];
    float* p = flat + s.offset;
    const int64_t n = s.spec.numel();
    PhiloxStream rng(seed, i);
    switch (s.spec.init) {
      case InitKind::kZeros: break;
      case InitKind::kOnes:
        for (int64_t k = 0; k < n; ++k) p[k] = 1.0f;
        break;
      case InitKind::kNormal:
      case InitKind::kNormalResidual: {
        float sd = s.spec.init == InitKind::kNormal ? std_normal : std_resid;
        for (int64_t k = 0; k < n; ++k) p[k] = rng.NextNormal() * sd;
        break;
      }
    }
  }
}

}  // namespace loom::nn
