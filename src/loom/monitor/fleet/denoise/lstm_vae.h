// LstmVaeDenoiser: Minder's per-metric LSTM-VAE denoiser, inference only, in plain C++/Eigen
// (no torch). The embedding of a window is the mean reconstruction (z = mu, no sampling) of the
// model described in lstm_vae_model.h, so embedding_size(w) == w. Models are trained by
// lstm_vae_trainer_torch.h (`loom monitor denoiser train`) and stored as MODEL_DIR/<metric>.json
// (lstm_vae_json.h).
//
//   LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Denoiser> d, LoadLstmVae("/tmp/vae", "cpu_busy"));
//   std::vector<float> e(d->embedding_size(8));
//   d->Denoise(window, e);            // window: 8 samples min-max normalised to [0, 1]
//
// Speed: the latent layer is folded into the decoder's initial-state layer at load time
// (dec_init.w (mu.w h + mu.b) + dec_init.b == W' h + b'), the sigmoid gates use
// sigmoid(x) = (1 + tanh(x / 2)) / 2 with the halving folded into the weights, hidden sizes 4
// and 8 run on fixed-size Eigen types, and DenoiseBatch() runs 8 windows side by side. Results
// agree with the torch forward within 1e-5 (lstm_vae_trainer_test.cc).
//
// Thread-safety: immutable after construction; Denoise() may run concurrently.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "loom/base/status.h"
#include "loom/monitor/fleet/denoise/lstm_vae_model.h"
#include "loom/monitor/fleet/detect/denoiser.h"

namespace loom::monitor {

class LstmVaeDenoiser : public Denoiser {
 public:
  // Validates the model (see ValidateLstmVaeModel).
  static Result<std::unique_ptr<LstmVaeDenoiser>> Create(const LstmVaeModel& model);
  ~LstmVaeDenoiser() override;

  std::string name() const override { return "lstm_vae"; }
  // The model's window length; Denoise() takes exactly this many samples.
  int window() const { return window_; }
  const std::string& metric() const { return metric_; }
  // == w (the reconstruction). Precondition: w == window().
  int embedding_size(int w) const override;
  // window.size() == out.size() == window() (a programming error otherwise: LOOM_CHECK).
  void Denoise(std::span<const float> window, std::span<float> out) const override;
  // Many windows at once (windows.size() == out.size() == n * window(), row-major): the same
  // results as n Denoise() calls, faster (blocks of 8 windows keep the pipelines busy).
  void DenoiseBatch(std::span<const float> windows, std::span<float> out) const;

  class Kernel;  // the Eigen forward pass, specialised per hidden size (lstm_vae.cc)

 private:
  LstmVaeDenoiser(std::string metric, int window, std::unique_ptr<Kernel> kernel);
  std::string metric_;
  int window_;
  std::unique_ptr<Kernel> kernel_;
};

// Reads MODEL_DIR/<metric>.json (lstm_vae_json.h). `window` > 0 must equal the model's window;
// a mismatch (or a file made for another metric) is an error naming both.
Result<std::unique_ptr<Denoiser>> LoadLstmVae(const std::string& model_dir,
                                              const std::string& metric, int window = 0);

}  // namespace loom::monitor
