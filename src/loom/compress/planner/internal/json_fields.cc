#include "loom/compress/planner/internal/json_fields.h"

#include <cmath>

namespace loom::compress::planner::internal {
namespace {

Result<const nlohmann::json*> Field(const nlohmann::json& j, const std::string& where,
                                    const char* key) {
  if (!j.is_object()) return InvalidArgumentError(where + ": expected a JSON object");
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgumentError(where + ": missing field \"" + key + "\"");
  return &*it;
}

Status WrongType(const std::string& where, const char* key, const char* want,
                 const nlohmann::json& got) {
  return InvalidArgumentError(where + ": field \"" + key + "\" must be " + want + ", got " +
                              got.dump());
}

}  // namespace

Status CheckKeys(const nlohmann::json& j, const std::string& where,
                 std::initializer_list<const char*> allowed) {
  if (!j.is_object()) return InvalidArgumentError(where + ": expected a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* a : allowed) known |= key == a;
    if (!known) return InvalidArgumentError(where + ": unknown field \"" + key + "\"");
  }
  return OkStatus();
}

Result<double> GetNumber(const nlohmann::json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_number()) return WrongType(where, key, "a number", *v);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < 0) return WrongType(where, key, "a finite number >= 0", *v);
  return x;
}

Result<int64_t> GetInt(const nlohmann::json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_number_integer()) return WrongType(where, key, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return WrongType(where, key, "an integer below 2^63", *v);
  }
  return v->get<int64_t>();
}

Result<std::string> GetString(const nlohmann::json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_string()) return WrongType(where, key, "a string", *v);
  return v->get<std::string>();
}

Result<bool> GetBool(const nlohmann::json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_boolean()) return WrongType(where, key, "true or false", *v);
  return v->get<bool>();
}

Result<const nlohmann::json*> GetObject(const nlohmann::json& j, const std::string& where,
                                        const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_object()) return WrongType(where, key, "an object", *v);
  return v;
}

Result<const nlohmann::json*> GetArray(const nlohmann::json& j, const std::string& where,
                                       const char* key) {
  LOOM_ASSIGN_OR_RETURN(const nlohmann::json* v, Field(j, where, key));
  if (!v->is_array()) return WrongType(where, key, "an array", *v);
  return v;
}

}  // namespace loom::compress::planner::internal
