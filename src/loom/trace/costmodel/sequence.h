// Dense tensors of the leaf sequences, ready for a sequence model (a later libtorch trainer wraps
// these buffers with torch::from_blob; this file has no torch dependency).
//
// For each sample: leaves [max_leaves x F], standardised per feature with LeafNormalizer, then
// PositionalEncoding(leaf_pos, F) added (CDMPP: normalise first, then add the encoding); the slot
// after the last leaf holds CDMPP's end token (all ones) when there is room; the rest is zero
// with mask 0. Plus the device vector and the target ln(latency_s).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/dataset.h"

namespace loom::trace::costmodel {

// Per-leaf-feature mean/std over all leaves of the given samples (std floored at 1e-6).
struct LeafNormalizer {
  std::vector<float> mean, inv_std;
  static LeafNormalizer Fit(const Dataset& ds, const std::vector<int>& indices);
};

struct SequenceTensors {
  int64_t n = 0, max_leaves = 0, features = kNumLeafFeatures, device_features = kNumDeviceFeatures;
  std::vector<float> leaves;  // [n, max_leaves, features]
  std::vector<float> mask;    // [n, max_leaves]: 1 for a real leaf, 0 for end token / padding
  std::vector<float> device;  // [n, device_features]
  std::vector<float> target;  // [n]: ln(latency_s)
};

struct SequenceOptions {
  int max_leaves = 8;               // longer sequences fail (kOutOfRange), naming the sample
  bool positional_encoding = true;  // false: the "- PE" ablation
};

Result<SequenceTensors> BuildSequenceTensors(const Dataset& ds, const std::vector<int>& indices,
                                             const LeafNormalizer& norm,
                                             const SequenceOptions& options);

}  // namespace loom::trace::costmodel
