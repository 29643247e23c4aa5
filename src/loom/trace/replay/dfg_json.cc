#include "loom/trace/replay/dfg_json.h"

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom::trace::replay {

using nlohmann::json;

Result<std::string> DfgJson(const dfg::Graph& graph, const ReplayResult* replay,
                            const DfgJsonInfo& info) {
  if (!graph.finalized()) {
    return FailedPreconditionError("dfg json: the graph is not finalized (call Finalize)");
  }
  if (replay != nullptr && replay->timing.size() != graph.nodes().size()) {
    return InvalidArgumentError("dfg json: the replay has " +
                                std::to_string(replay->timing.size()) + " node timings for " +
                                std::to_string(graph.nodes().size()) + " nodes");
  }
  json devices = json::array();
  for (size_t d = 0; d < graph.devices().size(); ++d) {
    const dfg::Device& dev = graph.devices()[d];
    devices.push_back({{"id", d},
                       {"name", dev.name},
                       {"kind", dev.kind == dfg::DeviceKind::kSerial ? "serial" : "unbounded"},
                       {"rank", dev.rank},
                       {"is_comm", dev.is_comm},
                       {"gap_ns", dev.gap_ns}});
  }
  json links = json::array();
  for (size_t l = 0; l < graph.links().size(); ++l) {
    const dfg::Link& link = graph.links()[l];
    links.push_back({{"id", l},
                     {"name", link.name},
                     {"alpha_ns", link.alpha_ns},
                     {"ns_per_byte", link.ns_per_byte},
                     {"shared", link.shared},
                     {"burst_bytes", link.burst_bytes},
                     {"line_ns_per_byte", link.line_ns_per_byte}});
  }
  json nodes = json::array();
  for (size_t v = 0; v < graph.nodes().size(); ++v) {
    const dfg::Node& n = graph.nodes()[v];
    // The replayer's isolated work (replayer.cc Start): dur · ratio + the link's α-β time.
    const double link_ns =
        n.link >= 0 ? graph.links()[n.link].TimeNs(static_cast<double>(n.bytes)) : 0.0;
    json node = {{"id", v},
                 {"name", n.name},
                 {"kind", std::string(dfg::NodeKindName(n.kind))},
                 {"rank", n.rank},
                 {"device", n.device},
                 {"device_name", n.device >= 0 ? graph.devices()[n.device].name : ""},
                 {"duration_ns", n.dur_ns * n.ratio + link_ns},
                 {"dur_ns", n.dur_ns},
                 {"ratio", n.ratio},
                 {"link", n.link},
                 {"link_ns", link_ns},
                 {"bytes", n.bytes},
                 {"bucket", n.bucket},
                 {"ring_step", n.ring_step},
                 {"priority", n.priority},
                 {"release_ns", n.release_ns}};
    if (replay != nullptr) {
      node["loom_start_ns"] = replay->timing[v].start_ns;
      node["loom_end_ns"] = replay->timing[v].end_ns;
    }
    nodes.push_back(std::move(node));
  }
  json edges = json::array();
  for (const dfg::Edge& e : graph.edges()) {
    edges.push_back({{"from", e.from}, {"to", e.to}, {"gap_ns", e.gap_ns}});
  }
  json kappa = json::array();
  for (int r = 0; r < graph.num_ranks(); ++r) kappa.push_back(graph.kappa(r));
  json loom = json::object();
  if (replay != nullptr) loom["predicted_iteration_ns"] = replay->iteration_ns;
  if (info.measured_iteration_ns >= 0) loom["measured_iteration_ns"] = info.measured_iteration_ns;
  if (info.baseline_sum_ns >= 0) loom["baseline_sum_ns"] = info.baseline_sum_ns;
  if (info.baseline_overlap_ns >= 0) loom["baseline_overlap_ns"] = info.baseline_overlap_ns;
  json doc = {{"format", "loom-dfg"},
              {"version", 1},
              {"time_unit", "ns"},
              {"source", info.source},
              {"ranks", graph.num_ranks()},
              {"kappa", kappa},
              {"devices", devices},
              {"links", links},
              {"nodes", nodes},
              {"edges", edges},
              {"loom", loom}};
  return doc.dump(1) + "\n";
}

Status WriteDfgJson(const dfg::Graph& graph, const ReplayResult* replay, const DfgJsonInfo& info,
                    const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, DfgJson(graph, replay, info));
  return WriteFileAtomic(path, text);
}

}  // namespace loom::trace::replay
