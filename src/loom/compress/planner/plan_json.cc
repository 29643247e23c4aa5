#include "loom/compress/planner/plan_json.h"

#include <nlohmann/json.hpp>
#include <set>

#include "loom/base/file_util.h"
#include "loom/base/json_util.h"
#include "loom/compress/codec_spec.h"
#include "loom/compress/planner/internal/json_fields.h"

namespace loom::compress::planner {
namespace {

using internal::CheckKeys;
using internal::GetArray;
using internal::GetInt;
using internal::GetNumber;
using internal::GetObject;
using internal::GetString;
using nlohmann::json;

Result<PlannedTensor> TensorFromJson(const json& j, const std::string& where) {
  LOOM_RETURN_IF_ERROR(CheckKeys(j, where, {"name", "elements", "codec", "encode_on"}));
  PlannedTensor t;
  LOOM_ASSIGN_OR_RETURN(t.name, GetString(j, where, "name"));
  if (t.name.empty()) return InvalidArgumentError(where + ": empty \"name\"");
  const std::string w = where + " '" + t.name + "'";
  LOOM_ASSIGN_OR_RETURN(t.elements, GetInt(j, w, "elements"));
  if (t.elements <= 0) return InvalidArgumentError(w + ": \"elements\" must be > 0");
  LOOM_ASSIGN_OR_RETURN(std::string codec, GetString(j, w, "codec"));
  Result<CodecSpec> spec = ParseCodecSpec(codec);
  if (!spec.ok()) return spec.status().WithContext(w + ": codec '" + codec + "'");
  t.codec = spec->ToString();
  LOOM_ASSIGN_OR_RETURN(std::string on, GetString(j, w, "encode_on"));
  for (Placement p : {Placement::kCompute, Placement::kOffload, Placement::kLink}) {
    if (on == PlacementName(p)) {
      t.encode_on = p;
      return t;
    }
  }
  return InvalidArgumentError(
      w + ": \"encode_on\" must be \"compute\", \"offload\" or \"link\", got \"" + on + "\"");
}

}  // namespace

Result<CompressionPlan> MakeCompressionPlan(const TimelineSimulator& sim,
                                            std::span<const TensorStrategy> plan,
                                            double predicted_iteration_s,
                                            double baseline_uncompressed_s) {
  LOOM_RETURN_IF_ERROR(sim.Run(plan).status());  // sizes and codec indices
  const CostModel& m = sim.model();
  CompressionPlan p;
  p.world_size = m.world_size;
  p.link = m.links.front();
  p.predicted_iteration_s = predicted_iteration_s;
  p.baseline_uncompressed_s = baseline_uncompressed_s;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorInfo& t = sim.profile().tensors[i];
    LOOM_ASSIGN_OR_RETURN(CodecSpec spec, ParseCodecSpec(m.codecs[plan[i].codec].spec));
    const bool none = spec.kind == CodecKind::kNone;
    p.tensors.push_back(
        {t.name, t.elements, spec.ToString(), none ? Placement::kCompute : plan[i].placement});
  }
  return p;
}

std::string CompressionPlanToJson(const CompressionPlan& plan) {
  json tensors = json::array();
  for (const PlannedTensor& t : plan.tensors) {
    tensors.push_back({{"name", t.name},
                       {"elements", t.elements},
                       {"codec", t.codec},
                       {"encode_on", PlacementName(t.encode_on)}});
  }
  json j = {{"version", CompressionPlan::kVersion},
            {"world_size", plan.world_size},
            {"link",
             {{"name", plan.link.name},
              {"alpha_s", plan.link.alpha_s},
              {"beta_s_per_byte", plan.link.beta_s_per_byte}}},
            {"tensors", tensors},
            {"predicted_iteration_s", plan.predicted_iteration_s},
            {"baseline_uncompressed_s", plan.baseline_uncompressed_s}};
  return j.dump(2) + "\n";
}

Result<CompressionPlan> CompressionPlanFromJson(std::string_view text, std::string_view source) {
  LOOM_ASSIGN_OR_RETURN(json j, ParseJson(text, source));
  const std::string where(source);
  LOOM_RETURN_IF_ERROR(CheckKeys(j, where,
                                 {"version", "world_size", "link", "tensors",
                                  "predicted_iteration_s", "baseline_uncompressed_s"}));
  LOOM_ASSIGN_OR_RETURN(int64_t version, GetInt(j, where, "version"));
  if (version != CompressionPlan::kVersion) {
    return InvalidArgumentError(where + ": unsupported \"version\" " + std::to_string(version) +
                                " (this build reads version 1)");
  }
  CompressionPlan p;
  LOOM_ASSIGN_OR_RETURN(int64_t world, GetInt(j, where, "world_size"));
  if (world < 1 || world > (int64_t{1} << 24)) {
    return InvalidArgumentError(where + ": \"world_size\" must be in [1, 2^24], got " +
                                std::to_string(world));
  }
  p.world_size = static_cast<int>(world);
  LOOM_ASSIGN_OR_RETURN(const json* link, GetObject(j, where, "link"));
  const std::string lw = where + ": link";
  LOOM_RETURN_IF_ERROR(CheckKeys(*link, lw, {"name", "alpha_s", "beta_s_per_byte"}));
  LOOM_ASSIGN_OR_RETURN(p.link.name, GetString(*link, lw, "name"));
  LOOM_ASSIGN_OR_RETURN(p.link.alpha_s, GetNumber(*link, lw, "alpha_s"));
  LOOM_ASSIGN_OR_RETURN(p.link.beta_s_per_byte, GetNumber(*link, lw, "beta_s_per_byte"));
  LOOM_ASSIGN_OR_RETURN(const json* tensors, GetArray(j, where, "tensors"));
  std::set<std::string> names;
  for (size_t i = 0; i < tensors->size(); ++i) {
    const std::string tw = where + ": tensors[" + std::to_string(i) + "]";
    LOOM_ASSIGN_OR_RETURN(PlannedTensor t, TensorFromJson((*tensors)[i], tw));
    if (!names.insert(t.name).second) {
      return InvalidArgumentError(tw + " '" + t.name + "': duplicate tensor name");
    }
    p.tensors.push_back(std::move(t));
  }
  LOOM_ASSIGN_OR_RETURN(p.predicted_iteration_s, GetNumber(j, where, "predicted_iteration_s"));
  LOOM_ASSIGN_OR_RETURN(p.baseline_uncompressed_s, GetNumber(j, where, "baseline_uncompressed_s"));
  return p;
}

Result<CompressionPlan> LoadCompressionPlan(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return CompressionPlanFromJson(text, path);
}

Status SaveCompressionPlan(const std::string& path, const CompressionPlan& plan) {
  return WriteFileAtomic(path, CompressionPlanToJson(plan));
}

Status CheckPlanMatches(const CompressionPlan& plan, std::span<const TensorInfo> tensors,
                        int world_size) {
  if (plan.world_size != world_size) {
    return FailedPreconditionError("compression plan: made for world_size " +
                                   std::to_string(plan.world_size) + ", running with " +
                                   std::to_string(world_size));
  }
  if (plan.tensors.size() != tensors.size()) {
    return FailedPreconditionError("compression plan: has " + std::to_string(plan.tensors.size()) +
                                   " tensors, the model has " + std::to_string(tensors.size()));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlannedTensor& p = plan.tensors[i];
    if (p.name != tensors[i].name || p.elements != tensors[i].elements) {
      return FailedPreconditionError("compression plan: tensor " + std::to_string(i) + " is '" +
                                     p.name + "' (" + std::to_string(p.elements) +
                                     " elements), the model's is '" + tensors[i].name + "' (" +
                                     std::to_string(tensors[i].elements) + " elements)");
    }
  }
  return OkStatus();
}

}  // namespace loom::compress::planner
