// Global data-flow graph (dPRO's DFG) of one training iteration across all ranks: per rank the
// compute ops (FW, BW, UPDATE), per gradient bucket a Sync node and per ring step a SEND and a
// RECV node, data edges (with the measured gap to add) and the devices nodes execute on.
//
//   Graph g;
//   int c = g.AddDevice("rank0.compute", DeviceKind::kSerial, /*rank=*/0);
//   int fw = g.AddNode({.name = "FW.0", .kind = NodeKind::kForward, .rank = 0, .device = c,
//                       .dur_ns = 1000});
//   g.AddEdge(fw, bw, /*gap_ns=*/20);
//
// Devices: a serial device runs one node at a time (`rank.compute`, `rank.comm`); nodes waiting
// for it are ordered by priority. A link (Graph::links) is the network path a SEND travels: its
// work is alpha + bytes * ns_per_byte; on a *shared* link m concurrent flows each progress at
// 1/m of the rate (one bottleneck qdisc, e.g. a tbf on `lo`). Per rank, `kappa` > 1 slows that
// rank's compute while its comm device is busy (the CPU a comm thread steals).
//
// Thread-safety: a value type; concurrent const use is safe, mutation is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::trace::dfg {

enum class NodeKind : uint8_t {
  kForward,     // FW (also other main-thread work before the last backward)
  kBackward,    // BW (one piece of the backward pass, producing some gradients)
  kUpdate,      // optimizer step
  kSync,        // a bucket's collective becomes ready on a rank (dPRO Comm.<b>.Sync)
  kSend,        // one ring step's chunk sent to the next rank (priced by its link)
  kRecv,        // that chunk has arrived on the receiving rank
  kCompress,    // gradient encode before a compressed collective
  kDecompress,  // decode after it
  kOther,
};
std::string_view NodeKindName(NodeKind kind);
bool IsCompute(NodeKind kind);  // FW, BW, UPDATE, COMPRESS, DECOMPRESS, OTHER
bool IsComm(NodeKind kind);     // SYNC, SEND, RECV

// dPRO's queue priority: FW 0 < BW 2 < UPDATE 3 < comm 100 (lower runs first).
int DefaultPriority(NodeKind kind);

enum class DeviceKind : uint8_t {
  kSerial,     // one node at a time
  kUnbounded,  // any number at once (no contention)
};

struct Device {
  std::string name;  // "rank0.compute", "rank0.comm"
  DeviceKind kind = DeviceKind::kSerial;
  int rank = -1;         // owning rank (-1: none)
  bool is_comm = false;  // a comm device: makes its rank's compute slow down by kappa
  double gap_ns = 0;     // idle time added after each node on it (dPRO same-category gap)
};

// alpha-beta model of one network path: t(bytes) = alpha + bytes * ns_per_byte.
// With burst_bytes > 0 the path is a token bucket (a `tc tbf` link; see token_bucket.h):
// ns_per_byte is then the token rate, bytes covered by tokens go at line_ns_per_byte, the bucket
// is full at time 0 and the link's transfers queue FIFO; a SEND costs alpha plus its time in the
// bucket, which depends on what the link sent before (the replayer keeps the state). Only
// per-sender links (shared = false) are token buckets; a shared link ignores the burst.
struct Link {
  std::string name;
  double alpha_ns = 0;          // per-message latency
  double ns_per_byte = 0;       // 1/β (ns per byte); the token rate of a token bucket
  bool shared = false;          // m concurrent flows each get β/m
  double burst_bytes = 0;       // > 0: token bucket of this depth (default 0: α-β)
  double line_ns_per_byte = 0;  // token bucket: ns per byte while tokens last (default 0)
  bool token_bucket() const { return burst_bytes > 0 && !shared; }
  // α-β time (a token bucket's: from an empty bucket, i.e. all bytes at the token rate).
  double TimeNs(double bytes) const { return alpha_ns + bytes * ns_per_byte; }
};

struct Node {
  std::string name;  // dPRO-style long name, e.g. "rank0->BW.3", "rank1->Comm.2.SEND~>1"
  NodeKind kind = NodeKind::kOther;
  int rank = -1;
  int device = -1;        // index into Graph::devices(); -1 = no device (runs at once)
  double dur_ns = 0;      // isolated duration; for a node with a link, extra fixed cost
  int link = -1;          // SEND: index into Graph::links (work = dur + link time(bytes))
  int64_t bytes = 0;      // payload (SEND/RECV/Sync), gradient bytes (BW)
  int bucket = -1;        // SYNC/SEND/RECV/COMPRESS: bucket index
  int ring_step = -1;     // SEND/RECV
  int priority = 0;       // lower runs first on a shared queue (see DefaultPriority)
  double ratio = 1.0;     // dPRO delay ratio: isolated duration is dur_ns * ratio
  double release_ns = 0;  // not ready before this time (the step's head gap)
};

struct Edge {
  int from = 0;
  int to = 0;
  double gap_ns = 0;  // `to` is ready no earlier than from's end + gap
};

class Graph {
 public:
  int AddDevice(std::string name, DeviceKind kind, int rank, bool is_comm = false,
                double gap_ns = 0);
  int AddLink(Link link);
  int AddNode(Node node);  // fills priority from the kind when it is 0 and the kind is not FW
  void AddEdge(int from, int to, double gap_ns = 0);

  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<Device>& devices() const { return devices_; }
  std::vector<Device>& mutable_devices() { return devices_; }
  const std::vector<Link>& links() const { return links_; }
  std::vector<Link>& mutable_links() { return links_; }
  // Per-rank compute slowdown while the rank's comm device is busy (>= 1; default 1).
  double kappa(int rank) const;
  void set_kappa(int rank, double kappa);
  int num_ranks() const;  // 1 + the largest node rank

  // Outgoing / incoming edge indices per node (built lazily by Finalize()).
  const std::vector<std::vector<int>>& out_edges() const { return out_; }
  const std::vector<std::vector<int>>& in_edges() const { return in_; }
  // Builds adjacency and checks the graph: every index valid, durations finite and >= 0, no
  // cycle (kInvalidArgument naming a node on it). Call after the last Add*.
  Status Finalize();
  bool finalized() const { return finalized_; }

  // Nodes of a kind (convenience for passes and tests).
  std::vector<int> NodesOf(NodeKind kind, int rank = -1) const;

 private:
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<double> kappa_;
  std::vector<std::vector<int>> out_, in_;
  bool finalized_ = false;
};

}  // namespace loom::trace::dfg
