#include "loom/trace/costmodel/transformer_torch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "loom/trace/costmodel/sequence.h"

namespace loom::trace::costmodel {
namespace {

// "l<index>." (built with +=: GCC 12 warns falsely on "l" + std::to_string(i)).
std::string LayerPrefix(int layer) {
  std::string p = "l";
  p += std::to_string(layer);
  p += '.';
  return p;
}

using Params = std::map<std::string, at::Tensor>;
using nlohmann::json;

// Parameter names and shapes of a model with options `o` (Linear weights are [out, in]).
std::vector<std::pair<std::string, std::vector<int64_t>>> ParamShapes(const TransformerOptions& o) {
  const int64_t d = o.d_model, f = kNumLeafFeatures, g = kNumDeviceFeatures;
  std::vector<std::pair<std::string, std::vector<int64_t>>> s = {{"in.w", {d, f}}, {"in.b", {d}}};
  for (int l = 0; l < o.layers; ++l) {
    const std::string p = LayerPrefix(l);
    s.push_back({p + "qkv.w", {3 * d, d}});
    s.push_back({p + "qkv.b", {3 * d}});
    s.push_back({p + "out.w", {d, d}});
    s.push_back({p + "out.b", {d}});
    s.push_back({p + "ln1.g", {d}});
    s.push_back({p + "ln1.b", {d}});
    s.push_back({p + "ff1.w", {o.ffn, d}});
    s.push_back({p + "ff1.b", {o.ffn}});
    s.push_back({p + "ff2.w", {d, o.ffn}});
    s.push_back({p + "ff2.b", {d}});
    s.push_back({p + "ln2.g", {d}});
    s.push_back({p + "ln2.b", {d}});
  }
  for (auto [name, in] : std::vector<std::pair<std::string, int64_t>>{
           {"pool", 2 * d}, {"dev1", g}, {"dev2", d}, {"dec1", d}}) {
    s.push_back({name + ".w", {d, in}});
    s.push_back({name + ".b", {d}});
  }
  s.push_back({"dec2.w", {1, d}});
  s.push_back({"dec2.b", {1}});
  return s;
}

// PyTorch's defaults: Linear U(-1/sqrt(in), 1/sqrt(in)); LayerNorm gain 1, bias 0.
Params InitParams(const TransformerOptions& o, at::Generator& gen) {
  const auto shapes = ParamShapes(o);
  std::map<std::string, int64_t> fan_in;  // layer prefix ("l0.qkv") -> input width
  for (const auto& [name, shape] : shapes) {
    if (name.back() == 'w') fan_in[name.substr(0, name.size() - 2)] = shape[1];
  }
  Params p;
  for (const auto& [name, shape] : shapes) {
    const bool ln = name.find(".ln") != std::string::npos;
    at::Tensor t;
    if (ln) {
      t = name.back() == 'g' ? at::ones(shape) : at::zeros(shape);
    } else {
      const double bound =
          1.0 / std::sqrt(static_cast<double>(fan_in.at(name.substr(0, name.size() - 2))));
      t = at::rand(shape, gen) * (2 * bound) - bound;
    }
    p[name] = t.requires_grad_(true);
  }
  return p;
}

// Standardised inputs of a set of samples.
struct Batch {
  at::Tensor leaves, mask, device, target;  // [n,L,F], [n,L], [n,G], [n] (ln latency)
};

struct Normalisers {
  LeafNormalizer leaf;
  std::vector<float> dev_mean, dev_inv_std;
  double target_mean = 0, target_std = 1;
};

at::Tensor FromVector(const std::vector<float>& v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kFloat).reshape(shape);
}

Result<Batch> MakeBatch(const Dataset& ds, const std::vector<int>& idx, const Normalisers& nz,
                        const TransformerOptions& o) {
  SequenceOptions so;
  so.max_leaves = o.max_leaves;
  so.positional_encoding = o.positional_encoding;
  LOOM_ASSIGN_OR_RETURN(SequenceTensors t, BuildSequenceTensors(ds, idx, nz.leaf, so));
  for (int64_t r = 0; r < t.n; ++r) {
    for (int64_t g = 0; g < t.device_features; ++g) {
      float& v = t.device[r * t.device_features + g];
      v = (v - nz.dev_mean[g]) * nz.dev_inv_std[g];
    }
  }
  Batch b;
  b.leaves = FromVector(t.leaves, {t.n, t.max_leaves, t.features});
  b.mask = FromVector(t.mask, {t.n, t.max_leaves});
  b.device = FromVector(t.device, {t.n, t.device_features});
  b.target = FromVector(t.target, {t.n});
  return b;
}

Normalisers FitNormalisers(const Dataset& ds, const std::vector<int>& idx) {
  Normalisers nz;
  nz.leaf = LeafNormalizer::Fit(ds, idx);
  std::vector<double> sum(kNumDeviceFeatures, 0), sq(kNumDeviceFeatures, 0);
  double ys = 0, yq = 0;
  for (int i : idx) {
    const Sample& s = ds.samples[i];
    const DeviceInfo* d = ds.FindDevice(s.device);
    const std::vector<float> v = d ? DeviceVector(*d) : std::vector<float>(kNumDeviceFeatures, 0);
    for (int g = 0; g < kNumDeviceFeatures; ++g) {
      sum[g] += v[g];
      sq[g] += double(v[g]) * v[g];
    }
    const double y = std::log(s.latency_s);
    ys += y;
    yq += y * y;
  }
  const double n = std::max<double>(1, idx.size());
  for (int g = 0; g < kNumDeviceFeatures; ++g) {
    const double m = sum[g] / n, var = std::max(sq[g] / n - m * m, 0.0);
    nz.dev_mean.push_back(static_cast<float>(m));
    // Constant columns (the shared caches) stay 0 on every device, including unseen ones.
    nz.dev_inv_std.push_back(var < 1e-12 ? 0.f : static_cast<float>(1 / std::sqrt(var)));
  }
  nz.target_mean = ys / n;
  nz.target_std = std::max(std::sqrt(std::max(yq / n - nz.target_mean * nz.target_mean, 0.0)),
                           1e-3);
  return nz;
}

struct Output {
  at::Tensor y;  // standardised ln latency [B]
  at::Tensor z;  // program latent [B, d]
};

// Rows per forward pass when predicting or embedding a whole sample set.
constexpr int64_t kInferenceRows = 1024;

Output Forward(const Params& p, const TransformerOptions& o, const at::Tensor& x,
               const at::Tensor& mask, const at::Tensor& dev) {
  const int64_t b = x.size(0), len = x.size(1), d = o.d_model, h = o.heads, dh = d / h;
  at::Tensor key_bias = ((1 - mask) * -1e9).view({b, 1, 1, len});
  at::Tensor s = at::linear(x, p.at("in.w"), p.at("in.b"));
  for (int l = 0; l < o.layers; ++l) {
    const std::string n = LayerPrefix(l);
    std::vector<at::Tensor> qkv = at::linear(s, p.at(n + "qkv.w"), p.at(n + "qkv.b")).chunk(3, -1);
    auto heads = [&](const at::Tensor& t) { return t.view({b, len, h, dh}).transpose(1, 2); };
    at::Tensor att = at::softmax(
        at::matmul(heads(qkv[0]), heads(qkv[1]).transpose(-2, -1)) / std::sqrt(double(dh)) +
            key_bias,
        -1);
    at::Tensor ctx = at::matmul(att, heads(qkv[2])).transpose(1, 2).reshape({b, len, d});
    s = at::layer_norm(s + at::linear(ctx, p.at(n + "out.w"), p.at(n + "out.b")), {d},
                       p.at(n + "ln1.g"), p.at(n + "ln1.b"));
    at::Tensor ff = at::linear(at::relu(at::linear(s, p.at(n + "ff1.w"), p.at(n + "ff1.b"))),
                               p.at(n + "ff2.w"), p.at(n + "ff2.b"));
    s = at::layer_norm(s + ff, {d}, p.at(n + "ln2.g"), p.at(n + "ln2.b"));
  }
  at::Tensor m = mask.unsqueeze(-1);
  at::Tensor mean = (s * m).sum(1) / m.sum(1).clamp_min(1);
  at::Tensor max = std::get<0>((s + (1 - m) * -1e9).max(1));
  Output out;
  out.z = at::relu(at::linear(at::cat({mean, max}, 1), p.at("pool.w"), p.at("pool.b")));
  at::Tensor e = at::linear(at::relu(at::linear(dev, p.at("dev1.w"), p.at("dev1.b"))),
                            p.at("dev2.w"), p.at("dev2.b"));
  out.y = at::linear(at::relu(at::linear(out.z + e, p.at("dec1.w"), p.at("dec1.b"))),
                     p.at("dec2.w"), p.at("dec2.b"))
              .squeeze(-1);
  return out;
}

// CMD of two [n, d] / [m, d] tensors (differentiable).
at::Tensor Cmd(const at::Tensor& a, const at::Tensor& b, int order) {
  at::Tensor ma = a.mean(0), mb = b.mean(0);
  at::Tensor total = (ma - mb).pow(2).sum().add(1e-12).sqrt();
  at::Tensor ca = a - ma, cb = b - mb;
  for (int k = 2; k <= order; ++k) {
    total = total + (ca.pow(k).mean(0) - cb.pow(k).mean(0)).pow(2).sum().add(1e-12).sqrt();
  }
  return total;
}

class Adam {
 public:
  void Init(const Params& p) {
    for (const auto& [name, t] : p) {
      m1_[name] = at::zeros_like(t);
      m2_[name] = at::zeros_like(t);
    }
    step_ = 0;
  }
  void Step(Params& p, double lr, double weight_decay) {
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8, kClip = 1.0;
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> sq;
    for (auto& [name, t] : p) {
      if (t.grad().defined()) sq.push_back(t.grad().pow(2).sum());
    }
    const double norm2 = sq.empty() ? 0 : at::stack(sq).sum().item<double>();
    const double scale = std::sqrt(norm2) > kClip ? kClip / std::sqrt(norm2) : 1.0;
    ++step_;
    const double c1 = 1 - std::pow(kBeta1, step_), c2 = 1 - std::pow(kBeta2, step_);
    for (auto& [name, t] : p) {
      if (!t.grad().defined()) continue;
      at::Tensor g = t.grad() * scale + weight_decay * t;
      m1_[name].mul_(kBeta1).add_(g, 1 - kBeta1);
      m2_[name].mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
      t.addcdiv_(m1_[name] / c1, (m2_[name] / c2).sqrt_().add_(kEps), -lr);
    }
  }
  Adam Clone() const {
    Adam a;
    for (const auto& [n, t] : m1_) a.m1_[n] = t.clone();
    for (const auto& [n, t] : m2_) a.m2_[n] = t.clone();
    a.step_ = step_;
    return a;
  }

 private:
  Params m1_, m2_;
  int64_t step_ = 0;
};

Params CloneParams(const Params& p) {
  Params c;
  for (const auto& [n, t] : p) c[n] = t.detach().clone().requires_grad_(true);
  return c;
}

// Restores torch's intra-op thread count on scope exit.
class OneThread {
 public:
  OneThread() : saved_(at::get_num_threads()) { at::set_num_threads(1); }
  ~OneThread() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

std::string BadOptions(const TransformerOptions& o) {
  if (o.d_model < 1 || o.heads < 1 || o.d_model % o.heads != 0) {
    return "d_model must be a positive multiple of heads";
  }
  if (o.layers < 0 || o.ffn < 1 || o.max_leaves < 1) return "layers, ffn, max_leaves";
  if (o.epochs < 1 || o.batch < 1 || !(o.lr > 0)) return "epochs, batch >= 1 and lr > 0";
  if (o.cmd_order < 1) return "cmd_order must be >= 1";
  if (!(o.validation_fraction >= 0 && o.validation_fraction < 1)) return "validation_fraction";
  return "";
}

}  // namespace

struct TransformerPredictor::Impl {
  TransformerOptions o;
  Normalisers nz;
  Params p;
  Adam adam;
  TransformerTrainingLog log;
  bool trained = false;

  double RmseLog(const Batch& b) const {
    at::NoGradGuard no_grad;
    if (b.target.size(0) == 0) return 0;
    at::Tensor y = Forward(p, o, b.leaves, b.mask, b.device).y * nz.target_std + nz.target_mean;
    return (y - b.target).pow(2).mean().sqrt().item<double>();
  }

  // One epoch over `train` (and, when cmd_weight > 0 and `target` is non-empty, a random target
  // batch per step for the CMD term). Returns the mean loss.
  double Epoch(const Batch& train, const Batch* target, double lr, at::Generator& gen) {
    const int64_t n = train.target.size(0);
    at::Tensor perm = at::randperm(n, gen);
    double sum = 0;
    int steps = 0;
    for (int64_t first = 0; first < n; first += o.batch) {
      at::Tensor ix = perm.narrow(0, first, std::min<int64_t>(o.batch, n - first));
      Output out = Forward(p, o, train.leaves.index_select(0, ix), train.mask.index_select(0, ix),
                           train.device.index_select(0, ix));
      at::Tensor y = (train.target.index_select(0, ix) - nz.target_mean) / nz.target_std;
      at::Tensor loss = at::mse_loss(out.y, y);
      if (o.mape_weight > 0) {
        at::Tensor ln_ratio = ((out.y - y) * nz.target_std).clamp(-3, 3);
        loss = loss + o.mape_weight * (at::exp(ln_ratio) - 1).abs().mean();
      }
      if (target != nullptr && o.cmd_weight > 0 && ix.size(0) > 1) {
        const int64_t m = target->target.size(0);
        at::Tensor tx = at::randint(m, {std::min<int64_t>(o.batch, m)}, gen);
        Output tout = Forward(p, o, target->leaves.index_select(0, tx),
                              target->mask.index_select(0, tx), target->device.index_select(0, tx));
        loss = loss + o.cmd_weight * Cmd(out.z, tout.z, o.cmd_order);
      }
      for (auto& [name, t] : p) t.mutable_grad() = at::Tensor();
      loss.backward();
      adam.Step(p, lr, o.weight_decay);
      sum += loss.item<double>();
      ++steps;
    }
    return steps ? sum / steps : 0;
  }

  // Runs the trained model over `samples` in batches of kInferenceRows (no gradients, one
  // intra-op thread) and hands each batch's output, in sample order, to `use`. `what` names the
  // caller in the error of an untrained model; libtorch exceptions become kInternal.
  Status ForEachBatch(const char* what, const Dataset& ds, const std::vector<int>& samples,
                      const std::function<void(const Output&)>& use) const {
    if (!trained) {
      return FailedPreconditionError(std::string("costmodel transformer: ") + what +
                                     " before Train");
    }
    try {
      OneThread one_thread;
      at::NoGradGuard no_grad;
      LOOM_ASSIGN_OR_RETURN(Batch b, MakeBatch(ds, samples, nz, o));
      const int64_t n = b.target.size(0);
      for (int64_t first = 0; first < n; first += kInferenceRows) {
        const int64_t len = std::min<int64_t>(kInferenceRows, n - first);
        use(Forward(p, o, b.leaves.narrow(0, first, len), b.mask.narrow(0, first, len),
                    b.device.narrow(0, first, len)));
      }
    } catch (const std::exception& e) {
      return InternalError(std::string("costmodel transformer: libtorch: ") + e.what());
    }
    return OkStatus();
  }
};

TransformerPredictor::TransformerPredictor(const TransformerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->o = options;
}
TransformerPredictor::~TransformerPredictor() = default;
TransformerPredictor::TransformerPredictor(TransformerPredictor&&) noexcept = default;
TransformerPredictor& TransformerPredictor::operator=(TransformerPredictor&&) noexcept = default;

const TransformerOptions& TransformerPredictor::options() const { return impl_->o; }
const TransformerTrainingLog& TransformerPredictor::training_log() const { return impl_->log; }

Status TransformerPredictor::Train(const Dataset& ds, const std::vector<int>& train,
                                   const std::vector<int>& unlabeled) {
  Impl& m = *impl_;
  const TransformerOptions& o = m.o;
  if (const std::string bad = BadOptions(o); !bad.empty()) {
    return InvalidArgumentError("costmodel transformer: bad options: " + bad);
  }
  if (train.size() < 2) {
    return InvalidArgumentError("costmodel transformer: need >= 2 training samples, got " +
                                std::to_string(train.size()));
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    OneThread one_thread;
    at::Generator gen = at::detail::createCPUGenerator(o.seed);
    // Validation split (positions into `train`), drawn with the same generator.
    std::vector<int> shuffled = train;
    {
      at::Tensor perm = at::randperm(static_cast<int64_t>(train.size()), gen);
      for (size_t i = 0; i < train.size(); ++i) shuffled[i] = train[perm[i].item<int64_t>()];
    }
    const size_t n_val = static_cast<size_t>(o.validation_fraction * train.size());
    std::vector<int> val(shuffled.begin(), shuffled.begin() + n_val);
    std::vector<int> fit(shuffled.begin() + n_val, shuffled.end());
    m.nz = FitNormalisers(ds, fit);
    LOOM_ASSIGN_OR_RETURN(Batch bt, MakeBatch(ds, fit, m.nz, o));
    LOOM_ASSIGN_OR_RETURN(Batch bv, MakeBatch(ds, val, m.nz, o));
    std::unique_ptr<Batch> tgt;
    if (!unlabeled.empty() && o.cmd_weight > 0) {
      LOOM_ASSIGN_OR_RETURN(Batch b, MakeBatch(ds, unlabeled, m.nz, o));
      tgt = std::make_unique<Batch>(std::move(b));
    }
    m.p = InitParams(o, gen);
    m.adam.Init(m.p);
    m.log = {};
    Params best = CloneParams(m.p);
    double best_val = 1e300;
    for (int e = 1; e <= o.epochs; ++e) {
      const double frac = double(e - 1) / o.epochs;
      const double lr = o.lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * frac)));
      const double loss = m.Epoch(bt, tgt.get(), lr, gen);
      m.log.epoch_loss.push_back(loss);
      const double v = n_val > 0 ? m.RmseLog(bv) : loss;
      if (!std::isfinite(loss)) {
        return InternalError("costmodel transformer: training diverged at epoch " +
                             std::to_string(e));
      }
      if (v < best_val) {
        best_val = v;
        m.log.best_epoch = e;
        best = CloneParams(m.p);
      }
      if (o.verbose) {
        std::fprintf(stderr, "  transformer epoch %d: loss %.4f, validation RMSE(ln) %.4f\n", e,
                     loss, v);
      }
    }
    m.p = std::move(best);
    m.adam.Init(m.p);
    m.log.best_validation_rmse_log = best_val;
  } catch (const std::exception& e) {
    return InternalError(std::string("costmodel transformer: libtorch: ") + e.what());
  }
  m.trained = true;
  m.log.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return OkStatus();
}

Status TransformerPredictor::FineTune(const Dataset& ds, const std::vector<int>& samples) {
  Impl& m = *impl_;
  if (!m.trained) return FailedPreconditionError("costmodel transformer: FineTune before Train");
  if (samples.empty()) return InvalidArgumentError("costmodel transformer: nothing to fine-tune");
  try {
    OneThread one_thread;
    at::Generator gen = at::detail::createCPUGenerator(m.o.seed + 1);
    LOOM_ASSIGN_OR_RETURN(Batch b, MakeBatch(ds, samples, m.nz, m.o));
    for (int e = 0; e < m.o.finetune_epochs; ++e) m.Epoch(b, nullptr, m.o.finetune_lr, gen);
  } catch (const std::exception& e) {
    return InternalError(std::string("costmodel transformer: libtorch: ") + e.what());
  }
  return OkStatus();
}

Result<std::vector<double>> TransformerPredictor::PredictSeconds(
    const Dataset& ds, const std::vector<int>& samples) const {
  const Impl& m = *impl_;
  std::vector<double> out;
  out.reserve(samples.size());
  LOOM_RETURN_IF_ERROR(m.ForEachBatch("Predict", ds, samples, [&](const Output& batch) {
    const at::Tensor y = batch.y.contiguous();
    for (int64_t i = 0; i < y.size(0); ++i) {
      out.push_back(std::exp(y[i].item<double>() * m.nz.target_std + m.nz.target_mean));
    }
  }));
  return out;
}

Result<std::vector<std::vector<float>>> TransformerPredictor::Latents(
    const Dataset& ds, const std::vector<int>& samples) const {
  std::vector<std::vector<float>> out;
  out.reserve(samples.size());
  LOOM_RETURN_IF_ERROR(impl_->ForEachBatch("Latents", ds, samples, [&](const Output& batch) {
    const at::Tensor z = batch.z.contiguous();
    const float* p = z.data_ptr<float>();
    const int64_t d = z.size(1);
    for (int64_t i = 0; i < z.size(0); ++i) out.emplace_back(p + i * d, p + (i + 1) * d);
  }));
  return out;
}

std::unique_ptr<LatencyModel> TransformerPredictor::Clone() const {
  auto c = std::make_unique<TransformerPredictor>(impl_->o);
  c->impl_->nz = impl_->nz;
  c->impl_->p = CloneParams(impl_->p);
  c->impl_->adam = impl_->adam.Clone();
  c->impl_->log = impl_->log;
  c->impl_->trained = impl_->trained;
  return c;
}

namespace {

json OptionsToJson(const TransformerOptions& o) {
  return {{"d_model", o.d_model},         {"heads", o.heads},
          {"layers", o.layers},           {"ffn", o.ffn},
          {"max_leaves", o.max_leaves},   {"positional_encoding", o.positional_encoding},
          {"epochs", o.epochs},           {"batch", o.batch},
          {"lr", o.lr},                   {"weight_decay", o.weight_decay},
          {"mape_weight", o.mape_weight}, {"cmd_weight", o.cmd_weight},
          {"cmd_order", o.cmd_order},     {"validation_fraction", o.validation_fraction},
          {"finetune_epochs", o.finetune_epochs}, {"finetune_lr", o.finetune_lr},
          {"seed", o.seed}};
}

TransformerOptions OptionsFromJson(const json& j) {
  TransformerOptions o;
  o.d_model = j.at("d_model");
  o.heads = j.at("heads");
  o.layers = j.at("layers");
  o.ffn = j.at("ffn");
  o.max_leaves = j.at("max_leaves");
  o.positional_encoding = j.at("positional_encoding");
  o.epochs = j.at("epochs");
  o.batch = j.at("batch");
  o.lr = j.at("lr");
  o.weight_decay = j.at("weight_decay");
  o.mape_weight = j.at("mape_weight");
  o.cmd_weight = j.at("cmd_weight");
  o.cmd_order = j.at("cmd_order");
  o.validation_fraction = j.at("validation_fraction");
  o.finetune_epochs = j.at("finetune_epochs");
  o.finetune_lr = j.at("finetune_lr");
  o.seed = j.at("seed");
  return o;
}

constexpr char kFormat[] = "loom.costmodel.transformer";

}  // namespace

Status TransformerPredictor::Save(const std::string& path) const {
  const Impl& m = *impl_;
  if (!m.trained) return FailedPreconditionError("costmodel transformer: Save before Train");
  json j = {{"format", kFormat},
            {"version", 1},
            {"target", "ln(latency_s)"},
            {"options", OptionsToJson(m.o)},
            {"leaf_mean", m.nz.leaf.mean},
            {"leaf_inv_std", m.nz.leaf.inv_std},
            {"device_mean", m.nz.dev_mean},
            {"device_inv_std", m.nz.dev_inv_std},
            {"target_mean", m.nz.target_mean},
            {"target_std", m.nz.target_std},
            {"best_epoch", m.log.best_epoch},
            {"params", json::object()}};
  for (const auto& [name, t] : m.p) {
    at::Tensor c = t.detach().contiguous();
    j["params"][name] = {{"shape", c.sizes().vec()},
                         {"values", std::vector<float>(c.data_ptr<float>(),
                                                       c.data_ptr<float>() + c.numel())}};
  }
  std::ofstream out(path);
  out << j.dump() << "\n";
  if (!out) return UnavailableError("costmodel transformer: cannot write model file " + path);
  return OkStatus();
}

Result<TransformerPredictor> TransformerPredictor::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("costmodel transformer: cannot open model file " + path);
  try {
    json j = json::parse(in);
    if (j.value("format", "") != kFormat || j.value("version", 0) != 1) {
      return DataLossError("costmodel transformer: " + path + " is not a " + kFormat +
                           " version 1 file");
    }
    TransformerPredictor model(OptionsFromJson(j.at("options")));
    Impl& m = *model.impl_;
    m.nz.leaf.mean = j.at("leaf_mean").get<std::vector<float>>();
    m.nz.leaf.inv_std = j.at("leaf_inv_std").get<std::vector<float>>();
    m.nz.dev_mean = j.at("device_mean").get<std::vector<float>>();
    m.nz.dev_inv_std = j.at("device_inv_std").get<std::vector<float>>();
    m.nz.target_mean = j.at("target_mean");
    m.nz.target_std = j.at("target_std");
    m.log.best_epoch = j.value("best_epoch", 0);
    if (m.nz.leaf.mean.size() != kNumLeafFeatures || m.nz.leaf.inv_std.size() != kNumLeafFeatures ||
        m.nz.dev_mean.size() != kNumDeviceFeatures ||
        m.nz.dev_inv_std.size() != kNumDeviceFeatures) {
      return DataLossError("costmodel transformer: " + path + ": normaliser sizes do not match " +
                           std::to_string(kNumLeafFeatures) + " leaf / " +
                           std::to_string(kNumDeviceFeatures) + " device features");
    }
    for (const auto& [name, shape] : ParamShapes(m.o)) {
      if (!j.at("params").contains(name)) {
        return DataLossError("costmodel transformer: " + path + ": missing parameter " + name);
      }
      const json& t = j["params"][name];
      const auto values = t.at("values").get<std::vector<float>>();
      if (t.at("shape").get<std::vector<int64_t>>() != shape ||
          static_cast<int64_t>(values.size()) !=
              std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>())) {
        return DataLossError("costmodel transformer: " + path + ": parameter " + name +
                             " has the wrong shape");
      }
      m.p[name] = FromVector(values, shape).requires_grad_(true);
    }
    m.adam.Init(m.p);
    m.trained = true;
    return model;
  } catch (const std::exception& e) {
    return DataLossError("costmodel transformer: " + path + ": " + e.what());
  }
}

Result<double> CentralMomentDiscrepancy(const std::vector<float>& a, const std::vector<float>& b,
                                        int dim, int order) {
  if (dim < 1 || order < 1 || a.empty() || b.empty() || a.size() % dim || b.size() % dim) {
    return InvalidArgumentError("CentralMomentDiscrepancy: need non-empty [n, " +
                                std::to_string(dim) + "] inputs and order >= 1");
  }
  try {
    at::NoGradGuard no_grad;
    const int64_t na = static_cast<int64_t>(a.size()) / dim, nb = static_cast<int64_t>(b.size()) / dim;
    return Cmd(FromVector(a, {na, dim}).to(at::kDouble), FromVector(b, {nb, dim}).to(at::kDouble),
               order)
        .item<double>();
  } catch (const std::exception& e) {
    return InternalError(std::string("CentralMomentDiscrepancy: libtorch: ") + e.what());
  }
}

LatencyModelFactory TransformerModelFactory(const TransformerOptions& options) {
  return [options]() -> std::unique_ptr<LatencyModel> {
    return std::make_unique<TransformerPredictor>(options);
  };
}

}  // namespace loom::trace::costmodel
