// Building blocks of peer-comparison detectors: the fleet window of one metric (N machines x w
// samples, min-max normalised, with a missing mask), the per-machine sum of distances to all
// other machines (exact O(N*w) fast path for squared L2), and robust z-scores over machines.
//
//   FleetWindow win = ExtractFleetWindow(series, metric, t, /*w=*/8, /*norm_horizon_s=*/600);
//   std::vector<float> sums(win.machines);
//   PeerDistanceSums(win.values.data(), win.machines, win.w, win.present.data(),
//                    Distance::kL2, sums.data());
//   RobustZ(sums, win.present, /*scale_floor=*/0.02, z);
//
// Missing data: a machine with fewer than half of its window's samples is "missing" (present = 0,
// its distance sum and z are NaN); shorter gaps are filled from the nearest sample in the window.
// Never a zero. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct FleetWindow {
  int machines = 0;
  int w = 0;
  std::vector<float> values;     // [machine][w] in [0, 1]; NaN for missing machines
  std::vector<uint8_t> present;  // 1 = usable
  int present_count = 0;
};

// Samples t-w+1 .. t of `metric` (t >= w-1). Normalised with the fleet's min/max over the last
// max(w, norm_horizon_s) seconds (strided scan) so quiet phases are not blown up to [0, 1].
void ExtractFleetWindow(const FleetSeries& s, int metric, int64_t t, int w,
                        int64_t norm_horizon_s, FleetWindow* out);

enum class Distance { kL2, kL2Squared, kL1, kLInf };
Result<Distance> ParseDistance(const std::string& name);

// From this many machines on, kL2 runs as a Gram-matrix GEMM instead of pairwise loops.
inline constexpr int kGramMinMachines = 64;

// out[i] = sum over present j of dist(e_i, e_j) / (present - 1); NaN for absent i.
// emb: [n][d]. kL2Squared uses the exact identity
//   sum_j |a - b_j|^2 = P |a|^2 - 2 a . sum_j b_j + sum_j |b_j|^2   (O(n d)).
void PeerDistanceSums(const float* emb, int n, int d, const uint8_t* present, Distance distance,
                      float* out);
// The O(n^2 d) reference for kL2Squared (tests compare it to the fast path).
void SquaredDistanceSumsBruteForce(const float* emb, int n, int d, const uint8_t* present,
                                   float* out);

// z_i = (x_i - median) / max(1.4826 * MAD, scale_floor) over present machines; NaN elsewhere.
void RobustZ(std::span<const float> x, std::span<const uint8_t> present, double scale_floor,
             std::span<float> z);

// Index of the largest non-NaN value, -1 if none.
int ArgMax(std::span<const float> x);

}  // namespace loom::monitor

namespace loom::monitor {

struct ChannelScore;
// Makes the machine with the highest non-NaN score ch's candidate (none when all are NaN; ties:
// the lowest id) and the next ChannelScore::kRunnersUp machines its runners-up.
void SetTopCandidate(std::span<const float> scores, ChannelScore* ch);
// If some machines are missing but at least half the fleet is present, names the lowest-id
// missing machine as the channel's candidate (missing = true, score = +inf); the scored top
// machine it displaces becomes the first runner-up.
void MarkMissingCandidate(std::span<const uint8_t> present, ChannelScore* ch);

}  // namespace loom::monitor
