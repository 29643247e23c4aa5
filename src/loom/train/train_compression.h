// TrainCompression: the codecs `compress.*` asks for, built once per run, and what the trainer
// reports about them.
//
//   LOOM_ASSIGN_OR_RETURN(TrainCompression tc, TrainCompression::FromConfig(cfg.compress));
//   layout_opts.pad = world * tc.pad_elements();       // buckets split into whole groups
//
// Bucket padding: with an int codec every bucket is padded to a multiple of world x group (lcm
// of the gradient and weight groups), so each rank's shard is whole groups; the padding this
// costs is printed at start, never applied silently.
// Thread-safety: the codecs are immutable and may be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "loom/base/status.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/weight_spec.h"
#include "loom/train/train_config.h"

namespace loom::train {

struct TrainCompression {
  std::unique_ptr<compress::Codec> grad;     // element codec; nullptr: none (or PowerSGD)
  int powersgd_rank = 0;                     // compress.grad=powersgd:r<R>
  std::unique_ptr<compress::Codec> weights;  // nullptr: full-precision parameter all-gather
  std::unique_ptr<compress::Codec> grad_intra;  // compress.grad_intra when compress.node_size > 1
  int node_size = 1;                            // compress.node_size
  compress::WeightSpec weight_spec;
  int64_t plan_group = 1;  // lcm of the groups of compress.plan_codecs (when compress.plan is set)

  static Result<TrainCompression> FromConfig(const CompressConfig& c);
  bool enabled() const { return grad != nullptr || powersgd_rank > 0 || weights != nullptr; }
  // Elements every bucket must be a multiple of, per rank (16 without an int codec).
  int64_t pad_elements() const;
  // "grad int4:g128:stochastic:hadamard (4.25 bits), weights qwd4:g2048:stochastic (4.02 bits)".
  std::string Describe() const;
};

// "compressed traffic: gradients 12.3 MiB on the wire for 98.1 MiB fp32 (8.0x) ..." for the run
// summary; empty when nothing was compressed.
std::string DescribeTraffic(const compress::CollectiveStats& grad,
                            const compress::CollectiveStats& weights);

}  // namespace loom::train
