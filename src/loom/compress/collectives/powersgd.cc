#include "loom/compress/collectives/powersgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "loom/base/clock.h"
#include "loom/base/philox.h"

namespace loom::compress {

void OrthonormaliseColumns(float* a, int64_t rows, int r) {
  for (int k = 0; k < r; ++k) {
    for (int j = 0; j < k; ++j) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += static_cast<double>(a[i * r + k]) * a[i * r + j];
      for (int64_t i = 0; i < rows; ++i) a[i * r + k] -= static_cast<float>(dot) * a[i * r + j];
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += static_cast<double>(a[i * r + k]) * a[i * r + k];
    norm = std::sqrt(norm);
    const float inv = norm > 1e-12 ? static_cast<float>(1.0 / norm) : 0.0f;
    for (int64_t i = 0; i < rows; ++i) a[i * r + k] *= inv;
  }
}

PowerSgd::PowerSgd(comm::Communicator* comm, int64_t n, std::vector<LowRankMatrix> matrices,
                   Options options)
    : comm_(comm), n_(n), options_(options) {
  std::sort(matrices.begin(), matrices.end(),
            [](const LowRankMatrix& a, const LowRankMatrix& b) { return a.offset < b.offset; });
  int64_t p_elems = 0, q_elems = 0;
  for (const LowRankMatrix& m : matrices) {
    const int r = static_cast<int>(std::min<int64_t>({options.rank, m.rows, m.cols}));
    if ((m.rows + m.cols) * r >= m.rows * m.cols) continue;  // factors would not be smaller
    Factorised f{m, r, std::vector<float>(static_cast<size_t>(r * m.cols)), {}, p_elems, q_elems};
    PhiloxStream rng(options.seed, 0x5053474400000000ull ^ static_cast<uint64_t>(m.offset));
    for (float& v : f.q) v = rng.NextNormal();  // the same on every rank: shared seed
    if (options.error_feedback) f.error.assign(static_cast<size_t>(m.rows * m.cols), 0.0f);
    p_elems += m.rows * r;
    q_elems += m.cols * r;
    low_rank_.push_back(std::move(f));
  }
  int64_t at = 0;
  for (const Factorised& f : low_rank_) {
    if (f.m.offset > at) plain_.push_back({at, f.m.offset});
    at = f.m.offset + f.m.rows * f.m.cols;
  }
  if (at < n) plain_.push_back({at, n});
  for (auto [b, e] : plain_) plain_elems_ += e - b;
  for (Factorised& f : low_rank_) f.p_at += plain_elems_;
  p_buf_.resize(static_cast<size_t>(plain_elems_ + p_elems));
  q_buf_.resize(static_cast<size_t>(q_elems));
}

Status PowerSgd::AllReduce(float* buf, const CollectiveCall& call) {
  Stopwatch sw;
  float* pb = p_buf_.data();
  int64_t at = 0;
  for (auto [b, e] : plain_) {
    std::memcpy(pb + at, buf + b, static_cast<size_t>(e - b) * 4);
    at += e - b;
  }
  for (Factorised& f : low_rank_) {  // P = (M + e) Q
    float* M = buf + f.m.offset;
    const int64_t rows = f.m.rows, cols = f.m.cols;
    if (!f.error.empty()) {
      for (int64_t i = 0; i < rows * cols; ++i) M[i] += f.error[i];
    }
    float* P = pb + f.p_at;
    for (int64_t i = 0; i < rows; ++i) {
      for (int k = 0; k < f.r; ++k) {
        const float* q = f.q.data() + k * cols;
        float dot = 0;
        for (int64_t j = 0; j < cols; ++j) dot += M[i * cols + j] * q[j];
        P[i * f.r + k] = dot;
      }
    }
  }
  stats_.encode_s += sw.Seconds();
  sw.Reset();
  LOOM_RETURN_IF_ERROR(
      comm_->AllReduce(TensorView::Of(pb, static_cast<int64_t>(p_buf_.size())),
                       comm::ReduceOp::kAvg, options_.comm)
          .WithContext("PowerSGD P factors of " + call.what));
  stats_.comm_s += sw.Seconds();
  sw.Reset();
  at = 0;
  for (auto [b, e] : plain_) {
    std::memcpy(buf + b, pb + at, static_cast<size_t>(e - b) * 4);
    at += e - b;
  }
  for (Factorised& f : low_rank_) {  // Q = M^T orthonormalised(P), stored r x cols
    const float* M = buf + f.m.offset;
    float* P = pb + f.p_at;
    OrthonormaliseColumns(P, f.m.rows, f.r);
    float* Q = q_buf_.data() + f.q_at;
    std::fill(Q, Q + f.r * f.m.cols, 0.0f);
    for (int64_t i = 0; i < f.m.rows; ++i) {
      for (int k = 0; k < f.r; ++k) {
        const float p = P[i * f.r + k];
        float* q = Q + k * f.m.cols;
        for (int64_t j = 0; j < f.m.cols; ++j) q[j] += p * M[i * f.m.cols + j];
      }
    }
  }
  stats_.encode_s += sw.Seconds();
  sw.Reset();
  LOOM_RETURN_IF_ERROR(
      comm_->AllReduce(TensorView::Of(q_buf_.data(), static_cast<int64_t>(q_buf_.size())),
                       comm::ReduceOp::kAvg, options_.comm)
          .WithContext("PowerSGD Q factors of " + call.what));
  stats_.comm_s += sw.Seconds();
  sw.Reset();
  for (Factorised& f : low_rank_) {  // M_hat = P Q^T; e = M - M_hat; M = M_hat
    float* M = buf + f.m.offset;
    const float* P = pb + f.p_at;
    const float* Q = q_buf_.data() + f.q_at;
    const int64_t cols = f.m.cols;
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t i = 0; i < f.m.rows; ++i) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (int k = 0; k < f.r; ++k) {
        const float p = P[i * f.r + k];
        for (int64_t j = 0; j < cols; ++j) row[j] += p * Q[k * cols + j];
      }
      if (!f.error.empty()) {
        for (int64_t j = 0; j < cols; ++j) f.error[i * cols + j] = M[i * cols + j] - row[j];
      }
      std::memcpy(M + i * cols, row.data(), static_cast<size_t>(cols) * 4);
    }
    std::memcpy(f.q.data(), Q, static_cast<size_t>(f.r * cols) * 4);  // warm start
  }
  stats_.decode_s += sw.Seconds();
  const int P = comm_->size();
  const double ring = P > 1 ? 2.0 * (P - 1) / P : 0.0;
  ++stats_.calls;
  stats_.wire_bytes_sent += static_cast<int64_t>(ring * 4.0 * (p_buf_.size() + q_buf_.size()));
  stats_.fp32_bytes += static_cast<int64_t>(ring * 4.0 * n_);
  return OkStatus();
}

}  // namespace loom::compress
