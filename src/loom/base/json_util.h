// JSON helpers shared by every config and metadata reader.
//
// Configs are JSON objects whose defaults list every key. User input (a config file, then
// dotted `key=value` overrides) is merged *strictly*: an unknown key or a value of the wrong type
// is an error naming the key path and, where it can, the closest known key:
//
//   nlohmann::json cfg = Defaults();
//   LOOM_RETURN_IF_ERROR(MergeStrict(&cfg, user_file_json, "config.json"));
//   LOOM_RETURN_IF_ERROR(ApplyOverride(&cfg, "model.n_layers=8"));
//
// The public header only needs nlohmann/json_fwd.hpp.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"

namespace loom {

// Parses `text`; errors name `source` (a file name or "--config") and the byte offset.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view source);
Result<nlohmann::json> ReadJsonFile(const std::string& path);

// Recursively writes `overlay`'s values into `base`. Every key of overlay must exist in base
// and have a compatible type (integer <- integer, float <- any number, string, bool, array,
// object recursively). `source` prefixes error messages.
Status MergeStrict(nlohmann::json* base, const nlohmann::json& overlay, std::string_view source);

// Applies one "dotted.key=value" override. The value is parsed by the existing key's type
// (bool: true/false/1/0; integer; float; string verbatim; arrays/objects as JSON).
Status ApplyOverride(nlohmann::json* base, std::string_view assignment);

// The known key closest to `key` by edit distance, or "" when nothing is close.
std::string ClosestKey(const nlohmann::json& object, std::string_view key);

}  // namespace loom
