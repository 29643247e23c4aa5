#include "loom/trace/ingest/trace_events.h"

#include <cctype>

namespace loom::trace::ingest {

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kOther:
      return "OTHER";
    case EventKind::kForward:
      return "FW";
    case EventKind::kBackward:
      return "BW";
    case EventKind::kUpdate:
      return "UPDATE";
    case EventKind::kStep:
      return "STEP";
    case EventKind::kCommEnqueue:
      return "COMM_ENQUEUE";
    case EventKind::kComm:
      return "COMM";
    case EventKind::kSend:
      return "SEND";
    case EventKind::kRecv:
      return "RECV";
  }
  return "?";
}

std::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kNone:
      return "none";
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kBarrier:
      return "barrier";
    case CollectiveOp::kGather:
      return "gather";
    case CollectiveOp::kScatter:
      return "scatter";
    case CollectiveOp::kSend:
      return "send";
    case CollectiveOp::kRecv:
      return "recv";
    case CollectiveOp::kOther:
      return "other";
  }
  return "?";
}

CollectiveOp ParseCollectiveOp(std::string_view name) {
  // Lower-case and drop separators so "all_reduce", "AllReduce" and "allreduce_" all read
  // "allreduce". Order matters: "reducescatter" before "reduce", "allgather" before "gather".
  std::string s;
  s.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  auto has = [&](std::string_view w) { return s.find(w) != std::string::npos; };
  if (has("allreduce")) return CollectiveOp::kAllReduce;
  if (has("reducescatter")) return CollectiveOp::kReduceScatter;
  if (has("allgather")) return CollectiveOp::kAllGather;
  if (has("alltoall")) return CollectiveOp::kAllToAll;
  if (has("broadcast") || has("bcast")) return CollectiveOp::kBroadcast;
  if (has("barrier")) return CollectiveOp::kBarrier;
  if (has("reduce")) return CollectiveOp::kReduce;
  if (has("gather")) return CollectiveOp::kGather;
  if (has("scatter")) return CollectiveOp::kScatter;
  if (has("send")) return CollectiveOp::kSend;
  if (has("recv")) return CollectiveOp::kRecv;
  return CollectiveOp::kNone;
}

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kAuto:
      return "auto";
    case Dialect::kKineto:
      return "kineto";
    case Dialect::kLegacyTorch:
      return "legacy-torch";
    case Dialect::kLoom:
      return "loom";
  }
  return "?";
}

NameTable::NameTable(std::vector<std::string>* names) : names_(names) {
  if (names_->empty()) names_->emplace_back();
  for (uint32_t i = 0; i < names_->size(); ++i) index_.emplace((*names_)[i], i);
}

uint32_t NameTable::Intern(std::string_view s) {
  auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_->size());
  names_->emplace_back(s);
  index_.emplace(std::string(s), id);
  return id;
}

}  // namespace loom::trace::ingest
