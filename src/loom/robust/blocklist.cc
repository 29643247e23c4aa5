#include "loom/robust/blocklist.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"

namespace loom::robust {

Result<std::unique_ptr<Blocklist>> Blocklist::Open(const std::string& path) {
  std::unique_ptr<Blocklist> bl(new Blocklist(path));
  std::ifstream in(path);
  if (!in) return bl;
  std::stringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json j = nlohmann::json::parse(text.str());
    for (const auto& e : j.at("machines")) {
      bl->entries_.push_back({e.at("machine").get<std::string>(), e.value("host", ""),
                              e.value("reason", ""), e.value("ts_ms", int64_t{0})});
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError("blocklist " + path + " is malformed: " + e.what());
  }
  return bl;
}

bool Blocklist::Contains(const std::string& machine) const {
  for (const auto& e : entries_) {
    if (e.machine == machine) return true;
  }
  return false;
}

Status Blocklist::Add(const std::string& machine, const std::string& host,
                      const std::string& reason) {
  if (Contains(machine)) return OkStatus();
  entries_.push_back({machine, host, reason, WallNanos() / 1000000});
  nlohmann::json j;
  j["machines"] = nlohmann::json::array();
  for (const auto& e : entries_) {
    j["machines"].push_back(
        {{"machine", e.machine}, {"host", e.host}, {"reason", e.reason}, {"ts_ms", e.ts_ms}});
  }
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) return InternalError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    return InternalError("cannot rename " + tmp + " to " + path_);
  }
  return OkStatus();
}

}  // namespace loom::robust
