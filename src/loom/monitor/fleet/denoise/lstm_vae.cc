#include "loom/monitor/fleet/denoise/lstm_vae.h"

#include <Eigen/Core>
#include <cstdint>

#include "loom/base/check.h"
#include "loom/monitor/fleet/denoise/lstm_vae_json.h"

namespace loom::monitor {

class LstmVaeDenoiser::Kernel {
 public:
  virtual ~Kernel() = default;
  // n windows of w samples (row-major) -> n reconstructions.
  virtual void Run(const float* x, int64_t n, int w, float* out) const = 0;
};

namespace {

constexpr int kMaxHidden = 256;

// H: the hidden size at compile time, or Eigen::Dynamic (stack storage up to kMaxHidden).
// Windows run in blocks of B (8 for a fixed H) as the columns of the state matrices: the
// recurrences of different windows are independent, so a block keeps the FMA and tanh pipelines
// busy where one window alone is latency-bound.
template <int H>
class LstmVaeKernel final : public LstmVaeDenoiser::Kernel {
  static constexpr bool kFixed = H != Eigen::Dynamic;
  static constexpr int kBlock = kFixed ? 8 : 1;
  static constexpr int G = kFixed ? 4 * H : Eigen::Dynamic;
  static constexpr int H2 = kFixed ? 2 * H : Eigen::Dynamic;
  static constexpr int kMaxH = kFixed ? H : kMaxHidden;
  template <int B>
  using StateH = Eigen::Matrix<float, H, B, Eigen::ColMajor, kMaxH, B>;
  template <int B>
  using StateG = Eigen::Matrix<float, G, B, Eigen::ColMajor, 4 * kMaxH, B>;
  template <int B>
  using StateH2 = Eigen::Matrix<float, H2, B, Eigen::ColMajor, 2 * kMaxH, B>;
  using VecG = Eigen::Matrix<float, G, 1>;
  using VecH = Eigen::Matrix<float, H, 1>;
  using VecH2 = Eigen::Matrix<float, H2, 1>;
  using MatGH = Eigen::Matrix<float, G, H>;
  using MatH2H = Eigen::Matrix<float, H2, H>;

 public:
  explicit LstmVaeKernel(const LstmVaeModel& m) : h_(m.hidden) {
    const int h = m.hidden, l = m.latent, g = 4 * h;
    auto vec = [&](const char* name) {
      const std::vector<float>& v = m.tensors.at(name);
      return Eigen::Map<const Eigen::VectorXf>(v.data(), static_cast<Eigen::Index>(v.size()));
    };
    auto mat = [&](const char* name, int rows, int cols) {
      using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      return Eigen::Map<const RowMajor>(m.tensors.at(name).data(), rows, cols);
    };
    // sigmoid(x) = (1 + tanh(x / 2)) / 2: halve the i, f, o rows so one tanh covers all gates.
    Eigen::VectorXf gate_scale = Eigen::VectorXf::Constant(g, 0.5f);
    gate_scale.segment(2 * h, h).setOnes();
    enc_w_ih_ = gate_scale.cwiseProduct(vec("enc.w_ih"));
    enc_b_ = gate_scale.cwiseProduct(vec("enc.b_ih") + vec("enc.b_hh"));
    enc_w_hh_ = gate_scale.asDiagonal() * mat("enc.w_hh", g, h);
    dec_b_ = gate_scale.cwiseProduct(vec("dec.b_ih") + vec("dec.b_hh"));
    dec_w_hh_ = gate_scale.asDiagonal() * mat("dec.w_hh", g, h);
    // z = mu = mu.w h_enc + mu.b feeds only [h0; c0] = dec_init.w z + dec_init.b: fold them.
    const Eigen::MatrixXf dec_init_w = mat("dec_init.w", 2 * h, l);
    init_w_ = dec_init_w * mat("mu.w", l, h);
    init_b_ = dec_init_w * vec("mu.b") + vec("dec_init.b");
    out_w_ = vec("out.w");
    out_b_ = m.tensors.at("out.b")[0];
  }

  void Run(const float* x, int64_t n, int w, float* out) const override {
    int64_t first = 0;
    for (; first + kBlock <= n && kBlock > 1; first += kBlock) {
      RunBlock<kBlock>(x + first * w, w, out + first * w);
    }
    for (; first < n; ++first) RunBlock<1>(x + first * w, w, out + first * w);
  }

 private:
  // B windows (row-major, w samples each) -> their reconstructions.
  template <int B>
  void RunBlock(const float* x, int w, float* out) const {
    StateH<B> h = StateH<B>::Zero(h_, B), c = StateH<B>::Zero(h_, B);
    StateG<B> gates(4 * h_, B);
    Eigen::Matrix<float, 1, B> row;
    for (int t = 0; t < w; ++t) {
      for (int b = 0; b < B; ++b) row[b] = x[b * w + t];
      gates.noalias() = enc_w_ih_ * row;
      gates.colwise() += enc_b_;
      if (t > 0) gates.noalias() += enc_w_hh_ * h;
      Step<B>(gates, h, c);
    }
    StateH2<B> init(2 * h_, B);
    init.noalias() = init_w_ * h;
    init.colwise() += init_b_;
    h = init.template topRows<H>(h_);
    c = init.template bottomRows<H>(h_);
    for (int t = 0; t < w; ++t) {
      gates.noalias() = dec_w_hh_ * h;
      gates.colwise() += dec_b_;
      Step<B>(gates, h, c);
      row.noalias() = out_w_.transpose() * h;
      for (int b = 0; b < B; ++b) out[b * w + t] = row[b] + out_b_;
    }
  }

  // One LSTM cell update from pre-activations (i, f, o pre-halved), PyTorch order i, f, g, o.
  template <int B>
  void Step(StateG<B>& gates, StateH<B>& h, StateH<B>& c) const {
    gates = gates.array().tanh();
    const auto i = gates.template middleRows<H>(0, h_).array() * 0.5f + 0.5f;
    const auto f = gates.template middleRows<H>(h_, h_).array() * 0.5f + 0.5f;
    const auto g = gates.template middleRows<H>(2 * h_, h_).array();
    const auto o = gates.template middleRows<H>(3 * h_, h_).array() * 0.5f + 0.5f;
    c = (f * c.array() + i * g).matrix();
    h = (o * c.array().tanh()).matrix();
  }

  int h_;
  VecG enc_w_ih_, enc_b_, dec_b_;
  MatGH enc_w_hh_, dec_w_hh_;
  MatH2H init_w_;
  VecH2 init_b_;
  VecH out_w_;
  float out_b_ = 0;
};

std::unique_ptr<LstmVaeDenoiser::Kernel> MakeKernel(const LstmVaeModel& m) {
  switch (m.hidden) {
    case 4:
      return std::make_unique<LstmVaeKernel<4>>(m);
    case 8:
      return std::make_unique<LstmVaeKernel<8>>(m);
    default:
      return std::make_unique<LstmVaeKernel<Eigen::Dynamic>>(m);
  }
}

}  // namespace

Result<std::unique_ptr<LstmVaeDenoiser>> LstmVaeDenoiser::Create(const LstmVaeModel& model) {
  LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(model, "LSTM-VAE model '" + model.metric + "'"));
  return std::unique_ptr<LstmVaeDenoiser>(
      new LstmVaeDenoiser(model.metric, model.window, MakeKernel(model)));
}

LstmVaeDenoiser::LstmVaeDenoiser(std::string metric, int window, std::unique_ptr<Kernel> kernel)
    : metric_(std::move(metric)), window_(window), kernel_(std::move(kernel)) {}

LstmVaeDenoiser::~LstmVaeDenoiser() = default;

int LstmVaeDenoiser::embedding_size(int w) const {
  LOOM_CHECK(w == window_) << "LSTM-VAE '" << metric_ << "' has window " << window_
                           << ", asked for " << w;
  return w;
}

void LstmVaeDenoiser::Denoise(std::span<const float> window, std::span<float> out) const {
  LOOM_CHECK(static_cast<int>(window.size()) == window_ && out.size() == window.size())
      << "LSTM-VAE '" << metric_ << "' has window " << window_ << ", got " << window.size()
      << " samples and an output of " << out.size();
  kernel_->Run(window.data(), 1, window_, out.data());
}

void LstmVaeDenoiser::DenoiseBatch(std::span<const float> windows, std::span<float> out) const {
  LOOM_CHECK(windows.size() % window_ == 0 && out.size() == windows.size())
      << "LSTM-VAE '" << metric_ << "' has window " << window_ << ", got " << windows.size()
      << " samples and an output of " << out.size();
  kernel_->Run(windows.data(), static_cast<int64_t>(windows.size() / window_), window_, out.data());
}

Result<std::unique_ptr<Denoiser>> LoadLstmVae(const std::string& model_dir,
                                              const std::string& metric, int window) {
  LOOM_ASSIGN_OR_RETURN(LstmVaeModel m, ReadLstmVaeModel(model_dir, metric, window));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<LstmVaeDenoiser> d, LstmVaeDenoiser::Create(m));
  return std::unique_ptr<Denoiser>(std::move(d));
}

}  // namespace loom::monitor
