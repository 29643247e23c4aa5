#include "loom/trace/ingest/collective_match.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace loom::trace::ingest {
namespace {

std::string GroupOf(const RankTrace& t, const TraceEvent& e) {
  const std::string_view g = t.GroupName(e);
  return g.empty() ? std::string("default") : std::string(g);
}

std::string TraceLabel(const RankTrace& t) {
  return "rank " + std::to_string(t.rank) + " ('" + t.path + "')";
}

Status CheckSameRun(const std::vector<RankTrace>& traces) {
  for (size_t i = 0; i < traces.size(); ++i) {
    for (size_t j = i + 1; j < traces.size(); ++j) {
      const RankTrace& a = traces[i];
      const RankTrace& b = traces[j];
      if (a.rank == b.rank) {
        return InvalidArgumentError("collective match: " + TraceLabel(a) + " and '" + b.path +
                                    "' both claim rank " + std::to_string(a.rank));
      }
      if (a.world_size > 0 && b.world_size > 0 && a.world_size != b.world_size) {
        return InvalidArgumentError(
            "collective match: traces from mismatched runs: " + TraceLabel(a) + " has world_size " +
            std::to_string(a.world_size) + " but " + TraceLabel(b) + " has world_size " +
            std::to_string(b.world_size));
      }
      if (!a.run_id.empty() && !b.run_id.empty() && a.run_id != b.run_id) {
        return InvalidArgumentError(
            "collective match: traces from mismatched runs: " + TraceLabel(a) + " has run id '" +
            a.run_id + "' but " + TraceLabel(b) + " has run id '" + b.run_id + "'");
      }
    }
  }
  for (const RankTrace& t : traces) {
    if (t.world_size > 0 && (t.rank < 0 || t.rank >= t.world_size)) {
      return InvalidArgumentError("collective match: " + TraceLabel(t) + " is outside world_size " +
                                  std::to_string(t.world_size));
    }
  }
  return OkStatus();
}

// (trace, event) of one collective on one rank.
struct Slot {
  int32_t trace = -1;
  size_t event = 0;
};

// Assigns sequence numbers per (trace, group) and fills group -> seq -> per-trace slot.
Status IndexCollectives(std::vector<RankTrace>* traces,
                        std::map<std::string, std::map<int64_t, std::map<int32_t, Slot>>>* index) {
  for (size_t ti = 0; ti < traces->size(); ++ti) {
    RankTrace& t = (*traces)[ti];
    std::map<std::string, int64_t> position;
    for (size_t ei = 0; ei < t.events.size(); ++ei) {
      TraceEvent& e = t.events[ei];
      if (e.kind != EventKind::kComm) continue;
      const std::string g = GroupOf(t, e);
      int64_t& pos = position[g];
      if (e.seq == kUnknown) e.seq = pos;
      ++pos;
      auto& per_trace = (*index)[g][e.seq];
      auto [it, inserted] =
          per_trace.emplace(static_cast<int32_t>(ti), Slot{static_cast<int32_t>(ti), ei});
      if (!inserted) {
        return InvalidArgumentError("collective match: " + TraceLabel(t) + " has two collectives " +
                                    "at group '" + g + "' seq " + std::to_string(e.seq) + ": " +
                                    DescribeCollective(t, t.events[it->second.event]) + " and " +
                                    DescribeCollective(t, e));
      }
    }
  }
  return OkStatus();
}

Status MatchP2P(std::vector<RankTrace>* traces, const MatchOptions& options, MatchResult* out) {
  struct Ends {
    std::vector<Slot> send, recv;
  };
  std::unordered_map<int64_t, Ends> by_flow;
  std::map<std::string, Ends> by_key;
  std::map<std::string, int64_t> occurrence;
  for (size_t ti = 0; ti < traces->size(); ++ti) {
    const RankTrace& t = (*traces)[ti];
    for (size_t ei = 0; ei < t.events.size(); ++ei) {
      const TraceEvent& e = t.events[ei];
      if (e.kind != EventKind::kSend && e.kind != EventKind::kRecv) continue;
      const bool send = e.kind == EventKind::kSend;
      const Slot s{static_cast<int32_t>(ti), ei};
      if (e.flow_id != kUnknown) {
        (send ? by_flow[e.flow_id].send : by_flow[e.flow_id].recv).push_back(s);
        continue;
      }
      const int32_t src = send ? t.rank : e.peer;
      const int32_t dst = send ? e.peer : t.rank;
      std::string key = std::to_string(src);
      key.append(">").append(std::to_string(dst)).append("|").append(t.Name(e).substr(5));
      std::string occ_key = key;
      occ_key.push_back(send ? 'S' : 'R');
      key.append("#").append(std::to_string(occurrence[occ_key]++));
      (send ? by_key[key].send : by_key[key].recv).push_back(s);
    }
  }
  auto pair_up = [&](const std::string& what, const Ends& ends, int64_t flow) -> Status {
    if (ends.send.size() == 1 && ends.recv.size() == 1) {
      out->p2p.push_back(
          {ends.send[0].trace, ends.send[0].event, ends.recv[0].trace, ends.recv[0].event, flow});
      return OkStatus();
    }
    const Slot& any = ends.send.empty() ? ends.recv[0] : ends.send[0];
    const RankTrace& t = (*traces)[any.trace];
    std::string desc = "'";
    desc.append(t.Name(t.events[any.event]))
        .append("' on rank " + std::to_string(t.rank) + " (" + what + ")");
    if (ends.send.size() > 1 || ends.recv.size() > 1) {
      return InvalidArgumentError("collective match: " + std::to_string(ends.send.size()) +
                                  " SENDs and " + std::to_string(ends.recv.size()) +
                                  " RECVs share " + desc);
    }
    if (options.allow_missing_at_end) {
      ++out->dropped_at_end;
      return OkStatus();
    }
    return InvalidArgumentError(
        "collective match: " +
        std::string(ends.send.empty() ? "RECV without its SEND: " : "SEND without its RECV: ") +
        desc);
  };
  for (const auto& [flow, ends] : by_flow) {
    LOOM_RETURN_IF_ERROR(pair_up("flow id " + std::to_string(flow), ends, flow));
  }
  for (const auto& [key, ends] : by_key) LOOM_RETURN_IF_ERROR(pair_up(key, ends, kUnknown));
  std::sort(out->p2p.begin(), out->p2p.end(), [](const MatchedP2P& a, const MatchedP2P& b) {
    return std::tie(a.send_trace, a.send_event) < std::tie(b.send_trace, b.send_event);
  });
  return OkStatus();
}

}  // namespace

std::string DescribeCollective(const RankTrace& t, const TraceEvent& e) {
  std::string s = "'";
  s.append(t.Name(e)).append("' (").append(CollectiveOpName(e.op));
  if (e.bytes != kUnknown) s += ", " + std::to_string(e.bytes) + " B";
  s += ") group '" + GroupOf(t, e) + "' seq " + std::to_string(e.seq) + " on rank " +
       std::to_string(t.rank);
  return s;
}

Result<MatchResult> MatchCollectives(std::vector<RankTrace>* traces, const MatchOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckSameRun(*traces));
  std::map<std::string, std::map<int64_t, std::map<int32_t, Slot>>> index;
  LOOM_RETURN_IF_ERROR(IndexCollectives(traces, &index));
  MatchResult out;
  for (const auto& [group, by_seq] : index) {
    std::set<int32_t> participants;
    std::map<int32_t, int64_t> last_seq;  // per participant
    for (const auto& [seq, slots] : by_seq) {
      for (const auto& [ti, slot] : slots) {
        participants.insert(ti);
        last_seq[ti] = seq;
      }
    }
    for (const auto& [seq, slots] : by_seq) {
      const Slot& first = slots.begin()->second;
      const RankTrace& ft = (*traces)[first.trace];
      const TraceEvent& fe = ft.events[first.event];
      if (slots.size() < participants.size()) {
        int32_t missing = -1;
        bool at_end = true;
        for (int32_t p : participants) {
          if (slots.count(p)) continue;
          if (missing < 0) missing = p;
          if (last_seq[p] > seq) at_end = false;
        }
        if (at_end && options.allow_missing_at_end) {
          ++out.dropped_at_end;
          continue;
        }
        const RankTrace& mt = (*traces)[missing];
        return InvalidArgumentError(
            "collective match: rank " + std::to_string(mt.rank) + " ('" + mt.path +
            "') has no collective at group '" + group + "' seq " + std::to_string(seq) +
            ", but rank " + std::to_string(ft.rank) + " has " + DescribeCollective(ft, fe) +
            "; rank " + std::to_string(mt.rank) + "'s last seq on this group is " +
            std::to_string(last_seq[missing]) +
            (at_end ? " (a profiler window cut? see MatchOptions::allow_missing_at_end)" : ""));
      }
      MatchedCollective mc;
      mc.group = group;
      mc.seq = seq;
      mc.op = fe.op;
      for (const auto& [ti, slot] : slots) {
        const RankTrace& t = (*traces)[ti];
        const TraceEvent& e = t.events[slot.event];
        if (e.op != fe.op) {
          return InvalidArgumentError(
              "collective match: op mismatch at group '" + group + "' seq " + std::to_string(seq) +
              ": rank " + std::to_string(ft.rank) + " has " + DescribeCollective(ft, fe) +
              " but rank " + std::to_string(t.rank) + " has " + DescribeCollective(t, e));
        }
        if (options.check_bytes && e.bytes != kUnknown && fe.bytes != kUnknown &&
            e.bytes != fe.bytes) {
          return InvalidArgumentError("collective match: size mismatch at group '" + group +
                                      "' seq " + std::to_string(seq) + ": rank " +
                                      std::to_string(ft.rank) + " has " +
                                      DescribeCollective(ft, fe) + " but rank " +
                                      std::to_string(t.rank) + " has " + DescribeCollective(t, e));
        }
        if (mc.bytes == kUnknown) mc.bytes = e.bytes;
        mc.trace_index.push_back(ti);
        mc.event_index.push_back(slot.event);
      }
      out.collectives.push_back(std::move(mc));
    }
  }
  LOOM_RETURN_IF_ERROR(MatchP2P(traces, options, &out));
  return out;
}

}  // namespace loom::trace::ingest
