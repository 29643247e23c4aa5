#include "loom/trace/costmodel/sequence.h"

#include <algorithm>
#include <cmath>

namespace loom::trace::costmodel {

LeafNormalizer LeafNormalizer::Fit(const Dataset& ds, const std::vector<int>& indices) {
  LeafNormalizer n;
  n.mean.assign(kNumLeafFeatures, 0.f);
  n.inv_std.assign(kNumLeafFeatures, 1.f);
  std::vector<double> sum(kNumLeafFeatures, 0), sq(kNumLeafFeatures, 0);
  double count = 0;
  for (int i : indices) {
    for (const auto& leaf : ds.samples[i].leaves) {
      for (int f = 0; f < kNumLeafFeatures; ++f) {
        sum[f] += leaf[f];
        sq[f] += double(leaf[f]) * leaf[f];
      }
      ++count;
    }
  }
  if (count == 0) return n;
  for (int f = 0; f < kNumLeafFeatures; ++f) {
    const double m = sum[f] / count;
    const double var = std::max(sq[f] / count - m * m, 0.0);
    n.mean[f] = static_cast<float>(m);
    n.inv_std[f] = static_cast<float>(1.0 / std::max(std::sqrt(var), 1e-6));
  }
  return n;
}

Result<SequenceTensors> BuildSequenceTensors(const Dataset& ds, const std::vector<int>& indices,
                                             const LeafNormalizer& norm, const SequenceOptions& o) {
  SequenceTensors t;
  t.n = static_cast<int64_t>(indices.size());
  t.max_leaves = o.max_leaves;
  const int64_t F = t.features, L = t.max_leaves;
  t.leaves.assign(t.n * L * F, 0.f);
  t.mask.assign(t.n * L, 0.f);
  t.device.reserve(t.n * t.device_features);
  t.target.reserve(t.n);
  for (int64_t r = 0; r < t.n; ++r) {
    const Sample& s = ds.samples[indices[r]];
    const int64_t len = static_cast<int64_t>(s.leaves.size());
    if (len > L) {
      return OutOfRangeError("costmodel: sample " + std::to_string(s.id) + " (" + s.instance_key +
                             ") has " + std::to_string(len) + " leaves > max_leaves " +
                             std::to_string(L));
    }
    const DeviceInfo* dev = ds.FindDevice(s.device);
    if (dev == nullptr) {
      return NotFoundError("costmodel: sample " + std::to_string(s.id) + " has unknown device " +
                           s.device);
    }
    for (int64_t l = 0; l < len; ++l) {
      float* out = t.leaves.data() + (r * L + l) * F;
      const std::vector<float> pe = o.positional_encoding
                                        ? PositionalEncoding(s.leaf_pos[l], static_cast<int>(F))
                                        : std::vector<float>(F, 0.f);
      for (int64_t f = 0; f < F; ++f) {
        out[f] = (s.leaves[l][f] - norm.mean[f]) * norm.inv_std[f] + pe[f];
      }
      t.mask[r * L + l] = 1.f;
    }
    if (len < L) std::fill_n(t.leaves.data() + (r * L + len) * F, F, 1.f);  // end token
    const std::vector<float> dv = DeviceVector(*dev);
    t.device.insert(t.device.end(), dv.begin(), dv.end());
    t.target.push_back(static_cast<float>(std::log(s.latency_s)));
  }
  return t;
}

}  // namespace loom::trace::costmodel
