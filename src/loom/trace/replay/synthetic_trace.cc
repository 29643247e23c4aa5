#include "loom/trace/replay/synthetic_trace.h"

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom::trace::replay {

std::string SyntheticTraceJson(const dfg::Graph& graph, const ReplayResult& result) {
  using nlohmann::json;
  std::vector<char> critical(graph.nodes().size(), 0);
  for (const PathStep& s : result.critical_path.steps) critical[s.node] = 1;
  json events = json::array();
  const int ranks = std::max(1, graph.num_ranks());
  for (int r = 0; r < ranks; ++r) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(r) + " (replay)"}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", r},
                      {"tid", 1},
                      {"args", {{"name", "comm"}}}});
  }
  for (size_t v = 0; v < graph.nodes().size(); ++v) {
    const dfg::Node& n = graph.nodes()[v];
    const NodeTiming& t = result.timing[v];
    const bool comm = n.device >= 0 && graph.devices()[n.device].is_comm;
    json args = {{"kind", std::string(dfg::NodeKindName(n.kind))}, {"critical", critical[v] != 0}};
    if (n.bytes > 0) args["bytes"] = n.bytes;
    if (n.bucket >= 0) args["bucket"] = n.bucket;
    if (n.ring_step >= 0) args["ring_step"] = n.ring_step;
    events.push_back({{"ph", "X"},
                      {"cat", dfg::IsComm(n.kind) ? "comm" : "cpu_op"},
                      {"name", n.name},
                      {"pid", std::max(0, n.rank)},
                      {"tid", comm ? 1 : 0},
                      {"ts", t.start_ns / 1e3},
                      {"dur", (t.end_ns - t.start_ns) / 1e3},
                      {"args", args}});
  }
  int64_t flow = 1;
  for (const dfg::Edge& e : graph.edges()) {
    const dfg::Node& a = graph.nodes()[e.from];
    const dfg::Node& b = graph.nodes()[e.to];
    if (a.kind != dfg::NodeKind::kSend || b.kind != dfg::NodeKind::kRecv) continue;
    const NodeTiming& ta = result.timing[e.from];
    const NodeTiming& tb = result.timing[e.to];
    events.push_back({{"ph", "s"},
                      {"cat", "comm_flow"},
                      {"name", "SEND->RECV"},
                      {"id", flow},
                      {"pid", a.rank},
                      {"tid", 1},
                      {"ts", ta.start_ns / 1e3}});
    events.push_back({{"ph", "f"},
                      {"cat", "comm_flow"},
                      {"name", "SEND->RECV"},
                      {"id", flow},
                      {"pid", b.rank},
                      {"tid", 1},
                      {"ts", tb.start_ns / 1e3},
                      {"bp", "e"}});
    ++flow;
  }
  json doc = {{"schemaVersion", 1},
              {"traceName", "loom replay"},
              {"displayTimeUnit", "ms"},
              {"distributedInfo", {{"backend", "loom-replay"}, {"world_size", ranks}}},
              {"loom_replay", {{"iteration_ns", result.iteration_ns}}},
              {"traceEvents", events}};
  return doc.dump() + "\n";
}

Status WriteSyntheticTrace(const dfg::Graph& graph, const ReplayResult& result,
                           const std::string& path) {
  return WriteFileAtomic(path, SyntheticTraceJson(graph, result));
}

}  // namespace loom::trace::replay
