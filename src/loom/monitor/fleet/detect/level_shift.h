// Level-shift channels (loom's extension to Minder, off by default): per metric, how much each
// machine's step-averaged level has moved against its own recent past, compared across the
// fleet. A 1.05-1.3x fail-slow machine computes ~1-10% longer per step than its peers, which
// the 1 Hz window channels see only as a small, jittery edge shift and which a per-machine
// gain (the simulator's ±2%, a real machine's calibration) hides in a plain level comparison.
//
//   score_i = |robust z over machines of  L_i(now) - L_i(ref)|
//   r_i(b)   = machine i's mean over block b minus the fleet's median of those block means
//   L_i(now) = median of r_i(b) over the complete blocks of the last `window_s`
//   L_i(ref) = median of r_i(b) over the `ref_s` before that (ending at most 7 blocks before
//              the window: each metric's reference is refreshed every 8 blocks, staggered)
//   A block (`block_s`, ~ one step period) mean keeps the step waveform's duty cycle (a
//   per-second median keeps only the compute plateau); subtracting the fleet's block median
//   removes job-wide regimes (halts, pauses) before the medians, which would otherwise land
//   anywhere between two regimes' levels, differently on every machine.
//
// Spikes and transients shorter than window_s / 2 - block_s cannot move the window median; a
// fault well shorter than ref_s / 2 cannot move the reference, so a machine that recovers does
// not look shifted afterwards. A fault of ~ref_s / 2 does: the recovered machine then looks
// shifted for up to ref_s / 2 (the false alarms of the held-out test, README round 4), so keep
// ref_s >= 4 x the longest fault, or freeze the reference of a deviating machine (freeze_z).
// Off by default in Minder and in the evaluation. Scores change once per block and lag the
// onset by about window_s / 2.
// Channel name: "<metric>~<window_s>s". Missing data: a block with fewer than half of its
// samples is missing; a machine missing any window block or a quarter of its reference
// blocks has no score (NaN, never zero; with gaps it would compare another time span) and is
// not a candidate here (the per-metric channels name it).
// Block means are memoised per series (pure memoisation: call order does not matter; a new
// series, detected by its data pointer, size or metric names, clears it).
// Thread-safety: not thread-safe (memo).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/monitor/fleet/detect/continuity_gate.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct LevelShiftOptions {
  int64_t window_s = 0;        // 0 = off
  int64_t block_s = 9;         // ~ one step period of the job
  int64_t ref_s = 1800;        // reference span before the window
  int64_t min_ref_s = 270;     // no score until this much reference exists
  double scale_floor = 0.003;  // robust-z floor: fraction of the block means' range (fleet, span)
  double weight = 1.0;         // multiplies the scores (one gate threshold for all channels)
  // Frozen reference (0 = off): at each refresh, a machine whose |z| over the window just
  // before it is >= freeze_z keeps its previous reference, for at most freeze_max_s (0 =
  // ref_s); when it is back to normal, the blocks it deviated in stay out of its reference
  // until they age out. So its own fault never enters its reference and it is not flagged once
  // it recovers (round 5).
  double freeze_z = 0;
  int64_t freeze_max_s = 0;
};

// Name of a level-shift channel: "gpu_tensor~99s".
std::string LevelShiftChannelName(const std::string& metric, int64_t window_s);

class LevelShiftChannels {
 public:
  explicit LevelShiftChannels(LevelShiftOptions options) : options_(options) {}
  // Appends one channel per metric of `metrics` (indices into s) to `step` for second t.
  void Add(const FleetSeries& s, int64_t t, const std::vector<int>& metrics, ScoreStep* step);
  // Per-machine signed z of `metric` at t (NaN = no score), for tests and diagnosis.
  std::vector<float> ShiftZ(const FleetSeries& s, int metric, int64_t t);

 private:
  void Sync(const FleetSeries& s);
  float BlockMean(const FleetSeries& s, int metric, int machine, int64_t block);
  // BlockMean minus the fleet's median block mean of that block (NaN if either is missing).
  float Residual(const FleetSeries& s, int metric, int machine, int64_t block);
  int64_t MinRefBlocks() const;
  // Per machine: median residual over the ref_s before block a (NaN if < 3/4 present); *range =
  // the block means' range over that span.
  std::vector<float> FreshReference(const FleetSeries& s, int metric, int64_t a, float* range);
  // Sets ref_[metric] to the reference ending at block a (with freeze_z: walking every
  // refresh point before it in order).
  void UpdateReference(const FleetSeries& s, int metric, int64_t a);
  // Robust z over machines of (median residual over blocks [w0, last]) - ref[i].
  void WindowZ(const FleetSeries& s, int metric, int64_t w0, int64_t last,
               const std::vector<float>& ref, float ref_range, std::vector<float>* z);
  LevelShiftOptions options_;
  const float* data_ = nullptr;
  int64_t seconds_ = 0;
  int machines_ = 0;
  std::vector<std::string> names_;
  std::vector<std::vector<float>> blocks_;  // [metric * machines + machine][block], NaN-filled
  std::vector<std::vector<uint8_t>> done_;
  std::vector<std::vector<float>> fleet_median_;  // [metric][block]
  std::vector<std::vector<uint8_t>> fleet_done_;
  static constexpr int64_t kRefStagger = 8;   // blocks between reference refreshes
  std::vector<int64_t> ref_end_;              // per metric: block the reference ends at
  std::vector<std::vector<float>> ref_;       // per metric: L_i(ref) per machine
  std::vector<std::vector<int64_t>> frozen_since_;  // per metric, machine: block, -1 = not frozen
  using BlockSpan = std::pair<int64_t, int64_t>;    // blocks [first, second)
  std::vector<std::vector<std::vector<BlockSpan>>> excluded_;  // per metric, machine: left out
  std::vector<float> ref_range_;              // per metric: block means' range in the reference
  std::vector<int64_t> z_block_;            // per metric: last complete block of z_cache_
  std::vector<std::vector<float>> z_cache_;  // per metric: ShiftZ at z_block_
  std::vector<float> buf_, buf2_, delta_, z_;
  std::vector<uint8_t> present_;
};

}  // namespace loom::monitor
