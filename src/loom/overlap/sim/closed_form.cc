#include "loom/overlap/sim/closed_form.h"

#include <algorithm>

#include "loom/base/check.h"

namespace loom::overlap {

double AgGemmSequentialIdeal(double t_c, double t_m) { return t_m + t_c; }

double AgGemmDecomposedIdeal(double t_c, double t_m, int world) {
  LOOM_CHECK(world >= 1);
  return std::max(t_c, t_m + t_c / world);
}

double AgGemmFusedIdeal(double t_c, double t_m, int world, int splits) {
  LOOM_CHECK(world >= 1 && splits >= 1);
  return std::max(t_c, t_m + t_c / (static_cast<double>(world) * splits));
}

double GemmRsSequentialIdeal(double t_c, double t_m, double t_red) { return t_c + t_m + t_red; }

double GemmRsDecomposedIdeal(double t_c, double t_m, int world, double t_red) {
  LOOM_CHECK(world >= 1);
  return t_c / world + std::max(t_c * (world - 1) / world, t_m) + t_red;
}

double GemmRsFusedIdeal(double t_c, double t_m, int world, int splits, double t_red_tail) {
  LOOM_CHECK(world >= 1 && splits >= 1);
  return std::max(t_c, t_c / (static_cast<double>(world) * splits) + t_m) + t_red_tail;
}

double CommComputeRatio(double t_comm, double t_comp) {
  LOOM_CHECK(t_comp > 0);
  return t_comm / t_comp;
}

double FusionBreakEvenRatio(int world) {
  LOOM_CHECK(world >= 1);
  return static_cast<double>(world - 1) / world;
}

double AgGemmFlops(int world, int64_t m_shard, int64_t k, int64_t n_local) {
  return 2.0 * world * static_cast<double>(m_shard) * static_cast<double>(k) *
         static_cast<double>(n_local);
}

double AgGemmLinkBytes(int world, int64_t m_shard, int64_t k, int elem_bytes) {
  return static_cast<double>(world - 1) * static_cast<double>(m_shard) * static_cast<double>(k) *
         elem_bytes;
}

double GemmRsFlops(int world, int64_t m_shard, int64_t k_local, int64_t n) {
  return 2.0 * world * static_cast<double>(m_shard) * static_cast<double>(k_local) *
         static_cast<double>(n);
}

double GemmRsLinkBytes(int world, int64_t m_shard, int64_t n, int elem_bytes) {
  return static_cast<double>(world - 1) * static_cast<double>(m_shard) * static_cast<double>(n) *
         elem_bytes;
}

double LinkBandwidthForRatio(double link_bytes, double flops, double flops_per_s, double target_r) {
  LOOM_CHECK(link_bytes > 0 && flops > 0 && flops_per_s > 0 && target_r > 0);
  const double t_comp = flops / flops_per_s;
  return link_bytes / (target_r * t_comp);
}

double AgGemmBandwidthForRatio(int world, int64_t m_shard, int64_t k, int64_t n_local,
                               int elem_bytes, double flops_per_s, double target_r) {
  return LinkBandwidthForRatio(AgGemmLinkBytes(world, m_shard, k, elem_bytes),
                               AgGemmFlops(world, m_shard, k, n_local), flops_per_s, target_r);
}

double GemmRsBandwidthForRatio(int world, int64_t m_shard, int64_t k_local, int64_t n,
                               int elem_bytes, double flops_per_s, double target_r) {
  return LinkBandwidthForRatio(GemmRsLinkBytes(world, m_shard, n, elem_bytes),
                               GemmRsFlops(world, m_shard, k_local, n), flops_per_s, target_r);
}

}  // namespace loom::overlap
