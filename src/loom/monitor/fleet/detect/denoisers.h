// Built-in Denoisers for Minder: Identity (the RAW ablation: the window is its own embedding) and
// MovingMedian (a centred running median of `radius` samples each side, edges shrink the
// window), the cheap stand-in for the LSTM-VAE.
//
//   LOOM_ASSIGN_OR_RETURN(auto d, MakeBuiltinDenoiser("moving_median"));
//   std::vector<float> e(d->embedding_size(8));
//   d->Denoise(window, e);
//
// Thread-safety: Denoise() is const and reentrant.
#pragma once

#include <memory>
#include <string>

#include "loom/base/status.h"
#include "loom/monitor/fleet/detect/denoiser.h"

namespace loom::monitor {

class IdentityDenoiser : public Denoiser {
 public:
  std::string name() const override { return "identity"; }
  int embedding_size(int w) const override { return w; }
  void Denoise(std::span<const float> window, std::span<float> out) const override;
};

class MovingMedianDenoiser : public Denoiser {
 public:
  explicit MovingMedianDenoiser(int radius = 1) : radius_(radius) {}
  std::string name() const override { return "moving_median"; }
  int embedding_size(int w) const override { return w; }
  void Denoise(std::span<const float> window, std::span<float> out) const override;

 private:
  int radius_;
};

// "identity" or "moving_median"; anything else is NotFound (callers then try a loader).
Result<std::unique_ptr<Denoiser>> MakeBuiltinDenoiser(const std::string& type);

}  // namespace loom::monitor
