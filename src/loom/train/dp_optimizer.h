// DataParallelOptimizer: the optimizer step of data-parallel training over flat fp32 buffers.
//
// dist.mode=zero1 (ZeRO stage 1): each rank owns 1/world of every gradient bucket (the slice
// GradReducer's reduce-scatter left reduced in place), keeps AdamW moments only for that slice,
// updates it, and all-gathers the updated parameters bucket by bucket.
// dist.mode=allreduce (plain DP): gradients are fully reduced everywhere; every rank updates all
// parameters and keeps full moments.
// Both: global L2 gradient-norm clipping (as torch.nn.utils.clip_grad_norm_), decoupled weight
// decay on matrices and embeddings but not on biases and LayerNorm parameters.
// With bf16 compute weights (`weights_bf16`), the step also refreshes them: zero1 converts only
// its shard and all-gathers bf16 (half the bytes of fp32); each rank's fp32 master is then
// authoritative for its own shard only. allreduce converts the whole (fully updated) master.
// Weight compression (EnableWeightCompression, compress.weights, zero1 only): the fp32 master of
// the owned shard moves into the optimizer (master_values()), and the parameter buffer becomes
// the copy every rank holds, refreshed by a quantized all-gather of master - copy (qWD) or of the
// master itself (qW). Every rank decodes every block, its own included, so the copies stay
// bit-identical across ranks.
// Thread-safety: one training thread; uses the communicator when Step() runs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/nn/param_layout.h"
#include "loom/train/train_config.h"

namespace loom::train {

class DataParallelOptimizer {
 public:
  DataParallelOptimizer(comm::Communicator* comm, const nn::FlatLayout* layout, float* params,
                        float* grads, DpMode mode, OptimConfig config,
                        uint16_t* weights_bf16 = nullptr);

  struct WeightCompression {
    const compress::Codec* codec = nullptr;
    bool difference = true;     // qWD (true) or qW (false)
    uint64_t seed = 0;
    int64_t from_step = 0;      // 0-based step from which the gather is compressed (warm-up)
  };
  // Call before the first Step(), after the parameters hold their initial values.
  void EnableWeightCompression(WeightCompression wc);
  // After the parameter buffer was overwritten (checkpoint restore): the owned master values are
  // taken from it again.
  void ReloadMaster();
  // Counters of the compressed parameter gather (zero without weight compression).
  compress::CollectiveStats weight_compress_stats() const;

  struct StepResult {
    double grad_norm = 0;   // before clipping
    double clip_scale = 1;  // factor applied to the gradients
  };
  // `step` is 1-based (AdamW bias correction).
  Result<StepResult> Step(double lr, int64_t step);

  // Bytes of optimizer state this rank holds (fp32 m and v).
  int64_t state_bytes() const { return static_cast<int64_t>((m_.size() + v_.size()) * 4); }
  // Elements of the parameters this rank updates.
  int64_t owned_elements() const { return static_cast<int64_t>(m_.size()); }

  // A piece of one parameter this rank updates: flat elements [begin, begin + count) of the
  // parameter buffer, whose AdamW moments sit at exp_avg()[state_offset ...] (and exp_avg_sq()).
  // Checkpointing saves exactly these ranges (ZeRO-1: disjoint over ranks; allreduce: all).
  struct OwnedSegment {
    int64_t begin = 0;
    int64_t count = 0;
    int64_t state_offset = 0;
  };
  std::vector<OwnedSegment> owned_segments() const;
  // The authoritative fp32 values of an owned segment (the parameter buffer, or the optimizer's
  // own master copy under weight compression).
  float* master_values(const OwnedSegment& seg) {
    return master_.empty() ? params_ + seg.begin : master_.data() + seg.state_offset;
  }
  float* exp_avg() { return m_.data(); }
  float* exp_avg_sq() { return v_.data(); }
  // True when every rank holds the same (full) state: dist.mode=allreduce.
  bool replicated_state() const { return mode_ == DpMode::kAllReduce; }

 private:
  Status GatherParameters(int64_t step);
  // The full-precision gather of one bucket: `lo`, `n` = the elements this rank updated.
  Status GatherBucket(const nn::Bucket& b, int64_t lo, int64_t n);
  Status GatherBucketCompressed(int bucket, int64_t lo, int64_t shard, int64_t step);
  struct Segment {
    int64_t begin;
    int64_t count;
    bool decay;
    int64_t state;  // offset into m_, v_ (and master_)
  };

  comm::Communicator* comm_;
  const nn::FlatLayout* layout_;
  float* params_;
  float* grads_;
  uint16_t* weights_bf16_;
  DpMode mode_;
  OptimConfig config_;
  std::vector<Segment> segments_;
  std::vector<float> m_, v_;
  // Weight compression.
  WeightCompression wc_;
  std::unique_ptr<compress::QuantizedCollectives> weight_qc_;
  std::vector<float> master_;  // owned segments, indexed like m_
  std::vector<float> send_;    // one shard of differences
};

}  // namespace loom::train
