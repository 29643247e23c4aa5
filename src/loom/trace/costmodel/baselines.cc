#include "loom/trace/costmodel/baselines.h"

#include <xgboost/c_api.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "loom/base/check.h"

namespace loom::trace::costmodel {

void FeatureMatrix::AddRow(const std::vector<float>& row) {
  if (rows == 0 && cols == 0) cols = static_cast<int64_t>(row.size());
  LOOM_CHECK(static_cast<int64_t>(row.size()) == cols) << row.size() << " vs " << cols;
  data.insert(data.end(), row.begin(), row.end());
  ++rows;
}

std::vector<float> PooledRow(const Sample& s, const DeviceInfo& device) {
  std::vector<float> row = PoolLeaves(s.leaves);
  std::vector<float> dev = DeviceVector(device);
  row.insert(row.end(), dev.begin(), dev.end());
  return row;
}

Result<FeatureMatrix> PooledMatrix(const Dataset& ds, const std::vector<int>& indices) {
  FeatureMatrix m;
  for (int i : indices) {
    const Sample& s = ds.samples[i];
    const DeviceInfo* d = ds.FindDevice(s.device);
    if (d == nullptr) {
      return NotFoundError("costmodel: sample " + std::to_string(s.id) + " has unknown device " +
                           s.device);
    }
    m.AddRow(PooledRow(s, *d));
  }
  return m;
}

Standardizer Standardizer::Fit(const FeatureMatrix& x) {
  Standardizer s;
  s.mean.assign(x.cols, 0.f);
  s.inv_std.assign(x.cols, 1.f);
  if (x.rows == 0) return s;
  for (int64_t c = 0; c < x.cols; ++c) {
    double m = 0, v = 0;
    for (int64_t r = 0; r < x.rows; ++r) m += x.Row(r)[c];
    m /= x.rows;
    for (int64_t r = 0; r < x.rows; ++r) v += (x.Row(r)[c] - m) * (x.Row(r)[c] - m);
    v /= x.rows;
    s.mean[c] = static_cast<float>(m);
    s.inv_std[c] = static_cast<float>(1.0 / std::max(std::sqrt(v), 1e-6));
  }
  return s;
}

FeatureMatrix Standardizer::Apply(const FeatureMatrix& x) const {
  FeatureMatrix out = x;
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t c = 0; c < x.cols; ++c) {
      out.Row(r)[c] = (x.Row(r)[c] - mean[c]) * inv_std[c];
    }
  }
  return out;
}

double RooflineSeconds(double flops, double bytes, const DeviceInfo& device) {
  return std::max(flops / (device.peak_gflops * 1e9), bytes / (device.mem_gbps * 1e9));
}

// ---------------------------------------------------------------------------------- XGBoost

namespace {

Status XgbError(const char* what) {
  return InternalError(std::string("costmodel: xgboost ") + what + ": " + XGBGetLastError());
}

// Owns a DMatrixHandle.
struct DMatrix {
  DMatrixHandle h = nullptr;
  ~DMatrix() {
    if (h != nullptr) XGDMatrixFree(h);
  }
};

Status MakeDMatrix(const FeatureMatrix& x, DMatrix* out) {
  if (XGDMatrixCreateFromMat(x.data.data(), x.rows, x.cols, std::numeric_limits<float>::quiet_NaN(),
                             &out->h) != 0) {
    return XgbError("XGDMatrixCreateFromMat");
  }
  return OkStatus();
}

}  // namespace

XgbRegressor::XgbRegressor(XgbRegressor&& o) noexcept : booster_(o.booster_) {
  o.booster_ = nullptr;
}
XgbRegressor& XgbRegressor::operator=(XgbRegressor&& o) noexcept {
  std::swap(booster_, o.booster_);
  return *this;
}
XgbRegressor::~XgbRegressor() {
  if (booster_ != nullptr) XGBoosterFree(booster_);
}

Result<XgbRegressor> XgbRegressor::Train(const FeatureMatrix& x, const std::vector<float>& y,
                                         const XgbOptions& o, const std::vector<float>* weights) {
  if (x.rows == 0 || static_cast<int64_t>(y.size()) != x.rows) {
    return InvalidArgumentError("costmodel: xgboost needs rows > 0 and one label per row (" +
                                std::to_string(x.rows) + " rows, " + std::to_string(y.size()) +
                                " labels)");
  }
  DMatrix d;
  LOOM_RETURN_IF_ERROR(MakeDMatrix(x, &d));
  if (XGDMatrixSetFloatInfo(d.h, "label", y.data(), y.size()) != 0) return XgbError("label");
  if (weights != nullptr &&
      XGDMatrixSetFloatInfo(d.h, "weight", weights->data(), weights->size()) != 0) {
    return XgbError("weight");
  }
  XgbRegressor model;
  BoosterHandle b = nullptr;
  if (XGBoosterCreate(&d.h, 1, &b) != 0) return XgbError("XGBoosterCreate");
  model.booster_ = b;
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"eta", std::to_string(o.eta)},
      {"max_depth", std::to_string(o.max_depth)},
      {"subsample", std::to_string(o.subsample)},
      {"colsample_bytree", std::to_string(o.colsample)},
      {"min_child_weight", std::to_string(o.min_child_weight)},
      {"nthread", std::to_string(o.threads)},
      {"seed", std::to_string(o.seed)},
      {"verbosity", "0"},
      {"tree_method", "hist"}};
  for (const auto& [k, v] : params) {
    if (XGBoosterSetParam(b, k, v.c_str()) != 0) return XgbError(k);
  }
  for (int i = 0; i < o.rounds; ++i) {
    if (XGBoosterUpdateOneIter(b, i, d.h) != 0) return XgbError("XGBoosterUpdateOneIter");
  }
  return model;
}

Result<std::vector<float>> XgbRegressor::Predict(const FeatureMatrix& x) const {
  if (x.rows == 0) return std::vector<float>{};
  DMatrix d;
  LOOM_RETURN_IF_ERROR(MakeDMatrix(x, &d));
  bst_ulong len = 0;
  const float* out = nullptr;
  if (XGBoosterPredict(booster_, d.h, 0, 0, 0, &len, &out) != 0) {
    return XgbError("XGBoosterPredict");
  }
  return std::vector<float>(out, out + len);
}

// -------------------------------------------------------------------------------------- MLP

struct Mlp::Impl {
  using M = Eigen::MatrixXf;
  using V = Eigen::VectorXf;
  Standardizer norm;
  float y_mean = 0, y_std = 1;
  MlpOptions opt;
  std::mt19937_64 rng;
  std::vector<M> w, mw, vw;  // weights and Adam moments: [h x in], [h x h], [1 x h]
  std::vector<V> b, mb, vb;
  int64_t step = 0;

  void Init(int in) {
    rng.seed(opt.seed);
    const int h = opt.hidden;
    const int dims[4] = {in, h, h, 1};
    w.clear();
    b.clear();
    for (int l = 0; l < 3; ++l) {
      std::normal_distribution<float> nd(0.f, std::sqrt(2.f / dims[l]));
      M m(dims[l + 1], dims[l]);
      for (int i = 0; i < m.size(); ++i) m.data()[i] = nd(rng);
      w.push_back(m);
      b.push_back(V::Zero(dims[l + 1]));
    }
    for (int l = 0; l < 3; ++l) {
      mw.push_back(M::Zero(w[l].rows(), w[l].cols()));
      vw.push_back(mw.back());
      mb.push_back(V::Zero(b[l].size()));
      vb.push_back(mb.back());
    }
    step = 0;
  }

  // x: [in x batch] -> activations per layer.
  std::vector<M> Forward(const M& x) const {
    std::vector<M> a = {x};
    for (int l = 0; l < 3; ++l) {
      M z = (w[l] * a.back()).colwise() + b[l];
      if (l < 2) z = z.cwiseMax(0.f);
      a.push_back(std::move(z));
    }
    return a;
  }

  void AdamStep(const M& x, const Eigen::RowVectorXf& y, double lr) {
    const std::vector<M> a = Forward(x);
    const float n = static_cast<float>(x.cols());
    M delta = (a[3] - y) * (2.f / n);  // d MSE / d out, [1 x batch]
    ++step;
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float c1 = 1.f - std::pow(b1, static_cast<float>(step));
    const float c2 = 1.f - std::pow(b2, static_cast<float>(step));
    for (int l = 2; l >= 0; --l) {
      M gw = delta * a[l].transpose() + static_cast<float>(opt.weight_decay) * w[l];
      V gb = delta.rowwise().sum();
      if (l > 0) {
        M back = w[l].transpose() * delta;
        delta = back.cwiseProduct((a[l].array() > 0.f).cast<float>().matrix());
      }
      mw[l] = b1 * mw[l] + (1 - b1) * gw;
      vw[l] = b2 * vw[l] + (1 - b2) * gw.cwiseProduct(gw);
      mb[l] = b1 * mb[l] + (1 - b1) * gb;
      vb[l] = b2 * vb[l] + (1 - b2) * gb.cwiseProduct(gb);
      const float s = static_cast<float>(lr);
      w[l].array() -= s * (mw[l].array() / c1) / ((vw[l].array() / c2).sqrt() + eps);
      b[l].array() -= s * (mb[l].array() / c1) / ((vb[l].array() / c2).sqrt() + eps);
    }
  }

  void Epochs(const FeatureMatrix& xn, const std::vector<float>& y, int epochs, double lr) {
    std::vector<int> idx(xn.rows);
    std::iota(idx.begin(), idx.end(), 0);
    const int bs = std::max(1, opt.batch);
    for (int e = 0; e < epochs; ++e) {
      std::shuffle(idx.begin(), idx.end(), rng);
      for (int64_t s = 0; s < xn.rows; s += bs) {
        const int n = static_cast<int>(std::min<int64_t>(bs, xn.rows - s));
        M x(xn.cols, n);
        Eigen::RowVectorXf t(n);
        for (int j = 0; j < n; ++j) {
          const int r = idx[s + j];
          for (int64_t c = 0; c < xn.cols; ++c) x(c, j) = xn.Row(r)[c];
          t(j) = (y[r] - y_mean) / y_std;
        }
        AdamStep(x, t, lr);
      }
    }
  }
};

Mlp::Mlp() : impl_(std::make_unique<Impl>()) {}
Mlp::~Mlp() = default;
Mlp::Mlp(Mlp&&) noexcept = default;
Mlp& Mlp::operator=(Mlp&&) noexcept = default;

Mlp Mlp::Clone() const {
  Mlp m;
  *m.impl_ = *impl_;
  return m;
}

void Mlp::Train(const FeatureMatrix& x, const std::vector<float>& y, const MlpOptions& options) {
  LOOM_CHECK(x.rows > 0 && static_cast<int64_t>(y.size()) == x.rows);
  impl_->opt = options;
  impl_->norm = Standardizer::Fit(x);
  double m = 0, v = 0;
  for (float t : y) m += t / y.size();
  for (float t : y) v += (t - m) * (t - m) / y.size();
  impl_->y_mean = static_cast<float>(m);
  impl_->y_std = static_cast<float>(std::max(std::sqrt(v), 1e-6));
  impl_->Init(static_cast<int>(x.cols));
  impl_->Epochs(impl_->norm.Apply(x), y, options.epochs, options.lr);
}

void Mlp::FineTune(const FeatureMatrix& x, const std::vector<float>& y, int epochs, double lr) {
  LOOM_CHECK(!impl_->w.empty()) << "FineTune before Train";
  if (x.rows == 0) return;
  impl_->Epochs(impl_->norm.Apply(x), y, epochs, lr);
}

std::vector<float> Mlp::Predict(const FeatureMatrix& x) const {
  LOOM_CHECK(!impl_->w.empty()) << "Predict before Train";
  const FeatureMatrix xn = impl_->norm.Apply(x);
  Eigen::MatrixXf in(xn.cols, xn.rows);
  for (int64_t r = 0; r < xn.rows; ++r) {
    for (int64_t c = 0; c < xn.cols; ++c) in(c, r) = xn.Row(r)[c];
  }
  const Eigen::MatrixXf out = impl_->Forward(in).back();
  std::vector<float> y(xn.rows);
  for (int64_t r = 0; r < xn.rows; ++r) y[r] = out(0, r) * impl_->y_std + impl_->y_mean;
  return y;
}

FeatureMatrix Mlp::Embed(const FeatureMatrix& x) const {
  LOOM_CHECK(!impl_->w.empty()) << "Embed before Train";
  const FeatureMatrix xn = impl_->norm.Apply(x);
  Eigen::MatrixXf in(xn.cols, xn.rows);
  for (int64_t r = 0; r < xn.rows; ++r) {
    for (int64_t c = 0; c < xn.cols; ++c) in(c, r) = xn.Row(r)[c];
  }
  const Eigen::MatrixXf h = impl_->Forward(in)[2];  // [hidden x rows], after the second ReLU
  FeatureMatrix out;
  out.rows = xn.rows;
  out.cols = h.rows();
  out.data.resize(out.rows * out.cols);
  for (int64_t r = 0; r < out.rows; ++r) {
    for (int64_t c = 0; c < out.cols; ++c) out.Row(r)[c] = h(c, r);
  }
  return out;
}

}  // namespace loom::trace::costmodel
