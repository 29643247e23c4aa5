// Chrome-trace rendering of the simulator's event trace (nlohmann json stays out of headers).
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "loom/overlap/sim/simulator.h"

namespace loom::overlap {
namespace {

constexpr int kLinkTid = 1000;
constexpr int kReduceTid = 2000;

nlohmann::json Complete(std::string name, int tid, double start_s, double end_s,
                        nlohmann::json args) {
  return {{"name", std::move(name)},
          {"ph", "X"},
          {"pid", 0},
          {"tid", tid},
          {"ts", start_s * 1e6},
          {"dur", (end_s - start_s) * 1e6},
          {"args", std::move(args)}};
}

}  // namespace

std::string SimTraceToChromeJson(const SimTrace& trace, std::string_view process_name) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", std::string(process_name)}}}});
  // Pair starts with ends by (kind family, item index).
  std::map<std::pair<int, int>, const SimEvent*> open;
  for (const SimEvent& e : trace.events) {
    switch (e.kind) {
      case SimEventKind::kTileStart:
        open[{0, e.item}] = &e;
        break;
      case SimEventKind::kChunkSend:
        open[{1, e.item}] = &e;
        break;
      case SimEventKind::kReduceStart:
        open[{2, e.item}] = &e;
        break;
      case SimEventKind::kTileEnd: {
        auto it = open.find({0, e.item});
        if (it == open.end()) break;
        nlohmann::json args = {{"peer", e.peer}, {"waits_on", it->second->waits_on}};
        events.push_back(Complete("tile " + std::to_string(e.item),
                                  e.pool * 100 + std::max(0, e.worker), it->second->time_s,
                                  e.time_s, std::move(args)));
        open.erase(it);
        break;
      }
      case SimEventKind::kChunkArrive: {
        auto it = open.find({1, e.item});
        if (it == open.end()) break;
        events.push_back(Complete("chunk " + std::to_string(e.item), kLinkTid, it->second->time_s,
                                  e.time_s, {{"peer", e.peer}, {"bytes", e.bytes}}));
        open.erase(it);
        break;
      }
      case SimEventKind::kReduceEnd: {
        auto it = open.find({2, e.item});
        if (it == open.end()) break;
        events.push_back(Complete(
            "reduce " + std::to_string(e.item), kReduceTid + e.pool * 100 + std::max(0, e.worker),
            it->second->time_s, e.time_s, {{"peer", e.peer}, {"bytes", e.bytes}}));
        open.erase(it);
        break;
      }
    }
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

}  // namespace loom::overlap
