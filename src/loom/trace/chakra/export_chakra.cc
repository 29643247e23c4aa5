#include "loom/trace/chakra/export_chakra.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace loom::trace::chakra {
namespace {

using ingest::CollectiveOp;
using ingest::EventKind;
using ingest::RankTrace;
using ingest::TraceEvent;

// (op, group, seq): the identity of one collective on a rank.
using CommKey = std::tuple<int, uint32_t, int64_t>;
CommKey KeyOf(const TraceEvent& e) { return {static_cast<int>(e.op), e.group, e.seq}; }

bool IsP2P(EventKind k) { return k == EventKind::kSend || k == EventKind::kRecv; }
uint32_t KindBit(EventKind k) {
  return k == EventKind::kOther ? 0u : 1u << static_cast<unsigned>(k);
}

// What becomes one Chakra node: a whole event or a segment of a split one.
struct Item {
  size_t event = 0;                    // index into RankTrace::events
  EventKind kind = EventKind::kOther;  // effective kind (unclassified ops inherit their parent's)
  int64_t ts_ns = 0;
  int64_t end_ns = 0;
  int segment = -1;  // >= 0: "<name>#<segment>"
};

// Per-lane nesting forest and the selection of exported items.
class Selector {
 public:
  Selector(const RankTrace& t, const ChakraOptions& o) : t_(t), o_(o) {}

  std::vector<Item> Run() {
    const auto& ev = t_.events;
    children_.assign(ev.size(), {});
    comm_below_.assign(ev.size(), false);
    kinds_below_.assign(ev.size(), 0);
    for (const TraceEvent& e : ev) {
      if (e.seq == ingest::kUnknown) continue;
      if (IsP2P(e.kind)) p2p_keys_.insert(KeyOf(e));
      if (e.kind == EventKind::kComm) coll_keys_.insert(KeyOf(e));
    }
    // Nesting per lane; events are sorted by (ts, -dur), so a parent precedes its children.
    std::map<int32_t, std::vector<size_t>> stacks;
    std::vector<int64_t> parent(ev.size(), -1);
    for (size_t i = 0; i < ev.size(); ++i) {
      std::vector<size_t>& st = stacks[ev[i].lane];
      while (!st.empty() &&
             !(ev[i].ts_ns >= ev[st.back()].ts_ns && ev[i].end_ns() <= ev[st.back()].end_ns())) {
        st.pop_back();
      }
      if (st.empty()) {
        roots_.push_back(i);
      } else {
        parent[i] = static_cast<int64_t>(st.back());
        children_[st.back()].push_back(i);
      }
      st.push_back(i);
    }
    folded_.assign(ev.size(), false);
    for (size_t i = 0; i < ev.size(); ++i) {
      if (!IsP2P(ev[i].kind) || o_.granularity != CommGranularity::kCollective) continue;
      bool under_coll = ev[i].seq != ingest::kUnknown && coll_keys_.count(KeyOf(ev[i])) > 0;
      for (int64_t p = parent[i]; p >= 0 && !under_coll; p = parent[p]) {
        under_coll = ev[p].kind == EventKind::kComm;
      }
      folded_[i] = under_coll;
    }
    // Children have larger indices than parents: one reverse pass fills the subtree summaries.
    for (size_t i = ev.size(); i-- > 0;) {
      for (size_t c : children_[i]) {
        comm_below_[i] = comm_below_[i] || comm_below_[c] || CommSignificant(c);
        kinds_below_[i] |= kinds_below_[c] | KindBit(ev[c].kind);
      }
    }
    for (size_t r : roots_) Visit(r, EventKind::kOther);
    return std::move(items_);
  }

 private:
  bool CommSignificant(size_t i) const {
    const TraceEvent& e = t_.events[i];
    return e.kind == EventKind::kComm || (IsP2P(e.kind) && !folded_[i]);
  }
  bool CollDropped(size_t i) const {
    if (o_.granularity != CommGranularity::kPointToPoint) return false;
    const TraceEvent& e = t_.events[i];
    return comm_below_[i] || (e.seq != ingest::kUnknown && p2p_keys_.count(KeyOf(e)) > 0);
  }
  // Whether the subtree of `i` holds something that must not be folded into compute of kind k.
  bool Significant(size_t i, EventKind k) const {
    const EventKind own = t_.events[i].kind;
    if (CommSignificant(i) || comm_below_[i]) return true;
    if (own == EventKind::kCommEnqueue || own == EventKind::kStep) return false;
    return ((KindBit(own) | kinds_below_[i]) & ~KindBit(k) & ~KindBit(EventKind::kCommEnqueue) &
            ~KindBit(EventKind::kStep)) != 0;
  }
  void Emit(size_t i, EventKind kind, int64_t ts, int64_t end, int segment) {
    items_.push_back(Item{i, kind, ts, end, segment});
  }

  // `inherited`: kind of the nearest classified compute ancestor (kOther at top level).
  void Visit(size_t i, EventKind inherited) {
    const TraceEvent& e = t_.events[i];
    switch (e.kind) {
      case EventKind::kStep:
        for (size_t c : children_[i]) Visit(c, inherited);
        return;
      case EventKind::kSend:
      case EventKind::kRecv:
        if (!folded_[i]) Emit(i, e.kind, e.ts_ns, e.end_ns(), -1);
        return;
      case EventKind::kComm:
        if (!CollDropped(i)) {
          Emit(i, e.kind, e.ts_ns, e.end_ns(), -1);
          return;
        }
        for (size_t c : children_[i]) Visit(c, inherited);
        return;
      case EventKind::kCommEnqueue:
        Emit(i, e.kind, e.ts_ns, e.end_ns(), -1);
        return;
      default:
        break;
    }
    const EventKind kind = e.kind == EventKind::kOther ? inherited : e.kind;
    std::vector<size_t> split;
    for (size_t c : children_[i]) {
      if (Significant(c, kind)) split.push_back(c);
    }
    if (split.empty()) {
      Emit(i, kind, e.ts_ns, e.end_ns(), -1);
      return;
    }
    // Own time between the significant children becomes segments of this span's kind.
    int64_t at = e.ts_ns;
    int segment = 0;
    for (size_t c : split) {
      const TraceEvent& ce = t_.events[c];
      if (ce.ts_ns > at) Emit(i, kind, at, ce.ts_ns, segment++);
      Visit(c, kind);
      at = std::max(at, ce.end_ns());
    }
    if (e.end_ns() > at) Emit(i, kind, at, e.end_ns(), segment++);
  }

  const RankTrace& t_;
  const ChakraOptions& o_;
  std::vector<std::vector<size_t>> children_;
  std::vector<size_t> roots_;
  std::vector<bool> comm_below_;
  std::vector<uint32_t> kinds_below_;
  std::vector<bool> folded_;
  std::set<CommKey> p2p_keys_;
  std::set<CommKey> coll_keys_;
  std::vector<Item> items_;
};

// FNV-1a: a tag both ranks derive from the shared part of "SEND.<op>.<seq>~>..." names.
int32_t StableTag(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return static_cast<int32_t>(h & 0x7fffffff);
}

// ASTRA-sim parses pg_name with std::stoi as a communicator-group id: only numeric names go there.
void AddGroupAttr(const RankTrace& t, const TraceEvent& e, std::vector<Attr>* attrs) {
  const std::string_view g = t.GroupName(e);
  const bool numeric =
      !g.empty() && std::all_of(g.begin(), g.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) {
    attrs->push_back({"pg_name", std::string(g)});
  } else {
    attrs->push_back({"loom_pg_name", g.empty() ? std::string("default") : std::string(g)});
  }
}

// Chakra's comm_size of a collective: the per-rank input. loom's own traces record an
// all-gather's gathered output, i.e. world_size times the input.
int64_t CollectiveCommSize(const RankTrace& t, const TraceEvent& e) {
  if (e.bytes == ingest::kUnknown) return 0;
  if (t.dialect == ingest::Dialect::kLoom && e.op == CollectiveOp::kAllGather && t.world_size > 1) {
    return e.bytes / t.world_size;
  }
  return e.bytes;
}

// loom's trainer and dPRO's DFG treat unclassified "wait*" spans as blocking waits.
bool IsWaitSpan(const RankTrace& t, const Item& it) {
  const TraceEvent& e = t.events[it.event];
  return it.kind == EventKind::kOther && e.kind == EventKind::kOther &&
         t.Name(e).substr(0, 4) == "wait";
}

Node MakeNode(const RankTrace& t, const Item& it, const ChakraOptions& o, int64_t origin) {
  const TraceEvent& e = t.events[it.event];
  Node n;
  n.name = std::string(t.Name(e));
  if (it.segment >= 0) n.name.append("#").append(std::to_string(it.segment));
  n.start_time_micros = static_cast<uint64_t>(std::max<int64_t>(0, (it.ts_ns - origin) / 1000));
  n.duration_micros = static_cast<uint64_t>((it.end_ns - it.ts_ns + 500) / 1000);
  const std::optional<CommType> comm_type = ToChakraCommType(e.op);
  const int64_t bytes = e.bytes == ingest::kUnknown ? 0 : e.bytes;
  if (it.kind == EventKind::kComm && comm_type) {
    n.type = NodeType::kCommColl;
    const int64_t comm_size = CollectiveCommSize(t, e);
    n.attrs.push_back({"is_cpu_op", false});
    n.attrs.push_back({"comm_type", static_cast<int64_t>(*comm_type)});
    n.attrs.push_back({"comm_size", comm_size});
    if (comm_size != bytes) n.attrs.push_back({"loom_bytes", bytes});
    AddGroupAttr(t, e, &n.attrs);
  } else if (IsP2P(it.kind)) {
    const bool send = it.kind == EventKind::kSend;
    n.type = send ? NodeType::kCommSend : NodeType::kCommRecv;
    const int32_t peer = e.peer;
    const std::string_view name = t.Name(e);
    const size_t dot = name.find('.');
    const int32_t tag = e.flow_id != ingest::kUnknown
                            ? static_cast<int32_t>(e.flow_id & 0x7fffffff)
                            : StableTag(dot == std::string_view::npos ? name : name.substr(dot));
    n.attrs.push_back({"is_cpu_op", false});
    n.attrs.push_back({"comm_src", send ? e.rank : peer});
    n.attrs.push_back({"comm_dst", send ? peer : e.rank});
    n.attrs.push_back({"comm_tag", tag});
    n.attrs.push_back({"comm_size", bytes});
    AddGroupAttr(t, e, &n.attrs);
  } else {
    n.type = NodeType::kComp;
    n.attrs.push_back({"is_cpu_op", it.kind == EventKind::kCommEnqueue || o.compute_is_cpu_op});
    if (o.waits_as_sync && IsWaitSpan(t, it)) {
      n.attrs.push_back({"loom_wait_us", static_cast<int64_t>(n.duration_micros)});
      n.duration_micros = 0;
    }
  }
  n.attrs.push_back({"tid", static_cast<int64_t>(e.lane)});
  n.attrs.push_back({"loom_kind", std::string(ingest::EventKindName(it.kind))});
  if (e.step != ingest::kUnknown) n.attrs.push_back({"loom_step", e.step});
  if (e.op != CollectiveOp::kNone) {
    n.attrs.push_back({"loom_collective", std::string(ingest::CollectiveOpName(e.op))});
  }
  if (e.seq != ingest::kUnknown && e.op != CollectiveOp::kNone) {
    n.attrs.push_back({"loom_seq", e.seq});
  }
  return n;
}

void AddDep(std::vector<uint64_t>* deps, uint64_t id) {
  if (std::find(deps->begin(), deps->end(), id) == deps->end()) deps->push_back(id);
}

// Splits each BW item where a collective (or the first chunk of one) of another lane starts
// strictly inside it; `items` sorted by start, and so is the result.
std::vector<Item> SplitBackwardAtCollectives(const RankTrace& t, const std::vector<Item>& items) {
  std::vector<std::pair<int64_t, int32_t>> starts;  // (start, lane), sorted by start
  std::set<CommKey> seen;
  for (const Item& it : items) {
    const TraceEvent& e = t.events[it.event];
    const bool first_chunk =
        IsP2P(it.kind) && (e.seq == ingest::kUnknown || seen.insert(KeyOf(e)).second);
    if (it.kind == EventKind::kComm || first_chunk) starts.emplace_back(it.ts_ns, e.lane);
  }
  std::vector<Item> out;
  out.reserve(items.size());
  for (const Item& it : items) {
    if (it.kind != EventKind::kBackward) {
      out.push_back(it);
      continue;
    }
    const int32_t lane = t.events[it.event].lane;
    Item piece = it;
    for (auto s =
             std::upper_bound(starts.begin(), starts.end(), std::make_pair(it.ts_ns, INT32_MAX));
         s != starts.end() && s->first < it.end_ns; ++s) {
      if (s->second == lane || s->first <= piece.ts_ns) continue;
      Item head = piece;
      head.end_ns = s->first;
      out.push_back(head);
      piece.ts_ns = s->first;
    }
    out.push_back(piece);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Item& a, const Item& b) { return a.ts_ns < b.ts_ns; });
  // Pieces of one event are "<name>#0", "#1", ... in time order.
  std::unordered_map<size_t, int> pieces;
  for (const Item& it : out) ++pieces[it.event];
  std::unordered_map<size_t, int> next;
  for (Item& it : out) {
    if (pieces[it.event] > 1) it.segment = next[it.event]++;
  }
  return out;
}

// ctrl_deps per lane (also data_deps when lane_order_as_data_deps), the previous collective of
// the same group (collectives_in_group_order) and the BW -> comm -> UPDATE data_deps (items
// sorted by start).
void AddDependencies(const RankTrace& t, const std::vector<Item>& items, const ChakraOptions& o,
                     std::vector<Node>* nodes) {
  std::unordered_map<int32_t, size_t> last_on_lane;
  std::unordered_map<uint32_t, size_t> last_collective;  // per process group
  std::vector<size_t> bws;                               // BW items seen, in start order
  int64_t last_update_start = INT64_MIN;
  std::set<CommKey> linked_keys;            // collectives whose first node got its BW dep
  std::map<CommKey, size_t> pending_keyed;  // latest-ending node per collective since UPDATE
  std::vector<size_t> pending_unkeyed;      // collective nodes without a sequence number
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const TraceEvent& e = t.events[it.event];
    Node& n = (*nodes)[i];
    auto lane_it = last_on_lane.find(e.lane);
    if (lane_it != last_on_lane.end()) {
      AddDep(&n.ctrl_deps, (*nodes)[lane_it->second].id);
      if (o.lane_order_as_data_deps) AddDep(&n.data_deps, (*nodes)[lane_it->second].id);
    }
    last_on_lane[e.lane] = i;
    if (o.collectives_in_group_order && n.type == NodeType::kCommColl) {
      auto prev = last_collective.find(e.group);
      if (prev != last_collective.end()) AddDep(&n.data_deps, (*nodes)[prev->second].id);
      last_collective[e.group] = i;
    }

    const bool comm = n.type == NodeType::kCommColl || n.type == NodeType::kCommSend ||
                      n.type == NodeType::kCommRecv;
    if (comm) {
      const bool keyed = e.seq != ingest::kUnknown;
      const bool first_of_op =
          n.type == NodeType::kCommColl || (keyed && linked_keys.insert(KeyOf(e)).second);
      if (first_of_op) {
        // The last BW that ended before this starts, unless an UPDATE came in between.
        int64_t best = -1;
        for (size_t k = bws.size(), scanned = 0; k-- > 0 && scanned < 64; ++scanned) {
          const Item& bw = items[bws[k]];
          if (bw.end_ns <= it.ts_ns && (best < 0 || bw.end_ns > items[best].end_ns)) {
            best = static_cast<int64_t>(bws[k]);
          }
        }
        if (best >= 0 && items[best].end_ns > last_update_start) {
          AddDep(&n.data_deps, (*nodes)[best].id);
        }
      }
      if (n.type == NodeType::kCommColl && !keyed) {
        pending_unkeyed.push_back(i);
      } else if (keyed) {
        auto [p, inserted] = pending_keyed.emplace(KeyOf(e), i);
        if (!inserted && items[p->second].end_ns < it.end_ns) p->second = i;
      }
    }
    if (it.kind == EventKind::kBackward) bws.push_back(i);
    if (it.kind == EventKind::kUpdate) {
      last_update_start = std::max(last_update_start, it.ts_ns);
      auto done = [&](size_t c) { return items[c].end_ns <= it.ts_ns; };
      for (auto p = pending_keyed.begin(); p != pending_keyed.end();) {
        if (done(p->second)) {
          AddDep(&n.data_deps, (*nodes)[p->second].id);
          p = pending_keyed.erase(p);
        } else {
          ++p;
        }
      }
      std::vector<size_t> keep;
      for (size_t c : pending_unkeyed) {
        if (done(c)) {
          AddDep(&n.data_deps, (*nodes)[c].id);
        } else {
          keep.push_back(c);
        }
      }
      pending_unkeyed.swap(keep);
    }
  }
}

// Drops zero-duration nodes without any edge and renumbers ids 1..N.
void DropIsolatedZeroDuration(std::vector<Node>* nodes) {
  std::set<uint64_t> referenced;
  for (const Node& n : *nodes) {
    referenced.insert(n.ctrl_deps.begin(), n.ctrl_deps.end());
    referenced.insert(n.data_deps.begin(), n.data_deps.end());
  }
  std::vector<Node> kept;
  kept.reserve(nodes->size());
  for (Node& n : *nodes) {
    const bool isolated = n.ctrl_deps.empty() && n.data_deps.empty() && !referenced.count(n.id);
    if (!(isolated && n.duration_micros == 0)) kept.push_back(std::move(n));
  }
  std::unordered_map<uint64_t, uint64_t> renumber;
  for (size_t i = 0; i < kept.size(); ++i) renumber[kept[i].id] = i + 1;
  for (Node& n : kept) {
    n.id = renumber.at(n.id);
    for (uint64_t& d : n.ctrl_deps) d = renumber.at(d);
    for (uint64_t& d : n.data_deps) d = renumber.at(d);
  }
  *nodes = std::move(kept);
}

int64_t EarliestEvent(const RankTrace& t) {
  int64_t origin = INT64_MAX;
  for (const TraceEvent& e : t.events) origin = std::min(origin, e.ts_ns);
  return origin == INT64_MAX ? 0 : origin;
}

}  // namespace

std::optional<CommType> ToChakraCommType(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return CommType::kAllReduce;
    case CollectiveOp::kAllGather:
      return CommType::kAllGather;
    case CollectiveOp::kReduceScatter:
      return CommType::kReduceScatter;
    case CollectiveOp::kBroadcast:
      return CommType::kBroadcast;
    case CollectiveOp::kReduce:
      return CommType::kReduce;
    case CollectiveOp::kAllToAll:
      return CommType::kAllToAll;
    case CollectiveOp::kBarrier:
      return CommType::kBarrier;
    case CollectiveOp::kGather:
      return CommType::kGather;
    case CollectiveOp::kScatter:
      return CommType::kScatter;
    case CollectiveOp::kNone:
    case CollectiveOp::kSend:
    case CollectiveOp::kRecv:
    case CollectiveOp::kOther:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<ChakraTrace> BuildChakraTrace(const RankTrace& trace, const ChakraOptions& options) {
  const std::string where =
      "chakra export of rank " + std::to_string(trace.rank) + " ('" + trace.path + "')";
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.name >= trace.names.size() || e.group >= trace.names.size() || e.dur_ns < 0) {
      return InvalidArgumentError(where + ": event " + std::to_string(i) +
                                  " has a name/group index outside the name table or a "
                                  "negative duration");
    }
    if (i > 0 && (e.ts_ns < trace.events[i - 1].ts_ns)) {
      return InvalidArgumentError(where + ": events are not sorted by start time at event " +
                                  std::to_string(i) + " ('" + std::string(trace.Name(e)) + "')");
    }
  }
  std::vector<Item> items = Selector(trace, options).Run();
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.ts_ns < b.ts_ns; });
  if (options.split_backward_at_collectives) items = SplitBackwardAtCollectives(trace, items);
  const int64_t origin =
      options.origin_ns != ingest::kUnknown ? options.origin_ns : EarliestEvent(trace);

  ChakraTrace out;
  out.metadata_attrs = {
      {"schema", std::string("loom chakra_et.proto (subset of Chakra et_def.proto)")},
      {"rank", static_cast<int64_t>(trace.rank)},
      {"world_size", static_cast<int64_t>(trace.world_size)},
      {"source", trace.path},
      {"dialect", std::string(ingest::DialectName(trace.dialect))},
      {"time_origin_ns", origin},
      {"loom_granularity",
       std::string(options.granularity == CommGranularity::kCollective ? "collective"
                                                                       : "point_to_point")},
  };
  out.nodes.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out.nodes.push_back(MakeNode(trace, items[i], options, origin));
    out.nodes.back().id = i + 1;
  }
  AddDependencies(trace, items, options, &out.nodes);
  if (options.drop_isolated_zero_duration) DropIsolatedZeroDuration(&out.nodes);
  LOOM_RETURN_IF_ERROR(ValidateChakraGraph(out).WithContext(where));
  return out;
}

Status ExportChakra(const RankTrace& trace, const std::string& path, const ChakraOptions& options) {
  LOOM_ASSIGN_OR_RETURN(ChakraTrace et, BuildChakraTrace(trace, options));
  return WriteChakraTrace(et, path);
}

std::string ChakraRankPath(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

Status ExportChakraAll(const std::vector<RankTrace>& traces, const std::string& prefix,
                       const ChakraOptions& options) {
  std::set<int32_t> ranks;
  ChakraOptions shared = options;
  int64_t origin = INT64_MAX;
  for (const RankTrace& t : traces) {
    if (!ranks.insert(t.rank).second) {
      return InvalidArgumentError("chakra export: rank " + std::to_string(t.rank) +
                                  " appears twice ('" + t.path + "')");
    }
    if (!t.events.empty()) origin = std::min(origin, EarliestEvent(t));
  }
  if (shared.origin_ns == ingest::kUnknown) shared.origin_ns = origin == INT64_MAX ? 0 : origin;
  for (const RankTrace& t : traces) {
    LOOM_RETURN_IF_ERROR(ExportChakra(t, ChakraRankPath(prefix, t.rank), shared));
  }
  return OkStatus();
}

}  // namespace loom::trace::chakra
