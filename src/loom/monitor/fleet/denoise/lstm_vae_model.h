// LstmVaeModel: the weights of one metric's LSTM-VAE denoiser (Minder, spec fault_detection.md
// §1 step 3 and §7.2), the plain data shared by the torch trainer (lstm_vae_trainer_torch.h), the
// JSON file format (lstm_vae_json.h) and the torch-free Eigen inference (lstm_vae.h).
//
// Architecture (hidden H = 4, latent L = 8, window w = 8 by default):
//   encoder  LSTM(1 -> H) over the w samples, from zero state; its last hidden state h_w gives
//            mu = mu.w h_w + mu.b and logvar = logvar.w h_w + logvar.b (both L).
//   decoder  [h0; c0] = dec_init.w z + dec_init.b (2H, no activation); an LSTM(hidden H) unrolled
//            w steps with **zero input** at every step (so it has no input weights); step t's
//            output is out.w h_t + out.b (one value).
//   LSTM     PyTorch gate order i, f, g, o: gates = w_ih x + b_ih + w_hh h + b_hh;
//            c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c').
// The reconstruction with z = mu (no sampling) is the denoised window.
//
//   LstmVaeModel m = LstmVaeModel::Zeros("cpu_busy", /*window=*/8, /*hidden=*/4, /*latent=*/8);
//   m.tensors["enc.w_hh"][0] = 0.1f;  // row-major, shapes from LstmVaeTensorShapes()
//   LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(m, "cpu_busy.json"));
//
// Thread-safety: value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

// How a model was trained (informational; written to and read from the file).
struct LstmVaeTrainingInfo {
  int64_t train_windows = 0;
  int64_t validation_windows = 0;
  int epochs = 0;        // epochs run (early stopping may end before the maximum)
  int best_epoch = 0;    // epoch whose weights were kept (1-based)
  double train_mse = 0;  // reconstruction MSE (z = mu) of the kept weights
  double validation_mse = 0;
  double beta = 0;  // KL weight of the loss MSE + beta * KL
  uint64_t seed = 0;
  double seconds = 0;            // wall time of training
  double cpu_seconds = 0;        // CPU time of the training thread (robust to a busy machine)
  std::string data;              // where the windows came from ("sim seed 7", "job /tmp/j")
  int64_t norm_horizon_s = 600;  // min-max normalisation horizon of the windows (0 = the job)
};

struct LstmVaeModel {
  static constexpr int kFormatVersion = 1;

  std::string metric;
  int window = 8;
  int hidden = 4;
  int latent = 8;
  // Name -> row-major values; exactly the names and shapes of LstmVaeTensorShapes().
  std::map<std::string, std::vector<float>> tensors;
  LstmVaeTrainingInfo training;

  // All tensors present and zero.
  static LstmVaeModel Zeros(std::string metric, int window, int hidden, int latent);
};

// The tensors of a model with these sizes, in file order: name and shape (rows, cols; a vector
// is {n}).
std::vector<std::pair<std::string, std::vector<int>>> LstmVaeTensorShapes(int hidden, int latent);

// Explicit errors naming `where` and the field: sizes out of range (window 2..4096, hidden
// 1..256, latent 1..256), a bad metric name (empty, or with '/' or whitespace), a missing,
// unknown or wrongly sized tensor, a non-finite value.
Status ValidateLstmVaeModel(const LstmVaeModel& model, const std::string& where);

}  // namespace loom::monitor
