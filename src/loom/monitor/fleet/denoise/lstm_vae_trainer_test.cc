#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "loom/monitor/fleet/denoise/lstm_vae.h"
#include "loom/monitor/fleet/denoise/lstm_vae_json.h"
#include "loom/monitor/fleet/denoise/lstm_vae_trainer_torch.h"
#include "loom/monitor/fleet/denoise/testing/random_lstm_vae.h"

namespace loom::monitor {
namespace {

using testing::RandomLstmVaeModel;

std::vector<float> UniformWindows(int n, int w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n) * w);
  for (float& v : x) v = u(rng);
  return x;
}

// The Eigen inference equals the torch forward (at::lstm) on random weights and inputs.
TEST(LstmVaeTrainer, EigenInferenceMatchesTorchForward) {
  for (auto [hidden, latent, window] : {std::tuple{4, 8, 8}, {8, 8, 16}, {3, 5, 8}}) {
    LstmVaeModel m =
        RandomLstmVaeModel("cpu_busy", window, hidden, latent, 40 + hidden, /*scale=*/1.f);
    const int n = 64;
    std::vector<float> x = UniformWindows(n, window, hidden);
    auto torch_out = LstmVaeTorchReconstruct(m, x);
    ASSERT_TRUE(torch_out.ok()) << torch_out.status();
    auto d = LstmVaeDenoiser::Create(m);
    ASSERT_TRUE(d.ok()) << d.status();
    std::vector<float> out(window);
    double max_err = 0, spread = 0;
    for (int i = 0; i < n; ++i) {
      (*d)->Denoise(std::span<const float>(x.data() + i * window, window), out);
      for (int t = 0; t < window; ++t) {
        const float ref = (*torch_out)[i * window + t];
        max_err = std::max(max_err, static_cast<double>(std::abs(out[t] - ref)));
        spread = std::max(spread, static_cast<double>(std::abs(ref - (*torch_out)[t])));
      }
    }
    EXPECT_LT(max_err, 1e-5) << "hidden " << hidden;
    std::vector<float> batch(x.size());
    (*d)->DenoiseBatch(x, batch);
    for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(batch[k], (*torch_out)[k], 1e-5) << k;
    EXPECT_GT(spread, 1e-2) << "outputs must depend on the input";
  }
}

// Noisy windows of a periodic signal (period 9 s, like the simulator's step) and the clean ones.
struct PeriodicData {
  std::vector<float> noisy, clean;
};

PeriodicData Periodic(int n, int w, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> phase(0.f, 9.f);
  std::normal_distribution<float> noise(0.f, sigma);
  PeriodicData d;
  for (int i = 0; i < n; ++i) {
    const float p = phase(rng);
    for (int t = 0; t < w; ++t) {
      const float c = 0.5f + 0.3f * std::sin(2.f * static_cast<float>(M_PI) * (p + t) / 9.f);
      d.clean.push_back(c);
      d.noisy.push_back(std::clamp(c + noise(rng), 0.f, 1.f));
    }
  }
  return d;
}

double Mse(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (static_cast<double>(a[i]) - b[i]) * (a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

TEST(LstmVaeTrainer, TrainingDenoisesAPeriodicSignal) {
  const int w = 8;
  PeriodicData train = Periodic(3000, w, 0.05f, 1);
  LstmVaeTrainOptions o;
  o.seed = 5;
  o.max_epochs = 30;
  auto model = TrainLstmVae("gpu_duty", train.noisy, o, "sine test");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_GE(model->training.epochs, model->training.best_epoch);
  EXPECT_GE(model->training.best_epoch, 1);
  EXPECT_EQ(model->training.train_windows + model->training.validation_windows, 3000);
  EXPECT_EQ(model->training.data, "sine test");

  // Held-out windows: the reconstruction is closer to the clean signal than the noisy input is.
  PeriodicData test = Periodic(500, w, 0.05f, 2);
  auto d = LstmVaeDenoiser::Create(*model);
  ASSERT_TRUE(d.ok());
  std::vector<float> recon(test.noisy.size());
  for (size_t i = 0; i < test.noisy.size(); i += w) {
    (*d)->Denoise(std::span<const float>(test.noisy.data() + i, w),
                  std::span<float>(recon.data() + i, w));
  }
  const double raw = Mse(test.noisy, test.clean), denoised = Mse(recon, test.clean);
  std::printf("raw MSE %.3g, denoised MSE %.3g, ratio %.3f, %d epochs, %.2f s\n", raw, denoised,
              denoised / raw, model->training.epochs, model->training.seconds);
  EXPECT_LT(denoised, 0.4 * raw);
}

// Regression: a near-binary step waveform (like gpu_duty: busy 70% of a 9 s step) must not
// collapse to predicting its mean (it did with beta = 1e-3 on simulated jobs).
TEST(LstmVaeTrainer, SquareWaveDoesNotCollapseToTheMean) {
  const int w = 8, n = 3000;
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<float> phase(0.f, 9.f);
  std::normal_distribution<float> noise(0.f, 0.03f);
  std::vector<float> x;
  for (int i = 0; i < n; ++i) {
    const float p = phase(rng);
    for (int t = 0; t < w; ++t) {
      const float c = std::fmod(p + t, 9.f) < 6.3f ? 0.9f : 0.1f;
      x.push_back(std::clamp(c + noise(rng), 0.f, 1.f));
    }
  }
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= x.size();
  for (float v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  LstmVaeTrainOptions o;
  o.seed = 2;
  o.max_epochs = 25;
  auto model = TrainLstmVae("gpu_duty", x, o);
  ASSERT_TRUE(model.ok()) << model.status();
  std::printf("variance %.3g, validation MSE %.3g, %d epochs, %.2f s\n", var,
              model->training.validation_mse, model->training.epochs, model->training.seconds);
  EXPECT_LT(model->training.validation_mse, 0.3 * var);
}

TEST(LstmVaeTrainer, SeededAndSavable) {
  PeriodicData data = Periodic(400, 8, 0.05f, 3);
  LstmVaeTrainOptions o;
  o.seed = 11;
  o.max_epochs = 2;
  auto a = TrainLstmVae("pfc_tx", data.noisy, o);
  auto b = TrainLstmVae("pfc_tx", data.noisy, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tensors, b->tensors);
  o.seed = 12;
  auto c = TrainLstmVae("pfc_tx", data.noisy, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->tensors, c->tensors);

  const std::string dir = ::testing::TempDir() + "/lstm_vae_trainer_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(SaveLstmVaeModel(*a, dir).ok());
  auto back = ReadLstmVaeModel(dir, "pfc_tx", 8);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tensors, a->tensors);
  EXPECT_EQ(back->training.epochs, 2);
}

TEST(LstmVaeTrainer, BadInputIsAnError) {
  LstmVaeTrainOptions o;
  std::vector<float> few(8 * 5, 0.5f);
  auto r = TrainLstmVae("cpu_busy", few, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at least 10 windows"), std::string::npos);
  std::vector<float> ragged(8 * 20 + 3, 0.5f);
  EXPECT_FALSE(TrainLstmVae("cpu_busy", ragged, o).ok());
  std::vector<float> nan(8 * 20, 0.5f);
  nan[17] = NAN;
  auto n = TrainLstmVae("cpu_busy", nan, o);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("window 2"), std::string::npos);
}

}  // namespace
}  // namespace loom::monitor
