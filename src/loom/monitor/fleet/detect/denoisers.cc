#include "loom/monitor/fleet/detect/denoisers.h"

#include <algorithm>
#include <vector>

namespace loom::monitor {

void IdentityDenoiser::Denoise(std::span<const float> window, std::span<float> out) const {
  std::copy(window.begin(), window.end(), out.begin());
}

void MovingMedianDenoiser::Denoise(std::span<const float> window, std::span<float> out) const {
  const int w = static_cast<int>(window.size());
  float buf[64];
  std::vector<float> big;
  float* tmp = buf;
  if (2 * radius_ + 1 > 64) {
    big.resize(2 * radius_ + 1);
    tmp = big.data();
  }
  for (int i = 0; i < w; ++i) {
    const int lo = std::max(0, i - radius_), hi = std::min(w - 1, i + radius_);
    const int n = hi - lo + 1;
    std::copy(window.begin() + lo, window.begin() + hi + 1, tmp);
    std::nth_element(tmp, tmp + n / 2, tmp + n);
    float m = tmp[n / 2];
    if (n % 2 == 0) m = 0.5f * (m + *std::max_element(tmp, tmp + n / 2));
    out[i] = m;
  }
}

Result<std::unique_ptr<Denoiser>> MakeBuiltinDenoiser(const std::string& type) {
  if (type == "identity" || type == "raw") return std::unique_ptr<Denoiser>(new IdentityDenoiser);
  if (type == "moving_median") return std::unique_ptr<Denoiser>(new MovingMedianDenoiser(1));
  return NotFoundError("no built-in denoiser '" + type + "' (built-ins: identity, moving_median)");
}

}  // namespace loom::monitor
