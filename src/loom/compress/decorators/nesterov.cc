#include "loom/compress/decorators/nesterov.h"

#include "loom/base/check.h"

namespace loom::compress {

NesterovMomentum::NesterovMomentum(float mu, int64_t n) : mu_(mu), momentum_(n, 0.f) {
  LOOM_CHECK(mu >= 0 && mu < 1);
  LOOM_CHECK(n >= 0);
}

void NesterovMomentum::ApplyRange(float* x, int64_t begin, int64_t n) {
  LOOM_DCHECK(begin >= 0 && n >= 0 && begin + n <= static_cast<int64_t>(momentum_.size()));
  float* m = momentum_.data() + begin;
  const float mu = mu_;
  for (int64_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + x[i];
    x[i] += mu * m[i];
  }
}

}  // namespace loom::compress
