// Denoiser: Minder's per-metric window denoiser. It maps one machine's window of one metric
// (w samples, min-max normalised to [0, 1], NaN-free) to an embedding; detectors compare the
// embeddings of different machines. Implementations: Identity (Minder's RAW ablation),
// MovingMedian, and the LSTM-VAE (fleet/denoise/lstm_vae.h, inference without torch).
//
//   std::vector<float> e(d.embedding_size(w));
//   d.Denoise(window, e);
//
// Thread-safety: Denoise() is const and may run concurrently.
#pragma once

#include <span>
#include <string>

namespace loom::monitor {

class Denoiser {
 public:
  virtual ~Denoiser() = default;
  virtual std::string name() const = 0;
  // Size of the embedding Denoise() writes for a window of w samples.
  virtual int embedding_size(int w) const = 0;
  // window.size() == w; out.size() == embedding_size(w).
  virtual void Denoise(std::span<const float> window, std::span<float> out) const = 0;
};

}  // namespace loom::monitor
