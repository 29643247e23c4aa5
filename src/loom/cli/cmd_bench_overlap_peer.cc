// `loom bench overlap-peer`: the real peers of `loom bench overlap` (issue 7). One op with one
// transport on two ranks; per trial it times the collective alone (t_comm), the SGEMM(s) alone
// (t_comp) and the op (t_x), and writes JSON (rank 0):
//
//   ag_gemm : all-gather the (M_s x K) shards, then SGEMM (W*M_s x K) x (K x N).
//   gemm_rs : SGEMM (W*M_s x K) x (K x N) partial, then reduce-scatter of the row blocks.
//   moe     : seeded top-k routing (uniform or Zipf(1.2)), all-to-allv dispatch, per-expert
//             SGEMMs x*W1 (H->F) then *W2 (F->H) on the experts this rank owns (no activation),
//             all-to-allv combine and the gate-weighted top-k sum.
//
// Impls: mpi (MPI collective then GEMM), mpi_decomposed (MPI_Isend/Irecv per peer chunk with
// MPI_Test between GEMM panels of --panel-rows rows, own chunk first), gloo (Gloo's collective
// then GEMM), gloo_decomposed (the same decomposed schedule on Gloo unbound-buffer send/recv;
// Gloo's TCP device thread progresses the transfers, so there is nothing to poll between
// panels). The mpi impls run under mpirun, the gloo impls under loom's launcher world; both
// normally across two tbf-shaped namespaces (scripts/bench/overlap_peers.sh). Compute: OpenBLAS
// cblas_sgemm on one thread. The op's result is checked once against a local reference.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/cli/bench_overlap_peer.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"

namespace loom::cli {

#ifndef LOOM_HAVE_MPI
Result<std::unique_ptr<PeerComm>> MakeMpiPeerComm() {
  return UnavailableError("loom was built without MPI");
}
#endif

namespace {

struct PeerArgs {
  std::string op = "ag_gemm";  // ag_gemm | gemm_rs | moe
  std::string impl = "mpi";    // mpi | mpi_decomposed | gloo | gloo_decomposed
  int64_t m_shard = 512;       // rows per rank (ag_gemm, gemm_rs)
  int64_t k = 2048;
  int64_t n = 512;             // N_local
  int experts = 8;
  int topk = 2;
  int64_t hidden = 1024;
  int64_t ffn = 2048;
  int64_t tokens = 4096;       // per rank
  std::string routing = "uniform";  // uniform | zipf (s = 1.2)
  int trials = 11;
  int warmup = 2;
  int64_t panel_rows = 64;     // mpi_decomposed: rows per GEMM panel between MPI_Test calls
  bool test_between_panels = true;
  uint64_t seed = 1;
  double rate_mbps = 0;        // link rate, recorded only (0: unknown / unshaped)
  std::string json;
};

constexpr double kTolerance = 1e-4;  // max |got - ref| / max |ref|
// A chunk whose Wait() returns within this counts as ready (transports without Test()).
constexpr double kReadyWaitS = 100e-6;

bool IsGloo(const std::string& impl) { return impl.rfind("gloo", 0) == 0; }
bool IsDecomposed(const std::string& impl) {
  return impl == "mpi_decomposed" || impl == "gloo_decomposed";
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t Seed(uint64_t base, uint64_t tensor, uint64_t index) {
  return Mix(Mix(base * 1315423911ULL + tensor) + index);
}
// Deterministic values in [-0.5, 0.5): any rank can rebuild any other rank's inputs.
void Fill(std::vector<float>& v, uint64_t seed) {
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(Mix(seed + i) >> 40) / static_cast<float>(1 << 24) - 0.5f;
  }
}
// Row-major C (m x n) = A (m x k, leading dim lda) * B (k x n).
void Gemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  if (m == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
              static_cast<int>(n));
}
double MaxRelErr(const float* got, const float* ref, size_t n) {
  double diff = 0, mag = 1e-30;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, static_cast<double>(std::fabs(got[i] - ref[i])));
    mag = std::max(mag, static_cast<double>(std::fabs(ref[i])));
  }
  return diff / mag;
}

// What the decomposed variant saw in one run.
struct DecompStats {
  double wait_s = 0;     // time blocked in Wait() for peer data
  int64_t tests = 0;     // Test() calls between panels
  int chunks_ready = 0;  // peer chunks already complete when the GEMM reached them (without
                         // Test(): Wait() returned within kReadyWaitS)
  int chunks = 0;
};

// Outstanding nonblocking requests; Poll() is the MPI_Test between panels (nothing where the
// transport progresses in the background).
class Requests {
 public:
  explicit Requests(PeerComm& c, DecompStats* st) : c_(c), st_(st) {}
  Result<int> Add(Result<int> r) {
    LOOM_RETURN_IF_ERROR(r.status());
    open_.push_back(*r);
    return *r;
  }
  Status Poll() {
    if (c_.BackgroundProgress()) return OkStatus();
    for (int& h : open_) {
      if (h < 0) continue;
      ++st_->tests;
      LOOM_ASSIGN_OR_RETURN(bool done, c_.Test(h));
      if (done) h = -1;
    }
    return OkStatus();
  }
  // Waits for request `h` (a receive the GEMM needs next), counting whether it was ready.
  Status Need(int h) {
    ++st_->chunks;
    auto it = std::find(open_.begin(), open_.end(), h);
    if (it == open_.end()) {
      ++st_->chunks_ready;
      return OkStatus();
    }
    bool done = false;
    if (!c_.BackgroundProgress()) {
      LOOM_ASSIGN_OR_RETURN(done, c_.Test(h));
    }
    if (!done) {
      const int64_t t0 = NowNanos();
      LOOM_RETURN_IF_ERROR(c_.Wait(h));
      const double waited = static_cast<double>(NowNanos() - t0) * 1e-9;
      st_->wait_s += waited;
      if (c_.BackgroundProgress() && waited < kReadyWaitS) ++st_->chunks_ready;
    } else {
      ++st_->chunks_ready;
    }
    *it = -1;
    return OkStatus();
  }
  Status WaitAll() {
    for (int& h : open_) {
      if (h >= 0) LOOM_RETURN_IF_ERROR(c_.Wait(h));
      h = -1;
    }
    open_.clear();
    return OkStatus();
  }

 private:
  PeerComm& c_;
  DecompStats* st_;
  std::vector<int> open_;  // -1: completed
};

class PeerOp {
 public:
  explicit PeerOp(PeerComm& c, const PeerArgs& a) : c_(c), a_(a), W_(c.size()), r_(c.rank()) {}
  virtual ~PeerOp() = default;
  virtual Status Comm() = 0;
  virtual Status Comp() = 0;
  virtual Status Sequential() = 0;
  virtual Status Decomposed(DecompStats* st) = 0;
  virtual Result<double> Verify() = 0;  // max relative error of the last op's output
  virtual nlohmann::json Shape() const = 0;
  virtual double CommBytes() const = 0;  // bytes this rank sends to peers per Comm()
  virtual double Flops() const = 0;      // per Comp() on this rank

 protected:
  // GEMM of `rows` rows in panels of --panel-rows, polling the requests between panels.
  template <typename PanelFn>
  Status Panels(int64_t rows, Requests& req, PanelFn fn) {
    const int64_t p = std::max<int64_t>(1, a_.panel_rows);
    for (int64_t r0 = 0; r0 < rows; r0 += p) {
      fn(r0, std::min(p, rows - r0));
      if (a_.test_between_panels) LOOM_RETURN_IF_ERROR(req.Poll());
    }
    return OkStatus();
  }
  PeerComm& c_;
  const PeerArgs& a_;
  const int W_, r_;
};

// ---------------------------------------------------------------- AG + GEMM
class AgGemm final : public PeerOp {
 public:
  AgGemm(PeerComm& c, const PeerArgs& a)
      : PeerOp(c, a), ms_(a.m_shard), k_(a.k), n_(a.n), shard_(ms_ * k_), full_(W_ * ms_ * k_),
        b_(k_ * n_), out_(W_ * ms_ * n_) {
    Fill(shard_, Seed(a.seed, 1, r_));
    Fill(b_, Seed(a.seed, 2, r_));
  }
  Status Comm() override { return c_.AllGather(shard_.data(), full_.data(), ms_ * k_); }
  Status Comp() override {
    Gemm(full_.data(), b_.data(), out_.data(), W_ * ms_, n_, k_);
    return OkStatus();
  }
  Status Sequential() override {
    std::fill(full_.begin(), full_.end(), NAN);
    LOOM_RETURN_IF_ERROR(Comm());
    return Comp();
  }
  Status Decomposed(DecompStats* st) override {
    std::fill(full_.begin(), full_.end(), NAN);
    Requests req(c_, st);
    std::vector<int> recv(W_, -1);
    const size_t chunk = ms_ * k_;
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + s) % W_;
      LOOM_ASSIGN_OR_RETURN(recv[p], req.Add(c_.Irecv(&full_[p * chunk], chunk, p, 1)));
    }
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + W_ - s) % W_;
      LOOM_RETURN_IF_ERROR(req.Add(c_.Isend(shard_.data(), chunk, p, 1)).status());
    }
    std::memcpy(&full_[r_ * chunk], shard_.data(), chunk * sizeof(float));
    for (int s = 0; s < W_; ++s) {  // own shard first, then the ring order
      const int p = (r_ + s) % W_;
      if (p != r_) LOOM_RETURN_IF_ERROR(req.Need(recv[p]));
      const float* a = &full_[p * chunk];
      float* o = &out_[p * ms_ * n_];
      LOOM_RETURN_IF_ERROR(Panels(ms_, req, [&](int64_t r0, int64_t rows) {
        Gemm(a + r0 * k_, b_.data(), o + r0 * n_, rows, n_, k_);
      }));
    }
    return req.WaitAll();
  }
  Result<double> Verify() override {
    std::vector<float> full(W_ * ms_ * k_), shard(ms_ * k_), ref(W_ * ms_ * n_);
    for (int p = 0; p < W_; ++p) {
      Fill(shard, Seed(a_.seed, 1, p));
      std::copy(shard.begin(), shard.end(), full.begin() + p * ms_ * k_);
    }
    Gemm(full.data(), b_.data(), ref.data(), W_ * ms_, n_, k_);
    return MaxRelErr(out_.data(), ref.data(), ref.size());
  }
  nlohmann::json Shape() const override {
    return {{"world", W_}, {"m_shard", ms_}, {"k", k_}, {"n_local", n_}};
  }
  double CommBytes() const override { return double(W_ - 1) * ms_ * k_ * 4; }
  double Flops() const override { return 2.0 * W_ * ms_ * k_ * n_; }

 private:
  int64_t ms_, k_, n_;
  std::vector<float> shard_, full_, b_, out_;
};

// ---------------------------------------------------------------- GEMM + RS
class GemmRs final : public PeerOp {
 public:
  GemmRs(PeerComm& c, const PeerArgs& a)
      : PeerOp(c, a), ms_(a.m_shard), k_(a.k), n_(a.n), a_in_(W_ * ms_ * k_), b_(k_ * n_),
        part_(W_ * ms_ * n_), out_(ms_ * n_), recv_(W_ * ms_ * n_) {
    Fill(a_in_, Seed(a.seed, 3, r_));
    Fill(b_, Seed(a.seed, 4, r_));
  }
  Status Comm() override { return c_.ReduceScatter(part_.data(), out_.data(), ms_ * n_); }
  Status Comp() override {
    Gemm(a_in_.data(), b_.data(), part_.data(), W_ * ms_, n_, k_);
    return OkStatus();
  }
  Status Sequential() override {
    std::fill(out_.begin(), out_.end(), NAN);
    LOOM_RETURN_IF_ERROR(Comp());
    return Comm();
  }
  Status Decomposed(DecompStats* st) override {
    std::fill(out_.begin(), out_.end(), NAN);
    Requests req(c_, st);
    const size_t chunk = ms_ * n_;
    std::vector<int> recv(W_, -1);
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + s) % W_;
      LOOM_ASSIGN_OR_RETURN(recv[p], req.Add(c_.Irecv(&recv_[p * chunk], chunk, p, 2)));
    }
    for (int s = 1; s <= W_; ++s) {  // start at rank + 1, own segment last
      const int d = (r_ + s) % W_;
      float* o = &part_[d * chunk];
      const float* a = &a_in_[d * ms_ * k_];
      LOOM_RETURN_IF_ERROR(Panels(ms_, req, [&](int64_t r0, int64_t rows) {
        Gemm(a + r0 * k_, b_.data(), o + r0 * n_, rows, n_, k_);
      }));
      if (d != r_) LOOM_RETURN_IF_ERROR(req.Add(c_.Isend(o, chunk, d, 2)).status());
    }
    std::memcpy(out_.data(), &part_[r_ * chunk], chunk * sizeof(float));
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + s) % W_;
      LOOM_RETURN_IF_ERROR(req.Need(recv[p]));
      const float* in = &recv_[p * chunk];
      for (size_t i = 0; i < chunk; ++i) out_[i] += in[i];
    }
    return req.WaitAll();
  }
  Result<double> Verify() override {
    std::vector<float> a(W_ * ms_ * k_), b(k_ * n_), ref(ms_ * n_, 0.0f), tmp(ms_ * n_);
    for (int p = 0; p < W_; ++p) {
      Fill(a, Seed(a_.seed, 3, p));
      Fill(b, Seed(a_.seed, 4, p));
      Gemm(&a[r_ * ms_ * k_], b.data(), tmp.data(), ms_, n_, k_);
      for (size_t i = 0; i < tmp.size(); ++i) ref[i] += tmp[i];
    }
    return MaxRelErr(out_.data(), ref.data(), ref.size());
  }
  nlohmann::json Shape() const override {
    return {{"world", W_}, {"m_shard", ms_}, {"k", k_}, {"n_local", n_}};
  }
  double CommBytes() const override { return double(W_ - 1) * ms_ * n_ * 4; }
  double Flops() const override { return 2.0 * W_ * ms_ * k_ * n_; }

 private:
  int64_t ms_, k_, n_;
  std::vector<float> a_in_, b_, part_, out_, recv_;
};

// ---------------------------------------------------------------- MoE layer (EP = W)
class Moe final : public PeerOp {
 public:
  Moe(PeerComm& c, const PeerArgs& a)
      : PeerOp(c, a), E_(a.experts), El_(a.experts / W_), k_(a.topk), H_(a.hidden), F_(a.ffn),
        T_(a.tokens), x_(T_ * H_), out_(T_ * H_) {
    Fill(x_, Seed(a.seed, 5, r_));
    for (int le = 0; le < El_; ++le) {
      w1_.emplace_back(H_ * F_);
      w2_.emplace_back(F_ * H_);
      Fill(w1_.back(), Seed(a.seed, 6, r_ * El_ + le));
      Fill(w2_.back(), Seed(a.seed, 7, r_ * El_ + le));
    }
  }

  // Routing and the per-(source, expert) row counts (one untimed exchange).
  Status Setup() {
    if (E_ % W_ != 0 || k_ < 1 || k_ > E_) {
      return InvalidArgumentError("moe: experts (" + std::to_string(E_) +
                                  ") must be a multiple of the world size (" +
                                  std::to_string(W_) + ") and >= topk (" + std::to_string(k_) +
                                  ")");
    }
    std::mt19937_64 rng(Seed(a_.seed, 8, r_));
    std::vector<double> zipf(E_);
    for (int e = 0; e < E_; ++e) zipf[e] = std::pow(e + 1.0, -1.2);
    std::discrete_distribution<int> pick_zipf(zipf.begin(), zipf.end());
    std::uniform_int_distribution<int> pick_uniform(0, E_ - 1);
    std::uniform_real_distribution<float> gate(0.1f, 1.0f);
    gate_.assign(T_ * k_, 0.0f);
    for (int64_t t = 0; t < T_; ++t) {
      std::vector<int> chosen;
      float sum = 0;
      while (static_cast<int>(chosen.size()) < k_) {
        int e = a_.routing == "zipf" ? pick_zipf(rng) : pick_uniform(rng);
        if (std::find(chosen.begin(), chosen.end(), e) != chosen.end()) continue;
        chosen.push_back(e);
        float g = gate(rng);
        gate_[t * k_ + chosen.size() - 1] = g;
        sum += g;
        entries_.push_back({e / El_, e, t, static_cast<int>(chosen.size()) - 1});
      }
      for (int j = 0; j < k_; ++j) gate_[t * k_ + j] /= sum;
    }
    std::sort(entries_.begin(), entries_.end());  // by destination rank, expert, token
    std::vector<float> send_ec(W_ * El_, 0.0f), recv_ec(W_ * El_, 0.0f);
    send_rows_.assign(W_, 0);
    for (const Entry& en : entries_) {
      ++send_rows_[en.dest];
      send_ec[en.expert] += 1.0f;  // expert e is block e / El_, slot e % El_
    }
    std::vector<int64_t> cnt(W_, El_);
    LOOM_RETURN_IF_ERROR(c_.AllToAllV(send_ec.data(), cnt, recv_ec.data(), cnt));
    recv_rows_.assign(W_, 0);
    seg_rows_.assign(W_ * El_, 0);
    for (int q = 0; q < W_; ++q) {
      for (int le = 0; le < El_; ++le) {
        seg_rows_[q * El_ + le] = static_cast<int64_t>(recv_ec[q * El_ + le]);
        recv_rows_[q] += seg_rows_[q * El_ + le];
      }
    }
    send_off_ = Offsets(send_rows_);
    recv_off_ = Offsets(recv_rows_);
    const int64_t sent = send_off_[W_], got = recv_off_[W_];
    send_.assign(sent * H_, 0.0f);
    back_.assign(sent * H_, 0.0f);
    recv_.assign(got * H_, 0.0f);
    y_.assign(got * H_, 0.0f);
    h_.assign(std::max<int64_t>(1, *std::max_element(seg_rows_.begin(), seg_rows_.end())) * F_,
              0.0f);
    return OkStatus();
  }

  Status Comm() override {
    LOOM_RETURN_IF_ERROR(c_.AllToAllV(send_.data(), Scaled(send_rows_), recv_.data(),
                                      Scaled(recv_rows_)));
    return c_.AllToAllV(y_.data(), Scaled(recv_rows_), back_.data(), Scaled(send_rows_));
  }
  Status Comp() override {
    for (int q = 0; q < W_; ++q) ExpertRows(q, 0, recv_rows_[q]);
    return OkStatus();
  }
  Status Sequential() override {
    Pack();
    LOOM_RETURN_IF_ERROR(c_.AllToAllV(send_.data(), Scaled(send_rows_), recv_.data(),
                                      Scaled(recv_rows_)));
    LOOM_RETURN_IF_ERROR(Comp());
    LOOM_RETURN_IF_ERROR(c_.AllToAllV(y_.data(), Scaled(recv_rows_), back_.data(),
                                      Scaled(send_rows_)));
    Combine();
    return OkStatus();
  }
  Status Decomposed(DecompStats* st) override {
    Pack();
    Requests req(c_, st);
    std::vector<int> disp(W_, -1), comb(W_, -1);
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + s) % W_;
      LOOM_ASSIGN_OR_RETURN(disp[p], req.Add(c_.Irecv(&recv_[recv_off_[p] * H_],
                                                      recv_rows_[p] * H_, p, 3)));
      LOOM_ASSIGN_OR_RETURN(comb[p], req.Add(c_.Irecv(&back_[send_off_[p] * H_],
                                                      send_rows_[p] * H_, p, 4)));
    }
    for (int s = 1; s < W_; ++s) {
      const int p = (r_ + W_ - s) % W_;
      LOOM_RETURN_IF_ERROR(
          req.Add(c_.Isend(&send_[send_off_[p] * H_], send_rows_[p] * H_, p, 3)).status());
    }
    std::memcpy(&recv_[recv_off_[r_] * H_], &send_[send_off_[r_] * H_],
                recv_rows_[r_] * H_ * sizeof(float));
    for (int s = 0; s < W_; ++s) {  // local tokens first, then the peers in ring order
      const int q = (r_ + s) % W_;
      if (q != r_) LOOM_RETURN_IF_ERROR(req.Need(disp[q]));
      LOOM_RETURN_IF_ERROR(Panels(recv_rows_[q], req, [&](int64_t r0, int64_t rows) {
        ExpertRows(q, r0, rows);
      }));
      if (q != r_) {
        LOOM_RETURN_IF_ERROR(
            req.Add(c_.Isend(&y_[recv_off_[q] * H_], recv_rows_[q] * H_, q, 4)).status());
      } else {
        std::memcpy(&back_[send_off_[r_] * H_], &y_[recv_off_[r_] * H_],
                    send_rows_[r_] * H_ * sizeof(float));
      }
    }
    for (int s = 1; s < W_; ++s) LOOM_RETURN_IF_ERROR(req.Need(comb[(r_ + s) % W_]));
    Combine();
    return req.WaitAll();
  }
  Result<double> Verify() override {
    // Every 16th token against x*W1_e*W2_e summed over its top-k, weights rebuilt per expert.
    std::vector<float> ref(T_ * H_, 0.0f), w1(H_ * F_), w2(F_ * H_), h(F_), y(H_);
    std::vector<int64_t> rows;
    for (int e = 0; e < E_; ++e) {
      Fill(w1, Seed(a_.seed, 6, e));
      Fill(w2, Seed(a_.seed, 7, e));
      for (const Entry& en : entries_) {
        if (en.expert != e || en.token % 16 != 0) continue;
        Gemm(&x_[en.token * H_], w1.data(), h.data(), 1, F_, H_);
        Gemm(h.data(), w2.data(), y.data(), 1, H_, F_);
        const float g = gate_[en.token * k_ + en.slot];
        for (int64_t i = 0; i < H_; ++i) ref[en.token * H_ + i] += g * y[i];
      }
    }
    double err = 0;
    for (int64_t t = 0; t < T_; t += 16) {
      err = std::max(err, MaxRelErr(&out_[t * H_], &ref[t * H_], H_));
    }
    return err;
  }
  nlohmann::json Shape() const override {
    return {{"world", W_},     {"experts", E_}, {"topk", k_},
            {"hidden", H_},    {"ffn", F_},     {"tokens_per_rank", T_},
            {"routing", a_.routing}, {"rows_sent_per_peer", send_rows_},
            {"rows_received_per_peer", recv_rows_}};
  }
  double CommBytes() const override {
    double rows = 0;
    for (int p = 0; p < W_; ++p) {
      if (p != r_) rows += static_cast<double>(send_rows_[p] + recv_rows_[p]);
    }
    return rows * H_ * 4;
  }
  double Flops() const override { return 4.0 * recv_off_[W_] * H_ * F_; }

 private:
  struct Entry {
    int dest;
    int expert;
    int64_t token;
    int slot;
    bool operator<(const Entry& o) const {
      return std::tie(dest, expert, token, slot) < std::tie(o.dest, o.expert, o.token, o.slot);
    }
  };
  static std::vector<int64_t> Offsets(const std::vector<int64_t>& rows) {
    std::vector<int64_t> off(rows.size() + 1, 0);
    std::partial_sum(rows.begin(), rows.end(), off.begin() + 1);
    return off;
  }
  std::vector<int64_t> Scaled(const std::vector<int64_t>& rows) const {
    std::vector<int64_t> v(rows);
    for (auto& x : v) x *= H_;
    return v;
  }
  void Pack() {
    for (size_t i = 0; i < entries_.size(); ++i) {
      std::memcpy(&send_[i * H_], &x_[entries_[i].token * H_], H_ * sizeof(float));
    }
  }
  void Combine() {
    std::fill(out_.begin(), out_.end(), 0.0f);
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& en = entries_[i];
      const float g = gate_[en.token * k_ + en.slot];
      float* o = &out_[en.token * H_];
      const float* b = &back_[i * H_];
      for (int64_t j = 0; j < H_; ++j) o[j] += g * b[j];
    }
  }
  // Rows [r0, r0 + rows) of source q's block: each expert segment through W1 then W2.
  void ExpertRows(int q, int64_t r0, int64_t rows) {
    int64_t seg0 = 0;
    for (int le = 0; le < El_; ++le) {
      const int64_t seg1 = seg0 + seg_rows_[q * El_ + le];
      const int64_t lo = std::max(seg0, r0), hi = std::min(seg1, r0 + rows);
      if (lo < hi) {
        const int64_t row = recv_off_[q] + lo;
        Gemm(&recv_[row * H_], w1_[le].data(), h_.data(), hi - lo, F_, H_);
        Gemm(h_.data(), w2_[le].data(), &y_[row * H_], hi - lo, H_, F_);
      }
      seg0 = seg1;
    }
  }

  int E_, El_, k_;
  int64_t H_, F_, T_;
  std::vector<float> x_, out_, gate_, send_, recv_, y_, back_, h_;
  std::vector<std::vector<float>> w1_, w2_;
  std::vector<Entry> entries_;
  std::vector<int64_t> send_rows_, recv_rows_, seg_rows_, send_off_, recv_off_;
};

// ---------------------------------------------------------------- trial loop and report
struct Stat {
  double median = 0, p25 = 0, p75 = 0;
};
Stat Summarise(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto q = [&](double f) {
    const double pos = f * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double frac = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
  };
  s.median = q(0.5);
  s.p25 = q(0.25);
  s.p75 = q(0.75);
  return s;
}

double Seconds(int64_t t0) { return static_cast<double>(NowNanos() - t0) * 1e-9; }

Result<std::unique_ptr<PeerOp>> MakeOp(PeerComm& c, const PeerArgs& a) {
  if (a.op == "ag_gemm") return std::unique_ptr<PeerOp>(std::make_unique<AgGemm>(c, a));
  if (a.op == "gemm_rs") return std::unique_ptr<PeerOp>(std::make_unique<GemmRs>(c, a));
  auto moe = std::make_unique<Moe>(c, a);
  LOOM_RETURN_IF_ERROR(moe->Setup());
  return std::unique_ptr<PeerOp>(std::move(moe));
}

Status RunPeer(const PeerArgs& a) {
  openblas_set_num_threads(1);
  std::unique_ptr<PeerComm> comm;
  if (IsGloo(a.impl)) {
    LOOM_ASSIGN_OR_RETURN(comm, MakeGlooPeerComm());
  } else {
    LOOM_ASSIGN_OR_RETURN(comm, MakeMpiPeerComm());
  }
  PeerComm& c = *comm;
  LOOM_ASSIGN_OR_RETURN(auto op, MakeOp(c, a));
  const bool decomposed = IsDecomposed(a.impl);
  const int n = a.trials;
  // Per trial: t_comm, t_comp, t_x, wait (decomposed), chunks ready / chunks, tests.
  std::vector<double> tc, tp, tx, tw, ready, tests;
  double err = -1;
  for (int it = 0; it < a.warmup + n; ++it) {
    LOOM_RETURN_IF_ERROR(c.Barrier());
    int64_t t0 = NowNanos();
    LOOM_RETURN_IF_ERROR(op->Comm());
    const double comm_s = Seconds(t0);
    LOOM_RETURN_IF_ERROR(c.Barrier());
    t0 = NowNanos();
    LOOM_RETURN_IF_ERROR(op->Comp());
    const double comp_s = Seconds(t0);
    LOOM_RETURN_IF_ERROR(c.Barrier());
    DecompStats st;
    t0 = NowNanos();
    LOOM_RETURN_IF_ERROR(decomposed ? op->Decomposed(&st) : op->Sequential());
    const double x_s = Seconds(t0);
    if (err < 0) {  // once: the op's output against the local reference
      LOOM_ASSIGN_OR_RETURN(err, op->Verify());
      double e = err;
      LOOM_RETURN_IF_ERROR(c.AllReduceMax(&e, 1));
      if (!(e <= kTolerance)) {
        return InternalError("overlap-peer " + a.op + "/" + a.impl + ": result differs from the " +
                             "local reference (max relative error " + std::to_string(e) +
                             " > " + std::to_string(kTolerance) + ", rank " +
                             std::to_string(c.rank()) + " saw " + std::to_string(err) + ")");
      }
      err = e;
    }
    if (it < a.warmup) continue;
    tc.push_back(comm_s);
    tp.push_back(comp_s);
    tx.push_back(x_s);
    tw.push_back(st.wait_s);
    ready.push_back(st.chunks ? double(st.chunks_ready) / st.chunks : 0.0);
    tests.push_back(static_cast<double>(st.tests));
  }
  // Each trial's time is the slower rank's.
  std::vector<double> all;
  for (auto* v : {&tc, &tp, &tx, &tw}) all.insert(all.end(), v->begin(), v->end());
  all.push_back(op->CommBytes());
  LOOM_RETURN_IF_ERROR(c.AllReduceMax(all.data(), all.size()));
  for (int i = 0; i < n; ++i) {
    tc[i] = all[i];
    tp[i] = all[n + i];
    tx[i] = all[2 * n + i];
    tw[i] = all[3 * n + i];
  }
  const double bytes = all[4 * n];
  if (c.rank() != 0) return OkStatus();

  std::vector<double> eff(n), exposed(n);
  for (int i = 0; i < n; ++i) {
    eff[i] = (tp[i] + tc[i] - tx[i]) / std::min(tp[i], tc[i]);
    exposed[i] = tx[i] - tp[i];
  }
  const Stat sc = Summarise(tc), sp = Summarise(tp), sx = Summarise(tx), se = Summarise(eff);
  auto stat_json = [](const Stat& s) {
    return nlohmann::json{{"median", s.median}, {"p25", s.p25}, {"p75", s.p75},
                          {"iqr", s.p75 - s.p25}};
  };
  nlohmann::json j = {
      {"op", a.op},
      {"impl", a.impl},
      {"transport", c.name()},
      {"notes", c.notes()},
      {"shape", op->Shape()},
      {"rate_mbps", a.rate_mbps > 0 ? nlohmann::json(a.rate_mbps) : nlohmann::json(nullptr)},
      {"trials", n},
      {"warmup", a.warmup},
      {"seed", a.seed},
      {"compute", "OpenBLAS cblas_sgemm, 1 thread"},
      {"per_trial", {{"t_comm_s", tc}, {"t_comp_s", tp}, {"t_x_s", tx}, {"efficiency", eff},
                     {"exposed_comm_s", exposed}}},
      {"t_comm_s", stat_json(sc)},
      {"t_comp_s", stat_json(sp)},
      {"t_x_s", stat_json(sx)},
      {"efficiency", stat_json(se)},
      {"exposed_comm_s_median", Summarise(exposed).median},
      {"R_comm_over_comp", sc.median / sp.median},
      {"comm_bytes_per_rank", bytes},
      {"comm_mbit_per_s", bytes * 8 / sc.median / 1e6},
      {"comp_gflop_per_s", op->Flops() / sp.median / 1e9},
      {"verify", {{"max_rel_err", err}, {"tolerance", kTolerance}, {"ok", true}}},
  };
  if (decomposed) {
    const bool background = c.BackgroundProgress();
    j["decomposed"] = {{"panel_rows", a.panel_rows},
                       {"progress", background ? "transport thread (no polling between panels)"
                                               : "Test() between panels"},
                       {"test_between_panels", a.test_between_panels && !background},
                       {"ready_rule", background ? "Wait() returned within 100 us"
                                                 : "Test() true before Wait()"},
                       {"per_trial_wait_s", tw},
                       {"per_trial_chunks_ready_fraction_rank0", ready},
                       {"per_trial_tests_rank0", tests},
                       {"wait_s_median", Summarise(tw).median}};
  }
  std::printf("overlap-peer %-7s %-14s t_comm %8.2f ms  t_comp %8.2f ms  t_x %8.2f ms  "
              "E %5.2f  R %5.2f  comm %7.1f Mbit/s  err %.1e\n",
              a.op.c_str(), a.impl.c_str(), sc.median * 1e3, sp.median * 1e3, sx.median * 1e3,
              se.median, sc.median / sp.median, bytes * 8 / sc.median / 1e6, err);
  if (!a.json.empty()) LOOM_RETURN_IF_ERROR(WriteFileAtomic(a.json, j.dump(2) + "\n"));
  return OkStatus();
}

}  // namespace

void RegisterBenchOverlapPeer(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand(
      "overlap-peer",
      "(used by scripts/bench/overlap_peers.sh) one real peer of `loom bench overlap`: OpenMPI "
      "or Gloo collective + OpenBLAS SGEMM on 2 ranks");
  cmd->group("");  // hidden from `loom bench --help`
  auto a = std::make_shared<PeerArgs>();
  cmd->add_option("--op", a->op, "ag_gemm | gemm_rs | moe")
      ->check(CLI::IsMember({"ag_gemm", "gemm_rs", "moe"}));
  cmd->add_option("--impl", a->impl,
                  "mpi | mpi_decomposed (under mpirun) | gloo | gloo_decomposed (loom world)")
      ->check(CLI::IsMember({"mpi", "mpi_decomposed", "gloo", "gloo_decomposed"}));
  cmd->add_option("--m-shard", a->m_shard, "rows per rank (ag_gemm, gemm_rs)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--k", a->k, "K")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--n", a->n, "N_local")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--experts", a->experts, "moe: experts (multiple of the world size)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--topk", a->topk, "moe: experts per token")->check(CLI::Range(1, 64));
  cmd->add_option("--hidden", a->hidden, "moe: hidden size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--ffn", a->ffn, "moe: expert FFN size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--tokens", a->tokens, "moe: tokens per rank")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--routing", a->routing, "moe: uniform | zipf (s = 1.2)")
      ->check(CLI::IsMember({"uniform", "zipf"}));
  cmd->add_option("--trials", a->trials, "timed trials")->check(CLI::Range(1, 10000));
  cmd->add_option("--warmup", a->warmup, "untimed trials first")->check(CLI::Range(0, 10000));
  cmd->add_option("--panel-rows", a->panel_rows, "decomposed impls: rows per GEMM panel")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--test-between-panels", a->test_between_panels,
                  "mpi_decomposed: call MPI_Test between panels (false: progress only in Wait)");
  cmd->add_option("--seed", a->seed, "data and routing seed");
  cmd->add_option("--rate-mbps", a->rate_mbps, "link rate to record in the JSON (not applied)");
  cmd->add_option("--json", a->json, "write the result (rank 0) as JSON");
  cmd->callback([a, ctx] {
    if (IsGloo(a->impl) && !UnderLauncher()) {  // unshaped convenience run: 2 local ranks
      ctx->exit_code = RelaunchAsRanks(ctx->argv, 2, "loom bench overlap-peer");
      return;
    }
    if (!IsGloo(a->impl) && std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) {
      std::fprintf(stderr, "loom bench overlap-peer: --impl %s runs under mpirun (2 ranks), e.g. "
                           "via scripts/bench/overlap_peers.sh\n", a->impl.c_str());
      ctx->exit_code = kExitUsage;
      return;
    }
    if (Status s = RunPeer(*a); !s.ok()) {
      std::fprintf(stderr, "loom bench overlap-peer: %s\n", s.ToString().c_str());
      ctx->exit_code = s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
  });
}

}  // namespace loom::cli
