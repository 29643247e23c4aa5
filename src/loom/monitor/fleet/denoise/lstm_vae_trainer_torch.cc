#include "loom/monitor/fleet/denoise/lstm_vae_trainer_torch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

namespace loom::monitor {
namespace {

using Params = std::map<std::string, at::Tensor>;

// PyTorch's default initialisation: LSTM weights and biases U(-1/sqrt(H), 1/sqrt(H)); a Linear's
// weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)). Except logvar.b = kInitLogVar: starting with
// sigma ~ 1 the sampled z is mostly noise, the decoder learns to ignore it and training sits on
// the "predict the mean" plateau (posterior collapse); a small initial sigma starts it as a
// near-deterministic autoencoder and the KL term then widens the posterior.
constexpr double kInitLogVar = -6.0;
Params InitParams(int hidden, int latent, at::Generator& gen) {
  Params p;
  for (const auto& [name, shape] : LstmVaeTensorShapes(hidden, latent)) {
    const std::string layer = name.substr(0, name.find('.'));
    const int fan_in =
        layer == "enc" || layer == "dec" || layer == "out" || layer == "mu" || layer == "logvar"
            ? hidden
            : latent;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    std::vector<int64_t> dims(shape.begin(), shape.end());
    p[name] = name == "logvar.b" ? at::full(dims, kInitLogVar).requires_grad_(true)
                                 : (at::rand(dims, gen) * (2 * bound) - bound).requires_grad_(true);
  }
  return p;
}

Params ParamsFromModel(const LstmVaeModel& m) {
  Params p;
  for (const auto& [name, shape] : LstmVaeTensorShapes(m.hidden, m.latent)) {
    std::vector<int64_t> dims(shape.begin(), shape.end());
    p[name] = at::tensor(m.tensors.at(name), at::kFloat).reshape(dims);
  }
  return p;
}

void CopyToModel(const Params& p, LstmVaeModel* m) {
  for (auto& [name, values] : m->tensors) {
    at::Tensor t = p.at(name).detach().contiguous();
    values.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
}

struct Forward {
  at::Tensor recon;   // (B, w)
  at::Tensor mu;      // (B, L)
  at::Tensor logvar;  // (B, L)
};

// x: (B, w). sample: reparameterised z = mu + exp(logvar / 2) * eps; else z = mu.
Forward Run(const Params& p, const at::Tensor& x, int hidden, bool sample, at::Generator* gen) {
  const int64_t b = x.size(0), w = x.size(1);
  at::Tensor zeros_state = at::zeros({1, b, hidden});
  auto enc = at::lstm(x.unsqueeze(-1), {zeros_state, zeros_state},
                      {p.at("enc.w_ih"), p.at("enc.w_hh"), p.at("enc.b_ih"), p.at("enc.b_hh")},
                      /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0, /*train=*/false,
                      /*bidirectional=*/false, /*batch_first=*/true);
  at::Tensor h = std::get<1>(enc)[0];  // (B, H)
  Forward f;
  f.mu = at::linear(h, p.at("mu.w"), p.at("mu.b"));
  f.logvar = at::linear(h, p.at("logvar.w"), p.at("logvar.b"));
  at::Tensor z = f.mu;
  if (sample) z = f.mu + at::exp(0.5 * f.logvar) * at::randn(f.mu.sizes(), *gen);
  at::Tensor init = at::linear(z, p.at("dec_init.w"), p.at("dec_init.b"));  // (B, 2H)
  at::Tensor h0 = init.narrow(1, 0, hidden).unsqueeze(0).contiguous();
  at::Tensor c0 = init.narrow(1, hidden, hidden).unsqueeze(0).contiguous();
  // The decoder reads zeros: its input weights never matter, so they are not parameters.
  at::Tensor no_input_w = at::zeros({4 * hidden, 1});
  auto dec = at::lstm(at::zeros({b, w, 1}), {h0, c0},
                      {no_input_w, p.at("dec.w_hh"), p.at("dec.b_ih"), p.at("dec.b_hh")}, true, 1,
                      0.0, false, false, true);
  f.recon = at::linear(std::get<0>(dec), p.at("out.w"), p.at("out.b")).squeeze(-1);
  return f;
}

double ReconMse(const Params& p, const at::Tensor& x, int hidden) {
  at::NoGradGuard no_grad;
  if (x.size(0) == 0) return NAN;
  return at::mse_loss(Run(p, x, hidden, false, nullptr).recon, x).item<double>();
}

Status CheckOptions(const LstmVaeTrainOptions& o, size_t values) {
  auto bad = [](const std::string& what) {
    return InvalidArgumentError("LSTM-VAE training: " + what);
  };
  if (o.window < 2) return bad("window must be >= 2, got " + std::to_string(o.window));
  if (o.hidden < 1 || o.hidden > 256) return bad("hidden must be in [1, 256]");
  if (o.latent < 1 || o.latent > 256) return bad("latent must be in [1, 256]");
  if (o.max_epochs < 1) return bad("max_epochs must be >= 1");
  if (o.min_epochs < 0) return bad("min_epochs must be >= 0");
  if (o.patience < 1) return bad("patience must be >= 1");
  if (o.kl_warmup_epochs < 0) return bad("kl_warmup_epochs must be >= 0");
  if (o.batch_size < 1) return bad("batch_size must be >= 1");
  if (!(o.learning_rate > 0)) return bad("learning_rate must be > 0");
  if (!(o.beta >= 0)) return bad("beta must be >= 0");
  if (!(o.validation_fraction > 0 && o.validation_fraction < 1)) {
    return bad("validation_fraction must be in (0, 1)");
  }
  if (o.threads < 1) return bad("threads must be >= 1");
  if (values % o.window != 0) {
    return bad(std::to_string(values) + " samples are not a whole number of windows of " +
               std::to_string(o.window));
  }
  if (values / o.window < 10) {
    return bad("need at least 10 windows, got " + std::to_string(values / o.window));
  }
  return OkStatus();
}

// Adam (beta 0.9, 0.999, eps 1e-8) after clipping the global gradient norm to 1.
class Adam {
 public:
  Adam(const Params& p, double lr) : lr_(lr) {
    for (const auto& [name, t] : p) {
      m1_[name] = at::zeros_like(t);
      m2_[name] = at::zeros_like(t);
    }
  }
  void Step(Params& p) {
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8, kClip = 1.0;
    at::NoGradGuard no_grad;
    double norm2 = 0;
    for (auto& [name, t] : p) norm2 += t.grad().pow(2).sum().item<double>();
    const double scale = std::sqrt(norm2) > kClip ? kClip / std::sqrt(norm2) : 1.0;
    ++step_;
    const double c1 = 1 - std::pow(kBeta1, step_), c2 = 1 - std::pow(kBeta2, step_);
    for (auto& [name, t] : p) {
      at::Tensor g = t.grad() * scale;
      m1_[name].mul_(kBeta1).add_(g, 1 - kBeta1);
      m2_[name].mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
      t.addcdiv_(m1_[name] / c1, (m2_[name] / c2).sqrt_().add_(kEps), -lr_);
    }
  }

 private:
  double lr_;
  int64_t step_ = 0;
  Params m1_, m2_;
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Result<LstmVaeModel> Train(const std::string& metric, std::span<const float> windows,
                           const LstmVaeTrainOptions& o, const std::string& data) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuSeconds();
  for (size_t i = 0; i < windows.size(); ++i) {
    if (!std::isfinite(windows[i])) {
      return InvalidArgumentError("LSTM-VAE training for '" + metric + "': window " +
                                  std::to_string(i / o.window) + " has a non-finite sample");
    }
  }
  const int64_t n = static_cast<int64_t>(windows.size()) / o.window;
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  at::Tensor all = at::tensor(std::vector<float>(windows.begin(), windows.end()), at::kFloat)
                       .reshape({n, o.window});
  at::Tensor order = at::randperm(n, gen);
  const int64_t n_val = std::max<int64_t>(1, static_cast<int64_t>(n * o.validation_fraction));
  at::Tensor val = all.index_select(0, order.narrow(0, 0, n_val));
  at::Tensor train = all.index_select(0, order.narrow(0, n_val, n - n_val));
  const int64_t n_train = train.size(0);

  Params p = InitParams(o.hidden, o.latent, gen);
  {
    // Start the output at the data's mean: no large first-epoch error to saturate the gates with.
    at::NoGradGuard no_grad;
    p.at("out.b").fill_(train.mean().item<double>());
  }
  Params best;
  for (auto& [name, t] : p) best[name] = t.detach().clone();
  Adam adam(p, o.learning_rate);
  double best_val = ReconMse(p, val, o.hidden);
  LstmVaeModel model = LstmVaeModel::Zeros(metric, o.window, o.hidden, o.latent);
  LstmVaeTrainingInfo& info = model.training;
  int since_best = 0;
  for (int epoch = 1; epoch <= o.max_epochs; ++epoch) {
    at::Tensor perm = at::randperm(n_train, gen);
    const double beta = o.kl_warmup_epochs > 0
                            ? o.beta * std::min(1.0, double(epoch) / o.kl_warmup_epochs)
                            : o.beta;
    double loss_sum = 0;
    int batches = 0;
    for (int64_t first = 0; first < n_train; first += o.batch_size) {
      at::Tensor x = train.index_select(
          0, perm.narrow(0, first, std::min<int64_t>(o.batch_size, n_train - first)));
      Forward f = Run(p, x, o.hidden, /*sample=*/true, &gen);
      at::Tensor kl = (-0.5 * (1 + f.logvar - f.mu * f.mu - at::exp(f.logvar)).sum(1)).mean();
      at::Tensor loss = at::mse_loss(f.recon, x) + beta * kl;
      for (auto& [name, t] : p) t.mutable_grad() = at::Tensor();
      loss.backward();
      adam.Step(p);
      loss_sum += loss.item<double>();
      ++batches;
    }
    const double val_mse = ReconMse(p, val, o.hidden);
    info.epochs = epoch;
    if (o.verbose) {
      std::fprintf(stderr, "  %s epoch %d: loss %.3g, validation MSE %.3g\n", metric.c_str(), epoch,
                   loss_sum / batches, val_mse);
    }
    if (!std::isfinite(val_mse)) {
      return InternalError("LSTM-VAE training for '" + metric + "' diverged at epoch " +
                           std::to_string(epoch));
    }
    if (val_mse < best_val * (1 - 1e-4) || info.best_epoch == 0) {
      best_val = val_mse;
      info.best_epoch = epoch;
      since_best = 0;
      for (auto& [name, t] : p) best[name] = t.detach().clone();
    } else if (++since_best >= o.patience && epoch >= std::max(o.min_epochs, o.kl_warmup_epochs)) {
      break;
    }
  }
  CopyToModel(best, &model);
  info.train_windows = n_train;
  info.validation_windows = n_val;
  info.train_mse = ReconMse(best, train, o.hidden);
  info.validation_mse = ReconMse(best, val, o.hidden);
  info.beta = o.beta;
  info.seed = o.seed;
  info.data = data;
  info.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(model, "trained model '" + metric + "'"));
  return model;
}

}  // namespace

Result<LstmVaeModel> TrainLstmVae(const std::string& metric, std::span<const float> windows,
                                  const LstmVaeTrainOptions& options,
                                  const std::string& data_description) {
  LOOM_RETURN_IF_ERROR(CheckOptions(options, windows.size()));
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(options.threads);
  Result<LstmVaeModel> result = InternalError("unreachable");
  try {
    result = Train(metric, windows, options, data_description);
  } catch (const std::exception& e) {
    result = InternalError("LSTM-VAE training for '" + metric + "': libtorch: " + e.what());
  }
  at::set_num_threads(saved_threads);
  return result;
}

Result<std::vector<float>> LstmVaeTorchReconstruct(const LstmVaeModel& model,
                                                   std::span<const float> windows) {
  LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(model, "LSTM-VAE model '" + model.metric + "'"));
  if (windows.size() % model.window != 0) {
    return InvalidArgumentError("LstmVaeTorchReconstruct: " + std::to_string(windows.size()) +
                                " samples are not whole windows of " +
                                std::to_string(model.window));
  }
  try {
    at::NoGradGuard no_grad;
    const int64_t n = static_cast<int64_t>(windows.size()) / model.window;
    at::Tensor x = at::tensor(std::vector<float>(windows.begin(), windows.end()), at::kFloat)
                       .reshape({n, model.window});
    at::Tensor r = Run(ParamsFromModel(model), x, model.hidden, false, nullptr).recon.contiguous();
    return std::vector<float>(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
  } catch (const std::exception& e) {
    return InternalError(std::string("LstmVaeTorchReconstruct: libtorch: ") + e.what());
  }
}

}  // namespace loom::monitor
