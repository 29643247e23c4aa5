// PowerSgd: rank-r gradient all-reduce by one step of power iteration (Vogels et al., NeurIPS
// 2019), the algorithm behind PyTorch's powerSGD_hook, over loom's Communicator.
//
//   PowerSgd psgd(&comm, bucket_elems, {{offset, rows, cols}, ...}, {.rank = 4, .seed = s});
//   LOOM_RETURN_IF_ERROR(psgd.AllReduce(grad_bucket, {.step = step, .what = "bucket 3"}));
//
// For every gradient matrix M (rows x cols, at `offset` in the buffer) with error feedback e:
//   M += e;  P = M Q;  all-reduce mean P;  orthonormalise P's columns (Gram-Schmidt);
//   Q = M^T P;  all-reduce mean Q;  M_hat = P Q^T;  e = M - M_hat;  M = M_hat
// Q is warm-started from the previous step (initially Gaussian from the shared seed, identical on
// every rank). Matrices where rank-r factors are not smaller than the matrix ((rows + cols) r >=
// rows cols), vectors (biases, LayerNorm) and padding are averaged uncompressed, in the same
// all-reduce as the P factors. Two all-reduces per call; every rank ends with the same values.
// Traffic per matrix: (rows + cols) r floats instead of rows x cols.
// Thread-safety: one thread at a time; holds the Q factors and error-feedback residuals.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/collectives/quantized_collectives.h"

namespace loom::compress {

struct LowRankMatrix {
  int64_t offset = 0;  // first element in the buffer
  int64_t rows = 0;
  int64_t cols = 0;
};

class PowerSgd {
 public:
  struct Options {
    int rank = 4;
    uint64_t seed = 0;
    bool error_feedback = true;
    comm::CommOptions comm;
  };

  // The buffer has `n` floats; `matrices` lie inside it without overlapping.
  PowerSgd(comm::Communicator* comm, int64_t n, std::vector<LowRankMatrix> matrices,
           Options options);

  // Replaces buf[0, n) by the (approximate) mean over ranks.
  Status AllReduce(float* buf, const CollectiveCall& call);

  const CollectiveStats& stats() const { return stats_; }
  int64_t compressed_matrices() const { return static_cast<int64_t>(low_rank_.size()); }

 private:
  struct Factorised {
    LowRankMatrix m;
    int r;
    std::vector<float> q;      // cols x r, row-major, warm start
    std::vector<float> error;  // rows x cols
    int64_t p_at;              // offset of its P (rows x r) in the P exchange buffer
    int64_t q_at;              // offset of its Q in the Q exchange buffer
  };

  comm::Communicator* comm_;
  int64_t n_;
  Options options_;
  std::vector<Factorised> low_rank_;
  std::vector<std::pair<int64_t, int64_t>> plain_;  // [begin, end) averaged uncompressed
  int64_t plain_elems_ = 0;
  std::vector<float> p_buf_, q_buf_;
  CollectiveStats stats_;
};

// Orthonormalises the r columns of the row-major rows x r matrix `a` in place (modified
// Gram-Schmidt); a column that becomes ~0 is left as zeros.
void OrthonormaliseColumns(float* a, int64_t rows, int r);

}  // namespace loom::compress
