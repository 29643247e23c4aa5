// JSON form of CostModel (seconds, bytes, elements):
//
//   {"world_size": 4, "collective": "allreduce" | "reduce_scatter",
//    "links": [{"name": "dp", "alpha_s": 1.5e-4, "beta_s_per_byte": 8e-9}],
//    "codecs": [{"spec": "int8:g128", "encode": {"a_s": 2e-5, "b_s": 1.8e-9},
//                "decode": {"a_s": 1e-5, "b_s": 3e-10}, "bits_per_element": 8.25,
//                "header_bytes": 32, "summable": false, "error_feedback": false}, ...]}
//
// Every field is required (the file is written by SaveCostModelJson or by the trainer's
// calibration); unknown fields are errors.
#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"
#include "loom/compress/planner/cost_model.h"
#include "loom/compress/planner/internal/json_fields.h"

namespace loom::compress::planner {
namespace {

using internal::CheckKeys;
using internal::GetArray;
using internal::GetBool;
using internal::GetInt;
using internal::GetNumber;
using internal::GetObject;
using internal::GetString;
using nlohmann::json;

json LinearToJson(const LinearCost& c) { return {{"a_s", c.a_s}, {"b_s", c.b_s}}; }

Result<LinearCost> LinearFromJson(const json& parent, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const json* j, GetObject(parent, where, key));
  const std::string w = where + "." + key;
  LOOM_RETURN_IF_ERROR(CheckKeys(*j, w, {"a_s", "b_s"}));
  LinearCost c;
  LOOM_ASSIGN_OR_RETURN(c.a_s, GetNumber(*j, w, "a_s"));
  LOOM_ASSIGN_OR_RETURN(c.b_s, GetNumber(*j, w, "b_s"));
  return c;
}

Result<CodecCost> CodecFromJson(const json& j, const std::string& where) {
  LOOM_RETURN_IF_ERROR(CheckKeys(j, where,
                                 {"spec", "encode", "decode", "bits_per_element", "header_bytes",
                                  "summable", "error_feedback"}));
  CodecCost c;
  LOOM_ASSIGN_OR_RETURN(c.spec, GetString(j, where, "spec"));
  const std::string w = where + " '" + c.spec + "'";
  LOOM_ASSIGN_OR_RETURN(c.encode, LinearFromJson(j, w, "encode"));
  LOOM_ASSIGN_OR_RETURN(c.decode, LinearFromJson(j, w, "decode"));
  LOOM_ASSIGN_OR_RETURN(c.bits_per_element, GetNumber(j, w, "bits_per_element"));
  LOOM_ASSIGN_OR_RETURN(c.header_bytes, GetInt(j, w, "header_bytes"));
  LOOM_ASSIGN_OR_RETURN(c.summable, GetBool(j, w, "summable"));
  LOOM_ASSIGN_OR_RETURN(c.error_feedback, GetBool(j, w, "error_feedback"));
  return c;
}

}  // namespace

std::string SaveCostModelJson(const CostModel& m) {
  json links = json::array();
  for (const LinkModel& l : m.links) {
    links.push_back(
        {{"name", l.name}, {"alpha_s", l.alpha_s}, {"beta_s_per_byte", l.beta_s_per_byte}});
  }
  json codecs = json::array();
  for (const CodecCost& c : m.codecs) {
    codecs.push_back({{"spec", c.spec},
                      {"encode", LinearToJson(c.encode)},
                      {"decode", LinearToJson(c.decode)},
                      {"bits_per_element", c.bits_per_element},
                      {"header_bytes", c.header_bytes},
                      {"summable", c.summable},
                      {"error_feedback", c.error_feedback}});
  }
  json j = {
      {"world_size", m.world_size},
      {"collective", m.collective == GradCollective::kAllReduce ? "allreduce" : "reduce_scatter"},
      {"links", links},
      {"codecs", codecs}};
  return j.dump(2) + "\n";
}

Result<CostModel> LoadCostModelJson(std::string_view text, std::string_view source) {
  LOOM_ASSIGN_OR_RETURN(json j, ParseJson(text, source));
  const std::string where = "cost model " + std::string(source);
  LOOM_RETURN_IF_ERROR(CheckKeys(j, where, {"world_size", "collective", "links", "codecs"}));
  CostModel m;
  LOOM_ASSIGN_OR_RETURN(int64_t world, GetInt(j, where, "world_size"));
  if (world < 1 || world > (int64_t{1} << 24)) {
    return InvalidArgumentError(where + ": world_size must be in [1, 2^24], got " +
                                std::to_string(world));
  }
  m.world_size = static_cast<int>(world);
  LOOM_ASSIGN_OR_RETURN(std::string collective, GetString(j, where, "collective"));
  if (collective == "allreduce") {
    m.collective = GradCollective::kAllReduce;
  } else if (collective == "reduce_scatter") {
    m.collective = GradCollective::kReduceScatter;
  } else {
    return InvalidArgumentError(where +
                                ": collective must be \"allreduce\" or "
                                "\"reduce_scatter\", got \"" +
                                collective + "\"");
  }
  LOOM_ASSIGN_OR_RETURN(const json* links, GetArray(j, where, "links"));
  m.links.clear();
  for (size_t i = 0; i < links->size(); ++i) {
    const std::string w = where + ".links[" + std::to_string(i) + "]";
    const json& l = (*links)[i];
    LOOM_RETURN_IF_ERROR(CheckKeys(l, w, {"name", "alpha_s", "beta_s_per_byte"}));
    LinkModel link;
    LOOM_ASSIGN_OR_RETURN(link.name, GetString(l, w, "name"));
    LOOM_ASSIGN_OR_RETURN(link.alpha_s, GetNumber(l, w, "alpha_s"));
    LOOM_ASSIGN_OR_RETURN(link.beta_s_per_byte, GetNumber(l, w, "beta_s_per_byte"));
    m.links.push_back(link);
  }
  LOOM_ASSIGN_OR_RETURN(const json* codecs, GetArray(j, where, "codecs"));
  for (size_t i = 0; i < codecs->size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(
        CodecCost c, CodecFromJson((*codecs)[i], where + ".codecs[" + std::to_string(i) + "]"));
    m.codecs.push_back(std::move(c));
  }
  LOOM_RETURN_IF_ERROR(m.Validate().WithContext(std::string(source)));
  return m;
}

}  // namespace loom::compress::planner
