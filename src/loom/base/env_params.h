// The table of environment variables loom reads, and a swappable view of the environment.
//
// Every variable loom reads is listed in KnownEnvParams() with its default and meaning (`loom env`
// prints the table), so nothing is read from the environment that the docs do not mention.
// Code reads variables through an Env, which tests replace with a map:
//
//   Env env = Env::FromMap({{"LOOM_RANK", "1"}, {"LOOM_WORLD_SIZE", "2"}});
//   LOOM_ASSIGN_OR_RETURN(int64_t rank, env.GetInt("LOOM_RANK"));
//
// Thread-safety: Env is immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom {

struct EnvParam {
  std::string_view name;
  std::string_view default_value;  // "" = unset
  std::string_view help;
};

std::span<const EnvParam> KnownEnvParams();

class Env {
 public:
  // Reads the process environment on each lookup.
  static Env Process();
  static Env FromMap(std::map<std::string, std::string> vars);

  // The variable's value, or nullopt when unset (or set to the empty string).
  std::optional<std::string> Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Integer value; error names the variable and the bad text. Missing: `fallback`, or an error
  // when fallback is nullopt.
  Result<int64_t> GetInt(std::string_view name,
                         std::optional<int64_t> fallback = std::nullopt) const;

 private:
  bool from_process_ = true;
  std::map<std::string, std::string, std::less<>> vars_;
};

}  // namespace loom
