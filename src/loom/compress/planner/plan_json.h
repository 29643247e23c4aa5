// CompressionPlan: the per-tensor codec plan the trainer consumes (`compress.plan=auto|FILE`),
// and its JSON file.
//
//   LOOM_ASSIGN_OR_RETURN(PlanReport r, EspressoPlan(sim));
//   LOOM_ASSIGN_OR_RETURN(CompressionPlan p, MakeCompressionPlan(sim, r.plan, r.plan_s,
//                                                                r.uncompressed_s));
//   LOOM_RETURN_IF_ERROR(SaveCompressionPlan("plan.json", p));
//   // trainer:
//   LOOM_ASSIGN_OR_RETURN(CompressionPlan q, LoadCompressionPlan("plan.json"));
//   LOOM_RETURN_IF_ERROR(CheckPlanMatches(q, buckets, world_size));
//
// Format (version 1; unknown fields are errors):
//   {"version": 1, "world_size": 4,
//    "link": {"name": "dp", "alpha_s": 1.5e-4, "beta_s_per_byte": 8e-9},
//    "tensors": [{"name": "h.11.mlp", "elements": 2359296, "codec": "int8:g128:stochastic",
//                 "encode_on": "compute" | "offload" | "link"}, ...], // backward order
//    "predicted_iteration_s": 0.081, "baseline_uncompressed_s": 0.142}
// "encode_on" is where encode and decode run (Placement): the compute stream, the offload worker,
// or the communication thread itself, serialized with the transfer ("link", what loom's
// GradReducer does); "none" tensors are written "compute" and the field is ignored for them.
// Codecs are written in CodecSpec's canonical form. Loading validates every field; errors name
// the field and the tensor ("plan.json: tensors[3] 'h.2.mlp': codec 'int3': ...").
// Thread-safety: value types; functions are reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/compress/planner/cost_model.h"
#include "loom/compress/planner/timeline.h"

namespace loom::compress::planner {

struct PlannedTensor {
  std::string name;
  int64_t elements = 0;
  std::string codec = "none";                 // canonical CodecSpec
  Placement encode_on = Placement::kCompute;  // where encode and decode run
  bool operator==(const PlannedTensor&) const = default;
};

struct CompressionPlan {
  static constexpr int kVersion = 1;
  int world_size = 1;
  LinkModel link;                      // the link the plan was made for
  std::vector<PlannedTensor> tensors;  // backward order
  double predicted_iteration_s = 0;    // simulated, with the plan
  double baseline_uncompressed_s = 0;  // simulated, all "none"
};

// The plan file content for `plan` (one strategy per tensor of the simulator's profile).
Result<CompressionPlan> MakeCompressionPlan(const TimelineSimulator& sim,
                                            std::span<const TensorStrategy> plan,
                                            double predicted_iteration_s,
                                            double baseline_uncompressed_s);

std::string CompressionPlanToJson(const CompressionPlan& plan);
// `source` (a file name) prefixes errors.
Result<CompressionPlan> CompressionPlanFromJson(std::string_view text, std::string_view source);
Result<CompressionPlan> LoadCompressionPlan(const std::string& path);
Status SaveCompressionPlan(const std::string& path, const CompressionPlan& plan);

// The plan was made for these tensors (same names, element counts and order) and world size;
// errors name the first mismatch.
Status CheckPlanMatches(const CompressionPlan& plan, std::span<const TensorInfo> tensors,
                        int world_size);

}  // namespace loom::compress::planner
