#include "loom/robust/heartbeat.h"

#include <nlohmann/json.hpp>

namespace loom::robust {

std::string EncodeHeartbeat(const Heartbeat& hb) {
  nlohmann::json j = {{"type", "heartbeat"},
                      {"machine", hb.machine},
                      {"ts_ms", hb.ts_ms},
                      {"attempt", hb.attempt},
                      {"rank", hb.rank},
                      {"pid", hb.pid},
                      {"state", std::string(1, hb.state)},
                      {"cpu_rate", hb.cpu_rate},
                      {"step", hb.step},
                      {"step_time_s", hb.step_time_s},
                      {"compute_s", hb.compute_s},
                      {"last_coll_seq", hb.last_coll_seq},
                      {"last_coll_op", hb.last_coll_op},
                      {"coll_bytes", hb.coll_bytes},
                      {"app_age_ms", hb.app_age_ms},
                      {"log_hits", hb.log_hits}};
  return j.dump();
}

Result<Heartbeat> ParseHeartbeat(std::string_view json_line) {
  nlohmann::json j = nlohmann::json::parse(json_line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("heartbeat is not a JSON object: " +
                                std::string(json_line.substr(0, 80)));
  }
  Heartbeat hb;
  try {
    hb.machine = j.at("machine").get<std::string>();
    hb.ts_ms = j.at("ts_ms").get<int64_t>();
    hb.attempt = j.at("attempt").get<int>();
    hb.rank = j.at("rank").get<int>();
    hb.pid = j.at("pid").get<int>();
    std::string state = j.at("state").get<std::string>();
    if (state.size() != 1) return InvalidArgumentError("heartbeat field 'state' must be 1 char");
    hb.state = state[0];
    hb.cpu_rate = j.at("cpu_rate").get<double>();
    hb.step = j.at("step").get<int64_t>();
    hb.step_time_s = j.at("step_time_s").get<double>();
    hb.compute_s = j.at("compute_s").get<double>();
    hb.last_coll_seq = j.at("last_coll_seq").get<int64_t>();
    hb.last_coll_op = j.at("last_coll_op").get<std::string>();
    hb.coll_bytes = j.at("coll_bytes").get<int64_t>();
    hb.app_age_ms = j.at("app_age_ms").get<int64_t>();
    hb.log_hits = j.at("log_hits").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("heartbeat from '") + hb.machine + "': " + e.what());
  }
  return hb;
}

}  // namespace loom::robust
