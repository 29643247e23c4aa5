#include "loom/monitor/fleet/denoise/lstm_vae.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "loom/base/file_util.h"
#include "loom/monitor/fleet/denoise/lstm_vae_json.h"
#include "loom/monitor/fleet/denoise/testing/random_lstm_vae.h"

namespace loom::monitor {
namespace {

using testing::RandomLstmVaeModel;
using testing::ScalarLstmVaeReconstruct;

std::string TempDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/lstm_vae_test_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<float> RandomWindows(int n, int w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n) * w);
  for (float& v : x) v = u(rng);
  return x;
}

// The optimised kernel (fixed hidden 4 and 8, dynamic otherwise) against the scalar definition.
TEST(LstmVaeDenoiser, MatchesScalarReference) {
  for (auto [hidden, latent, window] : {std::tuple{4, 8, 8}, {8, 8, 8}, {3, 5, 12}, {4, 2, 2}}) {
    LstmVaeModel m = RandomLstmVaeModel("gpu_power", window, hidden, latent, 100 + hidden);
    auto d = LstmVaeDenoiser::Create(m);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ((*d)->embedding_size(window), window);
    EXPECT_EQ((*d)->name(), "lstm_vae");
    std::vector<float> x = RandomWindows(50, window, hidden);
    std::vector<float> out(window);
    double max_err = 0, max_abs = 0;
    for (int i = 0; i < 50; ++i) {
      std::span<const float> win(x.data() + i * window, window);
      (*d)->Denoise(win, out);
      std::vector<float> ref = ScalarLstmVaeReconstruct(m, win);
      for (int t = 0; t < window; ++t) {
        max_err = std::max(max_err, std::abs(static_cast<double>(out[t]) - ref[t]));
        max_abs = std::max(max_abs, std::abs(static_cast<double>(ref[t])));
      }
    }
    EXPECT_LT(max_err, 1e-5) << "hidden " << hidden << " latent " << latent;
    EXPECT_GT(max_abs, 0.05) << "the reference must not be trivially zero";
  }
}

// Blocks of 8 windows side by side plus a tail: the same values as one window at a time.
TEST(LstmVaeDenoiser, BatchEqualsOneByOne) {
  for (int hidden : {4, 8, 3}) {
    LstmVaeModel m = RandomLstmVaeModel("gpu_power", 8, hidden, 8, 7, /*scale=*/1.f);
    auto d = LstmVaeDenoiser::Create(m);
    ASSERT_TRUE(d.ok());
    const int n = 8 * 5 + 3;
    std::vector<float> x = RandomWindows(n, 8, 11), batch(x.size()), one(8);
    (*d)->DenoiseBatch(x, batch);
    for (int i = 0; i < n; ++i) {
      (*d)->Denoise(std::span<const float>(x.data() + i * 8, 8), one);
      for (int t = 0; t < 8; ++t) EXPECT_NEAR(batch[i * 8 + t], one[t], 1e-6) << i << "," << t;
    }
  }
}

TEST(LstmVaeDenoiser, ZeroWeightsGiveTheOutputBias) {
  LstmVaeModel m = LstmVaeModel::Zeros("cpu_busy", 8, 4, 8);
  m.tensors["out.b"][0] = 0.3f;
  auto d = LstmVaeDenoiser::Create(m);
  ASSERT_TRUE(d.ok());
  std::vector<float> x = RandomWindows(1, 8, 1), out(8, -1.f);
  (*d)->Denoise(x, out);
  for (float v : out) EXPECT_FLOAT_EQ(v, 0.3f);
}

TEST(LstmVaeJson, SaveLoadRoundTrip) {
  const std::string dir = TempDir("roundtrip");
  LstmVaeModel m = RandomLstmVaeModel("nvlink_bw", 8, 4, 8, 3);
  m.training.train_windows = 900;
  m.training.validation_windows = 100;
  m.training.epochs = 7;
  m.training.best_epoch = 5;
  m.training.train_mse = 1.5e-4;
  m.training.validation_mse = 1.75e-4;
  m.training.beta = 1e-3;
  m.training.seed = 18446744073709551615ull;
  m.training.seconds = 2.5;
  m.training.cpu_seconds = 2.25;
  m.training.data = "sim seed 7";
  m.training.norm_horizon_s = 300;
  ASSERT_TRUE(SaveLstmVaeModel(m, dir).ok());
  EXPECT_TRUE(PathExists(dir + "/nvlink_bw.json"));
  auto back = ReadLstmVaeModel(dir, "nvlink_bw", 8);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metric, "nvlink_bw");
  EXPECT_EQ(back->window, 8);
  EXPECT_EQ(back->hidden, 4);
  EXPECT_EQ(back->latent, 8);
  EXPECT_EQ(back->tensors, m.tensors);  // bit-exact floats
  EXPECT_EQ(back->training.seed, m.training.seed);
  EXPECT_EQ(back->training.best_epoch, 5);
  EXPECT_DOUBLE_EQ(back->training.validation_mse, 1.75e-4);
  EXPECT_DOUBLE_EQ(back->training.cpu_seconds, 2.25);
  EXPECT_EQ(back->training.data, "sim seed 7");
  EXPECT_EQ(back->training.norm_horizon_s, 300);

  auto loaded = LoadLstmVae(dir, "nvlink_bw", 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto direct = LstmVaeDenoiser::Create(m);
  ASSERT_TRUE(direct.ok());
  std::vector<float> x = RandomWindows(1, 8, 9), a(8), b(8);
  (*loaded)->Denoise(x, a);
  (*direct)->Denoise(x, b);
  EXPECT_EQ(a, b);
}

TEST(LstmVaeJson, MismatchedMetricOrWindowNamesBoth) {
  const std::string dir = TempDir("mismatch");
  ASSERT_TRUE(SaveLstmVaeModel(RandomLstmVaeModel("cpu_busy", 8, 4, 8, 1), dir).ok());
  auto wrong_window = LoadLstmVae(dir, "cpu_busy", 16);
  ASSERT_FALSE(wrong_window.ok());
  EXPECT_NE(wrong_window.status().message().find("window 8"), std::string::npos);
  EXPECT_NE(wrong_window.status().message().find("window 16"), std::string::npos);

  // A file renamed to another metric's name.
  std::filesystem::copy_file(dir + "/cpu_busy.json", dir + "/gpu_duty.json");
  auto wrong_metric = LoadLstmVae(dir, "gpu_duty");
  ASSERT_FALSE(wrong_metric.ok());
  EXPECT_NE(wrong_metric.status().message().find("'cpu_busy'"), std::string::npos);
  EXPECT_NE(wrong_metric.status().message().find("'gpu_duty'"), std::string::npos);

  auto missing = LoadLstmVae(dir, "pfc_tx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().ToString().find("pfc_tx.json"), std::string::npos);
}

TEST(LstmVaeJson, MalformedFilesAreExplicitErrors) {
  const std::string good = LstmVaeModelToJson(RandomLstmVaeModel("cpu_busy", 8, 4, 8, 2));
  auto edit = [&](auto fn) {
    nlohmann::json j = nlohmann::json::parse(good);
    fn(j);
    return LstmVaeModelFromJson(j.dump(), "m.json");
  };
  auto expect_error = [](const Result<LstmVaeModel>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << "expected an error mentioning " << needle;
    EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status();
    EXPECT_NE(r.status().ToString().find("m.json"), std::string::npos) << r.status();
  };
  ASSERT_TRUE(LstmVaeModelFromJson(good, "m.json").ok());
  expect_error(LstmVaeModelFromJson("{\"format\": ", "m.json"), "m.json");
  expect_error(LstmVaeModelFromJson("[1, 2]", "m.json"), "object");
  expect_error(edit([](auto& j) { j["format"] = "other"; }), "format");
  expect_error(edit([](auto& j) { j["version"] = 2; }), "version");
  expect_error(edit([](auto& j) { j.erase("window"); }), "window");
  expect_error(edit([](auto& j) { j["window"] = "8"; }), "window");
  expect_error(edit([](auto& j) { j["window"] = 1; }), "window");
  expect_error(edit([](auto& j) { j["metric"] = "a/b"; }), "metric");
  expect_error(edit([](auto& j) { j["decoder_input"] = "previous"; }), "decoder_input");
  expect_error(edit([](auto& j) { j["tensors"].erase("dec.w_hh"); }), "dec.w_hh");
  expect_error(edit([](auto& j) {
                 j["tensors"]["extra"] = {{"shape", {1}}, {"data", {0.5}}};
               }),
               "extra");
  expect_error(edit([](auto& j) { j["tensors"]["mu.b"]["data"].push_back(1.0); }), "mu.b");
  expect_error(edit([](auto& j) { j["tensors"]["mu.b"]["data"][0] = "x"; }), "mu.b");
  expect_error(edit([](auto& j) { j["tensors"]["mu.w"]["shape"] = {4, 8}; }), "mu.w");
  expect_error(edit([](auto& j) { j["hidden"] = 5; }), "hidden 5");
  expect_error(edit([](auto& j) { j["training"]["epochs"] = -1; }), "epochs");
}

TEST(LstmVaeJson, SaveRejectsInvalidModels) {
  LstmVaeModel m = RandomLstmVaeModel("cpu_busy", 8, 4, 8, 2);
  m.tensors["out.b"][0] = NAN;
  Status s = SaveLstmVaeModel(m, TempDir("invalid"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("out.b"), std::string::npos);
  EXPECT_FALSE(LstmVaeDenoiser::Create(m).ok());
}

}  // namespace
}  // namespace loom::monitor
