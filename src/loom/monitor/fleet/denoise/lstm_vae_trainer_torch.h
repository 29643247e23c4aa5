// LSTM-VAE trainer (libtorch, CPU): fits one metric's denoiser (lstm_vae_model.h) to windows of
// healthy machines (denoise_windows.h) with loss = MSE(reconstruction, window) + beta * KL(q(z|x)
// || N(0, I)) (KL summed over the latent, averaged over the batch; beta warmed up linearly against
// posterior collapse), the reparameterisation trick, Adam, gradient-norm clipping at 1, and early
// stopping on a held-out split after the warm-up (the weights of the best validation epoch are
// kept). Seeded: same windows and options -> same model on one build.
// The header is torch-free; only lstm_vae_trainer_torch.cc includes ATen.
//
//   LstmVaeTrainOptions o;  o.seed = 7;
//   LOOM_ASSIGN_OR_RETURN(LstmVaeModel m, TrainLstmVae("cpu_busy", windows.values, o));
//   LOOM_RETURN_IF_ERROR(SaveLstmVaeModel(m, "/tmp/vae"));
//
// Thread-safety: TrainLstmVae sets libtorch's intra-op thread count for its duration (a process
// global), so call it from one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/fleet/denoise/lstm_vae_model.h"

namespace loom::monitor {

struct LstmVaeTrainOptions {
  int window = 8;  // samples per window (windows.size() % window == 0)
  int hidden = 4;  // Minder: hidden_size 4
  int latent = 8;  // Minder: latent_size 8
  int max_epochs = 60;
  int min_epochs = 10;  // no early stop before this epoch (nor before the KL warm-up ends)
  int patience = 5;     // epochs without a better validation loss before stopping
  int batch_size = 128;
  double learning_rate = 1e-2;       // Adam
  double beta = 1e-4;                // KL weight (1e-3 collapses square-wave metrics to their mean)
  int kl_warmup_epochs = 10;         // beta grows linearly from 0 over these epochs (0: none)
  double validation_fraction = 0.1;  // held out (seeded shuffle), at least one window
  uint64_t seed = 0;
  int threads = 1;       // libtorch intra-op threads while training
  bool verbose = false;  // one line per epoch on stderr
};

// `windows`: n x options.window normalised samples (n >= 10). Errors: bad options, too few
// windows, non-finite samples, a libtorch failure.
Result<LstmVaeModel> TrainLstmVae(const std::string& metric, std::span<const float> windows,
                                  const LstmVaeTrainOptions& options,
                                  const std::string& data_description = "");

// The torch forward pass of a model (at::lstm for both LSTMs, z = mu): the reconstruction of n
// windows (n x model.window values). The reference the Eigen inference is tested against.
Result<std::vector<float>> LstmVaeTorchReconstruct(const LstmVaeModel& model,
                                                   std::span<const float> windows);

}  // namespace loom::monitor
