// Internal helpers shared by the simulator's op programs (simulator.cc, moe_sim.cc).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/sim/event_engine.h"
#include "loom/overlap/sim/simulator.h"

namespace loom::overlap::internal {

// `total` split into min(parts, total) near-equal parts (larger first); empty if total <= 0.
std::vector<int64_t> SplitEven(int64_t total, int64_t parts);
// Column tile widths covering n (edge tile last); {n} if tile_n <= 0 or >= n.
std::vector<int64_t> ColumnTiles(int64_t n, int64_t tile_n);
// The W-1 peers of `rank` in schedule order: rank+1, rank+2, ... or rank XOR i (power-of-two W
// with xor_swizzle).
std::vector<int> PeerOrder(int world, int rank, bool xor_swizzle);
Status CheckCommon(int world, const SimOptions& options, OverlapMode mode);
VariantPrediction ToPrediction(OverlapMode mode, int splits, SimResult&& result);
// One reduce item on pool `reduce_pool` per message, cost seconds_per_byte · bytes.
void AddReductions(SimProgram* program, int reduce_pool, double seconds_per_byte);
// Runs the three variants (fused over options.fused_split_candidates if any) and applies
// ChooseMode with options.auto_margin.
Result<Prediction> PredictAll(
    const std::function<Result<VariantPrediction>(OverlapMode, const SimOptions&)>& simulate,
    const SimOptions& options);

}  // namespace loom::overlap::internal
