#include "loom/trace/dfg/dfg.h"

#include <algorithm>
#include <cmath>

namespace loom::trace::dfg {

std::string_view NodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kForward:
      return "FW";
    case NodeKind::kBackward:
      return "BW";
    case NodeKind::kUpdate:
      return "UPDATE";
    case NodeKind::kSync:
      return "SYNC";
    case NodeKind::kSend:
      return "SEND";
    case NodeKind::kRecv:
      return "RECV";
    case NodeKind::kCompress:
      return "COMPRESS";
    case NodeKind::kDecompress:
      return "DECOMPRESS";
    case NodeKind::kOther:
      return "OTHER";
  }
  return "?";
}

bool IsComm(NodeKind kind) {
  return kind == NodeKind::kSync || kind == NodeKind::kSend || kind == NodeKind::kRecv;
}
bool IsCompute(NodeKind kind) { return !IsComm(kind); }

int DefaultPriority(NodeKind kind) {
  switch (kind) {
    case NodeKind::kForward:
      return 0;
    case NodeKind::kOther:
      return 1;
    case NodeKind::kBackward:
      return 2;
    case NodeKind::kUpdate:
      return 3;
    case NodeKind::kCompress:
    case NodeKind::kDecompress:
      return 2;
    default:
      return 100;
  }
}

int Graph::AddDevice(std::string name, DeviceKind kind, int rank, bool is_comm, double gap_ns) {
  devices_.push_back({std::move(name), kind, rank, is_comm, gap_ns});
  finalized_ = false;
  return static_cast<int>(devices_.size()) - 1;
}

int Graph::AddLink(Link link) {
  links_.push_back(std::move(link));
  return static_cast<int>(links_.size()) - 1;
}

int Graph::AddNode(Node node) {
  if (node.priority == 0 && node.kind != NodeKind::kForward) {
    node.priority = DefaultPriority(node.kind);
  }
  nodes_.push_back(std::move(node));
  finalized_ = false;
  return static_cast<int>(nodes_.size()) - 1;
}

void Graph::AddEdge(int from, int to, double gap_ns) {
  edges_.push_back({from, to, gap_ns});
  finalized_ = false;
}

double Graph::kappa(int rank) const {
  return rank >= 0 && rank < static_cast<int>(kappa_.size()) ? kappa_[rank] : 1.0;
}

void Graph::set_kappa(int rank, double kappa) {
  if (rank >= static_cast<int>(kappa_.size())) kappa_.resize(rank + 1, 1.0);
  kappa_[rank] = kappa;
}

int Graph::num_ranks() const {
  int r = 0;
  for (const Node& n : nodes_) r = std::max(r, n.rank + 1);
  return r;
}

std::vector<int> Graph::NodesOf(NodeKind kind, int rank) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == kind && (rank < 0 || nodes_[i].rank == rank)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

Status Graph::Finalize() {
  const int n = static_cast<int>(nodes_.size());
  out_.assign(n, {});
  in_.assign(n, {});
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& v = nodes_[i];
    if (v.device >= static_cast<int>(devices_.size()) ||
        v.link >= static_cast<int>(links_.size())) {
      return InvalidArgumentError("DFG node '" + v.name + "': device or link index out of range");
    }
    if (!std::isfinite(v.dur_ns) || v.dur_ns < 0 || !std::isfinite(v.ratio) || v.ratio < 0) {
      return InvalidArgumentError("DFG node '" + v.name + "': duration " +
                                  std::to_string(v.dur_ns) + " ns x ratio " +
                                  std::to_string(v.ratio) + " is not a finite value >= 0");
    }
  }
  for (const Link& l : links_) {
    if (!std::isfinite(l.alpha_ns) || !std::isfinite(l.ns_per_byte) || l.alpha_ns < 0 ||
        l.ns_per_byte < 0 || !std::isfinite(l.burst_bytes) || l.burst_bytes < 0 ||
        !std::isfinite(l.line_ns_per_byte) || l.line_ns_per_byte < 0) {
      return InvalidArgumentError("DFG link '" + l.name +
                                  "': alpha/beta/burst must be finite and >= 0");
    }
  }
  for (size_t e = 0; e < edges_.size(); ++e) {
    const Edge& ed = edges_[e];
    if (ed.from < 0 || ed.from >= n || ed.to < 0 || ed.to >= n || ed.from == ed.to) {
      return InvalidArgumentError("DFG edge " + std::to_string(ed.from) + " -> " +
                                  std::to_string(ed.to) + " is out of range or a self loop");
    }
    if (!std::isfinite(ed.gap_ns)) return InvalidArgumentError("DFG edge gap is not finite");
    out_[ed.from].push_back(static_cast<int>(e));
    in_[ed.to].push_back(static_cast<int>(e));
  }
  // Kahn's algorithm: a node never reached lies on (or behind) a cycle.
  std::vector<int> indeg(n), queue;
  for (int v = 0; v < n; ++v) {
    indeg[v] = static_cast<int>(in_[v].size());
    if (indeg[v] == 0) queue.push_back(v);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    for (int e : out_[queue[head]]) {
      if (--indeg[edges_[e].to] == 0) queue.push_back(edges_[e].to);
    }
  }
  if (static_cast<int>(queue.size()) != n) {
    for (int v = 0; v < n; ++v) {
      if (indeg[v] > 0) {
        return InvalidArgumentError("DFG has a cycle through node '" + nodes_[v].name + "'");
      }
    }
  }
  finalized_ = true;
  return OkStatus();
}

}  // namespace loom::trace::dfg
