#include "loom/trace/ingest/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "loom/base/file_util.h"
#include "loom/trace/ingest/internal/json_event_stream.h"

namespace loom::trace::ingest {
namespace {

using internal::RawEvent;
using internal::Scalar;
using internal::TopLevel;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool ScalarInt(const Scalar* v, int64_t* out) {
  if (v == nullptr) return false;
  if (v->type == Scalar::Type::kInt) {
    *out = v->i;
    return true;
  }
  if (v->type == Scalar::Type::kFloat) {
    *out = static_cast<int64_t>(v->d);
    return true;
  }
  if (v->type == Scalar::Type::kString && !v->text.empty()) {
    char* end = nullptr;
    const long long x = std::strtoll(v->text.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') {
      *out = x;
      return true;
    }
  }
  return false;
}

// Bytes per element of Kineto/torch dtype names ("Float", "float", "c10::BFloat16", "Long").
int DTypeBytes(std::string_view t) {
  std::string s;
  for (char c : t) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s.find("double") != std::string::npos || s.find("long") != std::string::npos ||
      s.find("int64") != std::string::npos || s.find("float64") != std::string::npos) {
    return 8;
  }
  if (s.find("half") != std::string::npos || s.find("bfloat16") != std::string::npos ||
      s.find("float16") != std::string::npos || s.find("short") != std::string::npos) {
    return 2;
  }
  if (s.find("float8") != std::string::npos || s.find("byte") != std::string::npos ||
      s.find("char") != std::string::npos || s.find("bool") != std::string::npos ||
      s.find("int8") != std::string::npos) {
    return 1;
  }
  if (s.find("float") != std::string::npos || s.find("int") != std::string::npos) return 4;
  return 0;
}

EventKind LoomCategoryKind(std::string_view c) {
  if (c == "forward") return EventKind::kForward;
  if (c == "backward") return EventKind::kBackward;
  if (c == "optimizer") return EventKind::kUpdate;
  if (c == "step") return EventKind::kStep;
  if (c == "collective") return EventKind::kComm;
  if (c == "send") return EventKind::kSend;
  if (c == "recv") return EventKind::kRecv;
  return EventKind::kOther;
}

// Classifies one X event by its name and args (all dialects share the rules; the names do not
// collide). Fills kind, op, bytes, seq, flow id, peer and the step from args.
void Classify(const RawEvent& raw, TraceEvent* e, std::string* group) {
  const std::string_view name = raw.name;
  const Scalar* collective_name = raw.Arg("Collective name");
  if (const Scalar* lc = raw.Arg("loom_category"); lc != nullptr) {
    e->kind = LoomCategoryKind(lc->text);
  } else if (StartsWith(name, "ProfilerStep#")) {
    e->kind = EventKind::kStep;
  } else if (StartsWith(name, "SEND.")) {
    e->kind = EventKind::kSend;
  } else if (StartsWith(name, "RECV.")) {
    e->kind = EventKind::kRecv;
  } else if (StartsWith(name, "ncclKernel_") || StartsWith(name, "ncclDevKernel_") ||
             StartsWith(name, "gloo:")) {
    e->kind = EventKind::kComm;
  } else if (name == "record_param_comms" || StartsWith(name, "nccl:") ||
             (StartsWith(name, "c10d::") &&
              ParseCollectiveOp(name.substr(6)) != CollectiveOp::kNone)) {
    e->kind = EventKind::kCommEnqueue;
  } else if (StartsWith(name, "autograd::engine::evaluate_function: ") &&
             name.find("Backward") != std::string_view::npos) {
    e->kind = EventKind::kBackward;
  } else if (StartsWith(name, "Optimizer.step#")) {
    e->kind = EventKind::kUpdate;
  } else if (name.ends_with(".forward") || StartsWith(name, "## forward") ||
             StartsWith(name, "nn.Module: ")) {
    e->kind = EventKind::kForward;
  }

  int64_t v = 0;
  if (e->kind == EventKind::kStep) {
    if (StartsWith(name, "ProfilerStep#")) {
      char* end = nullptr;
      const long long s = std::strtoll(raw.name.c_str() + 13, &end, 10);
      if (end != raw.name.c_str() + 13) e->step = s;
    }
  }
  if (ScalarInt(raw.Arg("step"), &v) && v >= 0 && e->step == kUnknown) e->step = v;

  const bool comm = e->kind == EventKind::kComm || e->kind == EventKind::kCommEnqueue ||
                    e->kind == EventKind::kSend || e->kind == EventKind::kRecv;
  if (!comm) return;
  if (collective_name != nullptr && collective_name->type == Scalar::Type::kString) {
    e->op = ParseCollectiveOp(collective_name->text);
  }
  if (e->op == CollectiveOp::kNone) {
    std::string_view n = name;
    if (e->kind == EventKind::kSend || e->kind == EventKind::kRecv) {
      n = n.substr(5, n.find('.', 5) == std::string_view::npos ? n.npos : n.find('.', 5) - 5);
    }
    e->op = ParseCollectiveOp(n);
    if (e->op == CollectiveOp::kNone) e->op = CollectiveOp::kOther;
  }
  if (ScalarInt(raw.Arg("bytes"), &v) && v > 0) {
    e->bytes = v;
  } else if (const Scalar* dt = raw.Arg("dtype");
             dt != nullptr && ScalarInt(raw.Arg("In msg nelems"), &v) && DTypeBytes(dt->text) > 0) {
    e->bytes = v * DTypeBytes(dt->text);
  } else if (raw.input_dims_product >= 0 && DTypeBytes(raw.input_type) > 0) {
    e->bytes = raw.input_dims_product * DTypeBytes(raw.input_type);
  }
  for (const char* k : {"seq", "Seq", "Collective seq", "collective_seq"}) {
    if (ScalarInt(raw.Arg(k), &v) && v >= 0) {
      e->seq = v;
      break;
    }
  }
  if (e->seq == kUnknown && (e->kind == EventKind::kSend || e->kind == EventKind::kRecv)) {
    // SEND.<op>.<seq>~>...
    const size_t dot = name.find('.', 5);
    if (dot != std::string_view::npos) {
      char* end = nullptr;
      const long long s = std::strtoll(raw.name.c_str() + dot + 1, &end, 10);
      if (end != raw.name.c_str() + dot + 1) e->seq = s;
    }
  }
  if (ScalarInt(raw.Arg("flow_id"), &v)) e->flow_id = v;
  if (e->kind == EventKind::kSend && ScalarInt(raw.Arg("dst"), &v))
    e->peer = static_cast<int32_t>(v);
  if (e->kind == EventKind::kRecv && ScalarInt(raw.Arg("src"), &v))
    e->peer = static_cast<int32_t>(v);
  if (e->peer < 0 && ScalarInt(raw.Arg("peer"), &v)) e->peer = static_cast<int32_t>(v);
  for (const char* k : {"Process Group Name", "pg_name", "process_group"}) {
    const Scalar* g = raw.Arg(k);
    if (g != nullptr && g->present()) {
      *group = g->AsText();
      break;
    }
  }
}

int32_t RankFromFileName(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') + 1);
  int32_t rank = -1;
  for (size_t p = base.find("rank"); p != std::string::npos; p = base.find("rank", p + 1)) {
    size_t q = p + 4;
    while (q < base.size() && (base[q] == '_' || base[q] == '-')) ++q;
    if (q < base.size() && std::isdigit(static_cast<unsigned char>(base[q]))) {
      rank = std::atoi(base.c_str() + q);
    }
  }
  return rank;
}

// A flow endpoint ("s"/"f") to bind to the SEND/RECV slice that encloses it.
struct FlowPoint {
  int32_t lane;
  int64_t ts_ns;
  int64_t id;
  bool start;
};

class Reader {
 public:
  Reader(const std::string& path, const ReadOptions& options)
      : path_(path), options_(options), names_(&trace_.names) {
    trace_.path = path;
    file_rank_ = RankFromFileName(path);
  }

  Result<RankTrace> Run() {
    LOOM_ASSIGN_OR_RETURN(const Dialect detected_first, DetectDialect(path_));
    (void)detected_first;
    Status s = internal::StreamJsonEvents(
        path_, [this](const RawEvent& raw, const TopLevel& top) { return OnEvent(raw, top); },
        &top_, [this](const TopLevel& top) { return RankText(top); });
    LOOM_RETURN_IF_ERROR(s);
    LOOM_RETURN_IF_ERROR(Finish());
    return std::move(trace_);
  }

 private:
  int32_t Rank(const TopLevel& top) const {
    if (options_.rank >= 0) return options_.rank;
    int64_t r = 0;
    if (ScalarInt(&top.dist_rank, &r) || ScalarInt(&top.loom_rank, &r)) {
      return static_cast<int32_t>(r);
    }
    return file_rank_ >= 0 ? file_rank_ : 0;
  }
  std::string RankText(const TopLevel& top) const {
    int64_t r = 0;
    if (options_.rank >= 0 || ScalarInt(&top.dist_rank, &r) || ScalarInt(&top.loom_rank, &r) ||
        file_rank_ >= 0) {
      return "rank " + std::to_string(Rank(top));
    }
    return "rank unknown";
  }
  std::string Where(const RawEvent& raw, const TopLevel& top) const {
    return "trace ingest: '" + path_ + "' (" + RankText(top) + "): event #" +
           std::to_string(raw.index) + " at byte " + std::to_string(raw.byte_offset) + " ('" +
           raw.name + "')";
  }
  Status CheckUnits(const TopLevel& top) const {
    if (!top.time_unit.present()) return OkStatus();
    const std::string u = top.time_unit.AsText();
    if (u == "us" || u == "µs" || u == "microseconds") return OkStatus();
    return InvalidArgumentError("trace ingest: '" + path_ + "' (" + RankText(top) +
                                "): time_unit \"" + u +
                                "\" is not supported; ts/dur must be microseconds (\"us\")");
  }

  Result<int64_t> TimeField(const RawEvent& raw, const TopLevel& top, const Scalar& v,
                            const char* field) const {
    if (!v.present()) {
      return InvalidArgumentError(Where(raw, top) + " has no \"" + field + "\"");
    }
    int64_t ns = 0;
    if (!v.is_number()) {
      return InvalidArgumentError(Where(raw, top) + ": \"" + field + "\" is not a number (" +
                                  v.AsText() + ")");
    }
    constexpr double kMaxPlausibleMicros = 1e17;  // ~year 5000 in µs since 1970
    if (std::abs(v.d) > kMaxPlausibleMicros || !internal::MicrosToNanos(v, &ns)) {
      return InvalidArgumentError(Where(raw, top) + ": \"" + field + "\" = " + v.AsText() +
                                  " is implausible as microseconds (nanoseconds?): units are "
                                  "ambiguous; ts/dur must be microseconds");
    }
    return ns;
  }

  int32_t Lane(const RawEvent& raw) {
    std::string key = raw.pid.AsText() + "/" + raw.tid.AsText();
    auto it = lanes_.find(key);
    if (it != lanes_.end()) return it->second;
    const auto id = static_cast<int32_t>(trace_.lane_names.size());
    trace_.lane_names.push_back(key);
    lanes_.emplace(std::move(key), id);
    return id;
  }

  Status OnEvent(const RawEvent& raw, const TopLevel& top) {
    ++trace_.events_seen;
    if (!units_checked_) {
      LOOM_RETURN_IF_ERROR(CheckUnits(top));
      units_checked_ = top.time_unit.present();
    }
    const std::string& ph = raw.ph;
    if (ph == "M") {
      if (raw.name == "thread_name") {
        if (const Scalar* n = raw.Arg("name"); n != nullptr) {
          trace_.lane_names[Lane(raw)] += " " + n->AsText();
        }
      }
      return OkStatus();
    }
    if ((ph == "s" || ph == "f") && raw.cat != "ac2g" && raw.cat != "fwdbwd") {
      int64_t id = 0, ts = 0;
      if (ScalarInt(&raw.id, &id) && internal::MicrosToNanos(raw.ts, &ts)) {
        flows_.push_back({Lane(raw), ts, id, ph == "s"});
      }
      return OkStatus();
    }
    if (!(ph == "X" || (ph.empty() && raw.dur.present()))) return OkStatus();
    TraceEvent e;
    LOOM_ASSIGN_OR_RETURN(e.ts_ns, TimeField(raw, top, raw.ts, "ts"));
    LOOM_ASSIGN_OR_RETURN(e.dur_ns, TimeField(raw, top, raw.dur, "dur"));
    if (e.dur_ns < 0) {
      return InvalidArgumentError(Where(raw, top) + " has a negative dur (" + raw.dur.AsText() +
                                  " us)");
    }
    e.rank = Rank(top);
    e.lane = Lane(raw);
    std::string group;
    Classify(raw, &e, &group);
    if (!options_.keep_other && e.kind == EventKind::kOther) return OkStatus();
    if (options_.filter && !options_.filter(e, raw.name)) return OkStatus();
    e.name = names_.Intern(raw.name);
    e.group = group.empty() ? 0 : names_.Intern(group);
    if (options_.on_event) return options_.on_event(e, raw.name);
    trace_.events.push_back(e);
    return OkStatus();
  }

  Status Finish();
  void BindFlows();
  void PropagateEnqueueInfo();
  void AssignSteps();

  const std::string path_;
  const ReadOptions& options_;
  RankTrace trace_;
  NameTable names_;
  TopLevel top_;
  int32_t file_rank_ = -1;
  bool units_checked_ = false;
  std::unordered_map<std::string, int32_t> lanes_;
  std::vector<FlowPoint> flows_;
};

Status Reader::Finish() {
  const std::string where = "trace ingest: '" + path_ + "' (" + RankText(top_) + ")";
  LOOM_RETURN_IF_ERROR(CheckUnits(top_));
  Dialect found = Dialect::kAuto;
  if (top_.is_array) {
    found = Dialect::kLegacyTorch;
  } else if (top_.is_object && top_.has_trace_events) {
    found = top_.has_loom ? Dialect::kLoom : Dialect::kKineto;
  } else {
    std::string keys;
    for (const std::string& k : top_.keys) keys += (keys.empty() ? "" : ", ") + k;
    return InvalidArgumentError(
        where +
        ": unknown trace dialect: expected a bare JSON array of events (torch 1.13 "
        "legacy) or an object with \"traceEvents\" (Kineto/loom); top-level keys: [" +
        keys + "]; cannot tell the events or their time unit");
  }
  const Dialect want = options_.dialect;
  if (want == Dialect::kLegacyTorch && found != Dialect::kLegacyTorch) {
    return InvalidArgumentError(where + ": dialect forced to legacy-torch but the file is a " +
                                std::string(DialectName(found)) + " object");
  }
  if ((want == Dialect::kKineto || want == Dialect::kLoom) && found == Dialect::kLegacyTorch) {
    return InvalidArgumentError(where + ": dialect forced to " + std::string(DialectName(want)) +
                                " but the file is a bare array (legacy torch)");
  }
  if (want == Dialect::kLoom && found != Dialect::kLoom) {
    return InvalidArgumentError(where +
                                ": dialect forced to loom but there is no top-level "
                                "\"loom\" object");
  }
  trace_.dialect = want == Dialect::kAuto ? found : want;
  trace_.rank = Rank(top_);
  int64_t v = 0;
  if (ScalarInt(&top_.dist_world_size, &v) || ScalarInt(&top_.loom_world_size, &v)) {
    trace_.world_size = static_cast<int32_t>(v);
  }
  if (top_.loom_run_id.present()) {
    trace_.run_id = top_.loom_run_id.AsText();
  } else if (top_.trace_name.present() && trace_.dialect == Dialect::kKineto) {
    trace_.run_id = "";  // Kineto traceName is a per-rank file name, not a run id
  }
  if (ScalarInt(&top_.base_time_ns, &v)) trace_.clock.base_time_ns = v;
  trace_.clock.timestamps_relative = trace_.dialect == Dialect::kLegacyTorch;
  if (trace_.dialect == Dialect::kLoom && ScalarInt(&top_.loom_clock_offset_ns, &v)) {
    int64_t rounds = 1;
    ScalarInt(&top_.loom_clock_rounds, &rounds);
    // Rank 0 reports {0, 0, rounds}: its estimate (0) is exact whether or not it measured.
    if (rounds > 0 || trace_.rank == 0) {
      trace_.clock.has_offset_estimate = true;
      trace_.clock.offset_estimate_ns = v;
    }
  }
  if (options_.on_event) return OkStatus();
  std::stable_sort(trace_.events.begin(), trace_.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) {
                     if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
                     return a.dur_ns > b.dur_ns;
                   });
  BindFlows();
  PropagateEnqueueInfo();
  AssignSteps();
  return OkStatus();
}

void Reader::BindFlows() {
  if (flows_.empty()) return;
  // Per lane, the SEND/RECV slices in start order; a flow point binds to the slice that
  // encloses its ts ("s" to a SEND, "f" to a RECV).
  std::map<int32_t, std::vector<size_t>> by_lane;
  for (size_t i = 0; i < trace_.events.size(); ++i) {
    const TraceEvent& e = trace_.events[i];
    if (e.kind == EventKind::kSend || e.kind == EventKind::kRecv) by_lane[e.lane].push_back(i);
  }
  for (const FlowPoint& f : flows_) {
    auto it = by_lane.find(f.lane);
    if (it == by_lane.end()) continue;
    const std::vector<size_t>& idx = it->second;
    auto pos = std::upper_bound(idx.begin(), idx.end(), f.ts_ns,
                                [&](int64_t ts, size_t i) { return ts < trace_.events[i].ts_ns; });
    while (pos != idx.begin()) {
      --pos;
      TraceEvent& e = trace_.events[*pos];
      if (e.end_ns() < f.ts_ns) break;
      if ((e.kind == EventKind::kSend) == f.start) {
        if (e.flow_id == kUnknown) e.flow_id = f.id;
        break;
      }
    }
  }
  flows_.clear();
  flows_.shrink_to_fit();
}

void Reader::PropagateEnqueueInfo() {
  // The n-th enqueue (record_param_comms, c10d::allreduce_) of an op describes the n-th
  // execution (gloo:*, ncclKernel_*) of that op: copy group, bytes and seq where missing.
  std::map<CollectiveOp, std::vector<size_t>> enq, exe;
  for (size_t i = 0; i < trace_.events.size(); ++i) {
    const TraceEvent& e = trace_.events[i];
    if (e.kind == EventKind::kCommEnqueue) enq[e.op].push_back(i);
    if (e.kind == EventKind::kComm) exe[e.op].push_back(i);
  }
  for (auto& [op, ex] : exe) {
    auto it = enq.find(op);
    if (it == enq.end()) continue;
    for (size_t k = 0; k < ex.size() && k < it->second.size(); ++k) {
      TraceEvent& c = trace_.events[ex[k]];
      const TraceEvent& q = trace_.events[it->second[k]];
      if (c.group == 0) c.group = q.group;
      if (c.bytes == kUnknown) c.bytes = q.bytes;
      if (c.seq == kUnknown) c.seq = q.seq;
    }
  }
}

void Reader::AssignSteps() {
  std::vector<const TraceEvent*> steps;
  for (const TraceEvent& e : trace_.events) {
    if (e.kind == EventKind::kStep && e.step != kUnknown) steps.push_back(&e);
  }
  if (steps.empty()) return;
  for (TraceEvent& e : trace_.events) {
    if (e.step != kUnknown) continue;
    auto pos = std::upper_bound(steps.begin(), steps.end(), e.ts_ns,
                                [](int64_t ts, const TraceEvent* s) { return ts < s->ts_ns; });
    if (pos == steps.begin()) continue;
    const TraceEvent* s = *(pos - 1);
    if (e.ts_ns < s->end_ns()) e.step = s->step;
  }
}

}  // namespace

Result<Dialect> DetectDialect(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ErrnoError("trace ingest: cannot open", path, errno);
  std::string head(64 * 1024, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  size_t p = head.find_first_not_of(" \t\r\n");
  if (head.size() >= 3 && head.compare(0, 3, "\xEF\xBB\xBF") == 0) {
    p = head.find_first_not_of(" \t\r\n", 3);
  }
  if (p == std::string::npos) {
    if (head.empty()) {
      return DataLossError("trace ingest: '" + path + "' is empty (truncated at byte 0?)");
    }
    return DataLossError("trace ingest: '" + path + "' holds only whitespace");
  }
  if (head[p] == '[') return Dialect::kLegacyTorch;
  if (head[p] != '{') {
    return InvalidArgumentError("trace ingest: '" + path + "': unknown trace dialect: byte " +
                                std::to_string(p) + " is '" + std::string(1, head[p]) +
                                "', expected '[' (torch 1.13 legacy) or '{' (Kineto/loom)");
  }
  // Scan top-level keys of the object for "loom" (strings skipped, depth tracked).
  int depth = 0;
  std::string last_string;
  for (size_t i = p; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '"') {
      size_t j = i + 1;
      std::string s;
      while (j < head.size() && head[j] != '"') {
        if (head[j] == '\\') ++j;
        if (j < head.size()) s.push_back(head[j]);
        ++j;
      }
      last_string = std::move(s);
      i = j;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ':' && depth == 1 && last_string == "loom") {
      return Dialect::kLoom;
    }
  }
  return Dialect::kKineto;
}

Result<RankTrace> ReadTrace(const std::string& path, const ReadOptions& options) {
  Reader reader(path, options);
  return reader.Run();
}

Result<std::vector<RankTrace>> ReadTraces(const std::vector<std::string>& paths,
                                          const ReadOptions& options) {
  std::vector<RankTrace> out;
  for (const std::string& p : paths) {
    LOOM_ASSIGN_OR_RETURN(RankTrace t, ReadTrace(p, options));
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].rank == out[i - 1].rank) {
      return InvalidArgumentError("trace ingest: '" + out[i - 1].path + "' and '" + out[i].path +
                                  "' both claim rank " + std::to_string(out[i].rank) +
                                  " (set ReadOptions::rank or name files rank<N>)");
    }
  }
  return out;
}

Result<std::vector<RankTrace>> ReadTraceDir(const std::string& dir, const ReadOptions& options) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string p = entry.path().string();
    if (entry.is_regular_file() && p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0) {
      paths.push_back(p);
    }
  }
  if (ec) return NotFoundError("trace ingest: cannot list '" + dir + "': " + ec.message());
  if (paths.empty()) return NotFoundError("trace ingest: no *.json trace in '" + dir + "'");
  std::sort(paths.begin(), paths.end());
  return ReadTraces(paths, options);
}

}  // namespace loom::trace::ingest
