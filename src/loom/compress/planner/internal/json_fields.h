// Typed field access for the planner's JSON readers (cost model, plan): every error names the
// object ("plan.tensors[3] 'h.0.attn'") and the field, and unknown keys are rejected so a typo
// is not silently ignored.
//
//   LOOM_RETURN_IF_ERROR(CheckKeys(j, where, {"a_s", "b_s"}));
//   LOOM_ASSIGN_OR_RETURN(double a, GetNumber(j, where, "a_s"));
//
// Internal to compress/planner (includes the full nlohmann header). Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "loom/base/status.h"

namespace loom::compress::planner::internal {

// `j` is an object whose keys are all in `allowed`.
Status CheckKeys(const nlohmann::json& j, const std::string& where,
                 std::initializer_list<const char*> allowed);
// The field must exist and have the type; the number getters also require a finite value >= 0.
Result<double> GetNumber(const nlohmann::json& j, const std::string& where, const char* key);
Result<int64_t> GetInt(const nlohmann::json& j, const std::string& where, const char* key);
Result<std::string> GetString(const nlohmann::json& j, const std::string& where, const char* key);
Result<bool> GetBool(const nlohmann::json& j, const std::string& where, const char* key);
// A required object or array field.
Result<const nlohmann::json*> GetObject(const nlohmann::json& j, const std::string& where,
                                        const char* key);
Result<const nlohmann::json*> GetArray(const nlohmann::json& j, const std::string& where,
                                       const char* key);

}  // namespace loom::compress::planner::internal
