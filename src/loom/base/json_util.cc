#include "loom/base/json_util.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom {
using nlohmann::json;

Result<json> ParseJson(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(std::string(source) + ": invalid JSON at byte " +
                                std::to_string(e.byte) + ": " + e.what());
  }
}

Result<json> ReadJsonFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseJson(text, path);
}

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string TypeName(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

bool Compatible(const json& want, const json& got) {
  if (want.is_null()) return true;  // nullable key (e.g. "auto")
  if (want.is_number_integer() || want.is_number_unsigned()) {
    return got.is_number_integer() || got.is_number_unsigned() ||
           (got.is_number_float() && got.get<double>() == static_cast<int64_t>(got.get<double>()));
  }
  if (want.is_number_float()) return got.is_number();
  if (want.is_string()) return got.is_string();
  if (want.is_boolean()) return got.is_boolean();
  if (want.is_array()) return got.is_array();
  if (want.is_object()) return got.is_object();
  return false;
}

Status UnknownKey(const json& object, std::string_view path, std::string_view key,
                  std::string_view source) {
  std::string msg = std::string(source) + ": unknown key '" + std::string(path) + "'";
  std::string guess = ClosestKey(object, key);
  if (!guess.empty()) msg += " (did you mean '" + guess + "'?)";
  return InvalidArgumentError(msg);
}

Status MergeAt(json* base, const json& overlay, const std::string& prefix,
               std::string_view source) {
  if (!overlay.is_object()) {
    return InvalidArgumentError(std::string(source) + ": expected a JSON object" +
                                (prefix.empty() ? "" : " at '" + prefix + "'") + ", got " +
                                TypeName(overlay));
  }
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    auto found = base->find(it.key());
    if (found == base->end()) return UnknownKey(*base, path, it.key(), source);
    if (found->is_object() && !found->empty()) {
      LOOM_RETURN_IF_ERROR(MergeAt(&*found, it.value(), path, source));
      continue;
    }
    if (!Compatible(*found, it.value())) {
      return InvalidArgumentError(std::string(source) + ": key '" + path + "' expects " +
                                  TypeName(*found) + ", got " + TypeName(it.value()) + " (" +
                                  it.value().dump() + ")");
    }
    if (found->is_number_integer() && it.value().is_number_float()) {
      *found = static_cast<int64_t>(it.value().get<double>());
    } else {
      *found = it.value();
    }
  }
  return OkStatus();
}

Result<json> ParseScalarFor(const json& want, std::string_view key, std::string_view text) {
  auto bad = [&](const char* what) {
    return InvalidArgumentError("override '" + std::string(key) + "=" + std::string(text) +
                                "': expected " + what);
  };
  if (want.is_boolean()) {
    if (text == "true" || text == "1") return json(true);
    if (text == "false" || text == "0") return json(false);
    return bad("true or false");
  }
  if (want.is_number_integer() || want.is_number_unsigned()) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) return bad("an integer");
    return json(v);
  }
  if (want.is_number_float()) {
    std::string s(text);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') return bad("a number");
    return json(v);
  }
  if (want.is_string()) return json(std::string(text));
  // Arrays, objects and nullable keys take a JSON literal (a bare word becomes a string).
  auto parsed = ParseJson(text, "override '" + std::string(key) + "'");
  if (!parsed.ok()) {
    if (want.is_null()) return json(std::string(text));
    return parsed.status();
  }
  return parsed;
}

}  // namespace

Status MergeStrict(json* base, const json& overlay, std::string_view source) {
  return MergeAt(base, overlay, "", source);
}

Status ApplyOverride(json* base, std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgumentError("bad override '" + std::string(assignment) +
                                "': expected dotted.key=value");
  }
  std::string_view key = assignment.substr(0, eq);
  std::string_view text = assignment.substr(eq + 1);
  json* node = base;
  std::string walked;
  size_t pos = 0;
  for (;;) {
    size_t dot = key.find('.', pos);
    std::string part(key.substr(pos, dot == std::string_view::npos ? std::string_view::npos
                                                                    : dot - pos));
    std::string path = walked.empty() ? part : walked + "." + part;
    if (!node->is_object() || part.empty()) {
      return InvalidArgumentError("bad override '" + std::string(assignment) + "': '" + walked +
                                  "' is not a section");
    }
    auto it = node->find(part);
    if (it == node->end()) return UnknownKey(*node, path, part, "override");
    walked = path;
    node = &*it;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (node->is_object() && !node->empty()) {
    LOOM_ASSIGN_OR_RETURN(json obj, ParseJson(text, "override '" + std::string(key) + "'"));
    return MergeAt(node, obj, walked, "override");
  }
  LOOM_ASSIGN_OR_RETURN(json value, ParseScalarFor(*node, key, text));
  *node = std::move(value);
  return OkStatus();
}

std::string ClosestKey(const json& object, std::string_view key) {
  if (!object.is_object()) return "";
  std::string best;
  size_t best_d = std::max<size_t>(2, key.size() / 3) + 1;
  for (auto it = object.begin(); it != object.end(); ++it) {
    size_t d = EditDistance(key, it.key());
    if (d < best_d) {
      best_d = d;
      best = it.key();
    }
  }
  return best;
}

}  // namespace loom
