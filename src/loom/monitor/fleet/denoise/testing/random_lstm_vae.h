// Test helper: an LSTM-VAE model with seeded N(0, scale^2) weights, and a plain scalar forward
// pass written straight from the definition in lstm_vae_model.h (std::tanh, 1 / (1 + exp(-x)),
// no folding), the reference the optimised Eigen kernel is diff-tested against.
//
//   LstmVaeModel m = RandomLstmVaeModel("cpu_busy", /*window=*/8, /*hidden=*/4, /*latent=*/8, 7);
//   std::vector<float> r = ScalarLstmVaeReconstruct(m, window);
#pragma once

#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "loom/monitor/fleet/denoise/lstm_vae_model.h"

namespace loom::monitor::testing {

inline LstmVaeModel RandomLstmVaeModel(const std::string& metric, int window, int hidden,
                                       int latent, uint64_t seed, float scale = 0.5f) {
  LstmVaeModel m = LstmVaeModel::Zeros(metric, window, hidden, latent);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  for (auto& [name, values] : m.tensors) {
    for (float& v : values) v = d(rng);
  }
  return m;
}

// One window (model.window samples) -> its reconstruction with z = mu.
inline std::vector<float> ScalarLstmVaeReconstruct(const LstmVaeModel& m,
                                                   std::span<const float> x) {
  const int h = m.hidden, l = m.latent;
  auto at = [&](const char* name, int i) { return static_cast<double>(m.tensors.at(name)[i]); };
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto cell = [&](const char* w_ih, const char* w_hh, const char* b_ih, const char* b_hh,
                  double input, std::vector<double>& hs, std::vector<double>& cs) {
    std::vector<double> g(4 * h);
    for (int r = 0; r < 4 * h; ++r) {
      g[r] = (w_ih ? at(w_ih, r) * input : 0.0) + at(b_ih, r) + at(b_hh, r);
      for (int k = 0; k < h; ++k) g[r] += at(w_hh, r * h + k) * hs[k];
    }
    for (int k = 0; k < h; ++k) {
      const double i = sigmoid(g[k]), f = sigmoid(g[h + k]), gg = std::tanh(g[2 * h + k]),
                   o = sigmoid(g[3 * h + k]);
      cs[k] = f * cs[k] + i * gg;
      hs[k] = o * std::tanh(cs[k]);
    }
  };
  std::vector<double> hs(h, 0.0), cs(h, 0.0);
  for (int t = 0; t < m.window; ++t)
    cell("enc.w_ih", "enc.w_hh", "enc.b_ih", "enc.b_hh", x[t], hs, cs);
  std::vector<double> mu(l);
  for (int r = 0; r < l; ++r) {
    mu[r] = at("mu.b", r);
    for (int k = 0; k < h; ++k) mu[r] += at("mu.w", r * h + k) * hs[k];
  }
  std::vector<double> init(2 * h);
  for (int r = 0; r < 2 * h; ++r) {
    init[r] = at("dec_init.b", r);
    for (int k = 0; k < l; ++k) init[r] += at("dec_init.w", r * l + k) * mu[k];
  }
  hs.assign(init.begin(), init.begin() + h);
  cs.assign(init.begin() + h, init.end());
  std::vector<float> out(m.window);
  for (int t = 0; t < m.window; ++t) {
    cell(nullptr, "dec.w_hh", "dec.b_ih", "dec.b_hh", 0.0, hs, cs);
    double y = at("out.b", 0);
    for (int k = 0; k < h; ++k) y += at("out.w", k) * hs[k];
    out[t] = static_cast<float>(y);
  }
  return out;
}

}  // namespace loom::monitor::testing
