#include "loom/robust/driver.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"
#include "loom/comm/subprocess.h"
#include "loom/robust/blocklist.h"
#include "loom/monitor/fleet/detect/detector.h"
#include "loom/robust/line_channel.h"
#include "loom/robust/live_fleet.h"
#include "loom/robust/restore_point.h"
#include "loom/robust/self_check.h"
#include "loom/robust/train_command.h"

namespace loom::robust {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double Now() { return static_cast<double>(NowNanos()) / 1e9; }

struct Machine {
  std::string name;
  std::string host;
  std::unique_ptr<LineConnection> conn;
  std::unique_ptr<comm::Subprocess> proc;  // the executor, when spawned locally
  std::map<std::string, json> replies;    // latest "dump" / "selfcheck" reply
  bool exited = true;                     // its rank of the current attempt has exited
};

class Driver {
 public:
  explicit Driver(const DriverOptions& o) : o_(o), policy_(o.policy), straggler_(o.straggler) {}

  Result<DriverReport> Run() {
    const double t0 = Now();
    LOOM_RETURN_IF_ERROR(Setup());
    report_.exit_code = RunAttempts();
    report_.wall_s = Now() - t0;
    for (auto& [name, m] : machines_) {
      if (m.conn) m.conn->Send(R"({"cmd":"exit"})").IgnoreError();
    }
    for (auto& [name, m] : machines_) {
      if (m.proc) m.proc->Wait();
    }
    Log("DONE", report_.message, {{"exit_code", report_.exit_code}, {"wall_s", report_.wall_s}});
    return report_;
  }

 private:
  Status Setup() {
    dir_ = (o_.run_dir.empty() ? "runs/robust-" + std::to_string(std::time(nullptr)) : o_.run_dir);
    std::error_code ec;
    fs::create_directories(dir_ + "/robust", ec);
    if (ec) return InternalError("cannot create " + dir_ + "/robust: " + ec.message());
    decisions_.open(dir_ + "/robust/decisions.jsonl", std::ios::app);
    LOOM_ASSIGN_OR_RETURN(blocklist_, Blocklist::Open(dir_ + "/robust/blocklist.json"));
    LOOM_ASSIGN_OR_RETURN(cmd_, TrainCommand::Make(o_.command, o_.self_exe, dir_ + "/train"));
    if (!o_.detector.empty()) {
      json spec = o_.detector[0] == '{' ? json::parse(o_.detector, nullptr, false)
                                        : json{{"type", o_.detector}};
      if (spec.is_discarded()) return InvalidArgumentError("--detector is not JSON: " + o_.detector);
      LOOM_ASSIGN_OR_RETURN(detector_, monitor::MakeDetector(spec));
    }
    std::string host;
    int port = 0;
    LOOM_RETURN_IF_ERROR(ParseHostPort(o_.listen, &host, &port));
    LOOM_ASSIGN_OR_RETURN(listener_, LineListener::Listen(host, port));
    const int wanted = o_.machines + o_.standby;
    if (o_.local_executors) {
      for (int i = 0, started = 0; started < wanted; ++i) {
        const std::string name = "m" + std::to_string(i);
        if (blocklist_->Contains(name)) continue;
        auto proc = std::make_unique<comm::Subprocess>();
        LOOM_RETURN_IF_ERROR(proc->Start(
            {o_.self_exe, "robust", "executor", "--driver",
             host + ":" + std::to_string(listener_->port()), "--machine", name,
             "--heartbeat-ms", std::to_string(o_.heartbeat.count())},
            {}, /*capture_output=*/false));
        machines_[name].name = name;
        machines_[name].proc = std::move(proc);
        ++started;
      }
    }
    Log("SETUP", "driver listening on " + host + ":" + std::to_string(listener_->port()) +
                     ", waiting for " + std::to_string(wanted) + " executors",
        {{"run_dir", dir_}, {"command", cmd_.argv()}});
    if (!WaitFor([&] { return Connected() >= wanted; }, 60)) {
      return UnavailableError("only " + std::to_string(Connected()) + " of " +
                              std::to_string(wanted) + " executors connected within 60 s");
    }
    for (auto& [name, m] : machines_) {
      if (!m.conn) continue;
      (static_cast<int>(active_.size()) < o_.machines ? active_ : standby_).push_back(name);
    }
    Log("RUNNING", "machines " + Join(active_) + "; standby " + Join(standby_), {});
    return OkStatus();
  }

  int Connected() const {
    int n = 0;
    for (const auto& [name, m] : machines_) n += m.conn != nullptr;
    return n;
  }

  static std::string Join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? "(none)" : s;
  }

  // Attempts until the job finishes or the driver escalates; returns the exit code.
  int RunAttempts() {
    std::string resume;
    int64_t resume_step = -1;
    int no_progress_restarts = 0;
    for (;;) {
      const int attempt = report_.attempts++;
      if (Status s = StartAttempt(attempt, resume); !s.ok()) {
        report_.message = "cannot start attempt " + std::to_string(attempt) + ": " + s.ToString();
        return 1;
      }
      std::optional<Incident> inc;
      bool pids_logged = false;
      while (!inc) {
        Pump(200);
        for (const std::string& note : policy_.TakeNotes()) Log("NOTE", note, {});
        if (!pids_logged) pids_logged = LogRankPids(attempt);
        UpdateStragglerAlerts();
        RunDetector();
        if (!report_.incidents.empty() && report_.incidents.back().recover_s < 0 &&
            policy_.max_step() > resume_step && attempt > 0) {
          report_.incidents.back().recover_s = Now() - incident_at_;
          Log("RUNNING", "attempt " + std::to_string(attempt) + " completed step " +
                             std::to_string(policy_.max_step()) + ", " +
                             Seconds(report_.incidents.back().recover_s) + " after the incident",
              {});
        }
        if (policy_.AllExitedOk()) {
          report_.message = "training finished after " + std::to_string(report_.attempts) +
                            " attempt(s), " + std::to_string(report_.incidents.size()) +
                            " incident(s), evicted " + Join(report_.evicted);
          return 0;
        }
        inc = policy_.Evaluate(Now());
        if (inc && o_.observe_only) {
          Log("OBSERVE", "would suspend, dump, diagnose and evict " + Join(inc->machines) +
                             " (" + std::string(TriggerName(inc->kind)) + ")",
              {{"evidence", inc->evidence}});
          report_.incidents.push_back({*inc, {}, "", inc->at_s - inc->onset_s, -1});
          inc.reset();
        }
        if (o_.observe_only && AllRanksExited()) {
          report_.message = "observe-only: the job ended without a clean exit";
          return 1;
        }
      }
      const int64_t progress = policy_.max_step();
      incident_at_ = Now();
      std::string why;
      handling_ = true;
      const bool restart = HandleIncident(*inc, &resume, &resume_step, &why);
      handling_ = false;
      if (!restart) {
        report_.message = "escalated: " + why;
        Log("ESCALATE", why, {});
        return 1;
      }
      no_progress_restarts = progress > last_resume_step_ ? 0 : no_progress_restarts + 1;
      last_resume_step_ = resume_step;
      if (no_progress_restarts > o_.max_restarts_without_progress) {
        report_.message = "escalated: " + std::to_string(no_progress_restarts) +
                          " restarts in a row made no progress (limit " +
                          std::to_string(o_.max_restarts_without_progress) + ")";
        Log("ESCALATE", report_.message, {});
        KillAll();
        return 1;
      }
    }
  }

  // Once every rank of the attempt has reported its pid: one line naming them (for operators
  // and fault-injection scripts). False until then.
  bool LogRankPids(int attempt) {
    json pids = json::object();
    std::string text;
    for (const auto& [name, v] : policy_.views()) {
      if (v.last.attempt != attempt || v.last.pid <= 0) return false;
      pids[name] = v.last.pid;
      text += (text.empty() ? "" : ", ") + name + " rank " + std::to_string(v.last.rank) +
              " pid " + std::to_string(v.last.pid);
    }
    Log("RUNNING", "attempt " + std::to_string(attempt) + ": " + text,
        {{"attempt", attempt}, {"pids", pids}});
    return true;
  }

  // NVRx's rule: a machine whose compute time per step is below the threshold relative to the
  // fastest machine raises a detector alert; the policy confirms it over time.
  void UpdateStragglerAlerts() {
    if (o_.straggler.threshold <= 0) return;
    for (const auto& [name, score] : straggler_.Scores()) {
      if (score < o_.straggler.threshold) {
        char metric[128];
        std::snprintf(metric, sizeof(metric),
                      "compute time per step (NVRx score %.2f < %.2f: median %.3f s)", score,
                      o_.straggler.threshold, straggler_.MedianOf(name));
        policy_.OnAlert(name, metric, Now());
      } else {
        policy_.OnAlert(name, "", Now());
      }
    }
  }

  // Once a second: the detector's verdict on the live series; its alert names machine + metric.
  void RunDetector() {
    if (!detector_ || !live_ || active_.size() < 3 || Now() - last_detect_s_ < 1.0) return;
    last_detect_s_ = Now();
    monitor::FleetSeries s = live_->Series(Now());
    if (s.seconds < 10) return;
    auto v = detector_->Evaluate(s, s.seconds - 1);
    if (!v.ok()) {
      Log("NOTE", "detector disabled: " + v.status().ToString(), {});
      detector_.reset();
      return;
    }
    for (size_t i = 0; i < live_->machines().size(); ++i) {
      const std::string& name = live_->machines()[i];
      if (v->alert && v->machine == static_cast<int>(i)) {
        char score[32];
        std::snprintf(score, sizeof(score), "%.1f", v->score);
        policy_.OnAlert(name, detector_->name() + " on " + v->metric + " (score " + score + ")",
                        Now());
      } else {
        policy_.OnAlert(name, "", Now());
      }
    }
  }

  static std::string Seconds(double s) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.1f s", s);
    return b;
  }

  bool AllRanksExited() const {
    for (const auto& name : active_) {
      if (!machines_.at(name).exited) return false;
    }
    return true;
  }

  Status StartAttempt(int attempt, const std::string& resume) {
    const std::string store = dir_ + "/robust/store/attempt-" + std::to_string(attempt);
    std::error_code ec;
    fs::remove_all(store, ec);
    fs::create_directories(store, ec);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::string threads =
        std::to_string(std::max(1u, cores / static_cast<unsigned>(active_.size())));
    const std::vector<std::string> argv = cmd_.WithResume(resume);
    policy_.StartAttempt(active_, Now());
    straggler_.Clear();
    if (detector_) {
      detector_->Reset();
      live_ = std::make_unique<LiveFleet>(active_, 600, Now());
      last_detect_s_ = Now();
    }
    for (size_t r = 0; r < active_.size(); ++r) {
      Machine& m = machines_[active_[r]];
      json env = {{"LOOM_RANK", std::to_string(r)},
                  {"LOOM_WORLD_SIZE", std::to_string(active_.size())},
                  {"LOOM_LOCAL_RANK", "0"},
                  {"LOOM_LOCAL_WORLD_SIZE", "1"},
                  {"LOOM_STORE", "file://" + fs::absolute(store).string()},
                  {"LOOM_RUN_ID", "robust-" + std::to_string(attempt)}};
      if (o_.local_executors) {
        env["OPENBLAS_NUM_THREADS"] = threads;
        env["OMP_NUM_THREADS"] = threads;
      }
      json start = {{"cmd", "start"}, {"attempt", attempt}, {"rank", r}, {"argv", argv},
                    {"env", env}};
      LOOM_RETURN_IF_ERROR(m.conn->Send(start.dump()));
      m.exited = false;
    }
    attempt_ = attempt;
    Log("LAUNCH", "attempt " + std::to_string(attempt) + " on " + Join(active_) +
                      (resume.empty() ? "" : ", resume=" + resume),
        {{"argv", argv}});
    return OkStatus();
  }

  void Pump(int timeout_ms) {
    std::vector<pollfd> fds = {{listener_->fd(), POLLIN, 0}};
    std::vector<Machine*> order;
    for (auto& [name, m] : machines_) {
      if (m.conn) {
        fds.push_back({m.conn->fd(), POLLIN, 0});
        order.push_back(&m);
      }
    }
    for (auto& p : pending_) fds.push_back({p->fd(), POLLIN, 0});
    poll(fds.data(), fds.size(), timeout_ms);
    if (fds[0].revents & POLLIN) {
      auto conn = listener_->Accept();
      if (conn.ok()) pending_.push_back(std::move(*conn));
    }
    for (Machine* m : order) {
      std::vector<std::string> lines;
      const bool open = m->conn->ReadLines(&lines);
      for (const std::string& line : lines) Dispatch(*m, line);
      if (!open) {
        Log("NOTE", "executor " + m->name + " disconnected", {});
        m->conn.reset();
      }
    }
    // Connections that have not said hello yet.
    for (size_t i = 0; i < pending_.size();) {
      std::vector<std::string> lines;
      const bool open = pending_[i]->ReadLines(&lines);
      bool adopted = false;
      for (const std::string& line : lines) {
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || j.value("type", "") != "hello") continue;
        const std::string name = j.value("machine", "");
        if (blocklist_->Contains(name)) {
          Log("NOTE", "refused executor " + name + ": on the blocklist", {});
          pending_[i]->Send(R"({"cmd":"exit"})").IgnoreError();
          break;
        }
        Machine& m = machines_[name];
        m.name = name;
        m.host = j.value("host", "");
        m.conn = std::move(pending_[i]);
        adopted = true;
        break;
      }
      if (adopted || !open) {
        pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  void Dispatch(Machine& m, const std::string& line) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      Log("NOTE", "malformed message from " + m.name + ": " + line.substr(0, 120), {});
      return;
    }
    const std::string type = j.value("type", "");
    if (type == "heartbeat") {
      auto hb = ParseHeartbeat(line);
      if (!hb.ok()) {
        Log("NOTE", hb.status().ToString(), {});
      } else if (hb->attempt == attempt_ && !handling_) {
        for (const auto& hit : hb->log_hits) Log("NOTE", "log hit on " + m.name + ": " + hit, {});
        policy_.OnHeartbeat(*hb, Now());
        if (hb->compute_s >= 0) straggler_.Add(m.name, hb->compute_s);
        if (live_) live_->Add(*hb, Now());
      }
    } else if (type == "exit") {
      if (j.value("attempt", -1) != attempt_) return;
      m.exited = true;
      if (handling_) return;  // killed by the driver itself
      // The executor's wall clock orders exits across machines; the offset to this driver's
      // monotonic clock only shifts all of them alike.
      const double wall_offset = WallNanos() / 1e9 - Now();
      policy_.OnExit(m.name, j.value("code", 1), j.value("text", ""),
                     j.value("ts_ms", int64_t{0}) / 1e3 - wall_offset);
      if (j.value("code", 1) != 0) {
        Log("NOTE", m.name + " rank " + std::to_string(j.value("rank", -1)) + " " +
                        j.value("text", ""), {});
      }
    } else if (type == "dump" || type == "selfcheck") {
      m.replies[type] = j;
    }
  }

  bool WaitFor(const std::function<bool()>& done, double timeout_s) {
    const double end = Now() + timeout_s;
    while (!done()) {
      if (Now() >= end) return false;
      Pump(100);
    }
    return true;
  }

  void KillAll() {
    for (const auto& name : active_) {
      Machine& m = machines_[name];
      if (m.conn && !m.exited) m.conn->Send(R"({"cmd":"kill"})").IgnoreError();
    }
    WaitFor([&] { return AllRanksExited(); }, 15);
  }

  // SUSPENDED -> DUMP -> DIAGNOSE -> EVICT -> RESTORE. False (with `why`) to escalate.
  bool HandleIncident(const Incident& inc, std::string* resume, int64_t* resume_step,
                      std::string* why);

  void Log(const std::string& state, const std::string& text, json extra) {
    std::printf("[robust] %-9s %s\n", state.c_str(), text.c_str());
    std::fflush(stdout);
    extra["state"] = state;
    extra["text"] = text;
    extra["ts_ms"] = WallNanos() / 1000000;
    decisions_ << extra.dump() << "\n";
    decisions_.flush();
  }

  void Dump(const Incident& inc, const std::string& incident_dir);
  std::vector<std::string> Diagnose(std::vector<std::string>* evidence);

  const DriverOptions& o_;
  Policy policy_;
  StragglerScore straggler_;
  std::unique_ptr<monitor::Detector> detector_;
  std::unique_ptr<LiveFleet> live_;
  double last_detect_s_ = 0;
  std::string dir_;
  std::ofstream decisions_;
  std::unique_ptr<Blocklist> blocklist_;
  TrainCommand cmd_;
  std::unique_ptr<LineListener> listener_;
  std::vector<std::unique_ptr<LineConnection>> pending_;
  std::map<std::string, Machine> machines_;
  std::vector<std::string> active_, standby_;
  std::map<std::string, int> crashes_;
  int attempt_ = -1;
  bool handling_ = false;  // inside HandleIncident: heartbeats and exits do not feed the policy
  int64_t last_resume_step_ = -1;
  double incident_at_ = 0;
  DriverReport report_;
};

void Driver::Dump(const Incident& inc, const std::string& incident_dir) {
  std::vector<std::string> asked;
  for (const auto& name : active_) {
    Machine& m = machines_[name];
    m.replies.erase("dump");
    if (m.conn && !m.exited) {
      m.conn->Send(R"({"cmd":"dump"})").IgnoreError();
      asked.push_back(name);
    }
  }
  WaitFor([&] {
    for (const auto& n : asked) {
      if (machines_[n].conn && !machines_[n].replies.count("dump")) return false;
    }
    return true;
  }, 30);
  // Last collective per rank: the rank that lags, or reports nothing, stands out.
  std::string table;
  for (const auto& [name, v] : policy_.views()) {
    char line[256];
    std::snprintf(line, sizeof(line), "%s rank %d state %c step %lld coll_seq %lld %s",
                  name.c_str(), v.last.rank, v.last.state, static_cast<long long>(v.last.step),
                  static_cast<long long>(v.last.last_coll_seq), v.last.last_coll_op.c_str());
    table += std::string(table.empty() ? "" : "; ") + line;
    // A machine whose rank already exited was not asked: its reply is absent (null).
    const json& reply = machines_[name].replies["dump"];
    std::string text = "no stacks: rank not running or no reply";
    if (reply.is_object() && reply.contains("text")) {
      text = reply["text"].get<std::string>();
    } else if (reply.is_object()) {
      text = "no stacks: " + reply.value("error", std::string("no reply"));
    }
    std::ofstream out(incident_dir + "/stacks-" + name + ".txt");
    out << text;
  }
  Log("DUMP", "stacks in " + incident_dir + "; " + table, {});
}

std::vector<std::string> Driver::Diagnose(std::vector<std::string>* evidence) {
  std::map<std::string, SelfCheckResult> results;
  std::vector<std::string> unreachable;
  // One machine at a time: on a shared host concurrent checks would measure each other.
  for (const auto& name : active_) {
    Machine& m = machines_[name];
    m.replies.erase("selfcheck");
    if (!m.conn || !m.conn->Send(R"({"cmd":"selfcheck"})").ok() ||
        !WaitFor([&] { return !m.conn || m.replies.count("selfcheck") > 0; }, 20) ||
        !m.replies.count("selfcheck")) {
      unreachable.push_back(name);
      evidence->push_back(name + " did not answer the self-check");
      continue;
    }
    const json& r = m.replies["selfcheck"];
    results[name] = {r.value("gemm_gflops", 0.0), r.value("membw_gbps", 0.0),
                     r.value("seconds", 0.0)};
  }
  // A median of fewer than three machines is no reference (two noisy numbers on shared cores
  // evicted a healthy machine at 0.63x): report the numbers, judge nobody.
  std::vector<std::string> failing;
  if (results.size() >= 3) {
    failing = FailingSelfChecks(results, o_.selfcheck_fraction, evidence);
  } else {
    evidence->push_back("self-check verdicts need >= 3 machines to compare; " +
                        std::to_string(results.size()) + " answered, nobody judged");
  }
  for (const auto& [name, r] : results) {
    char line[160];
    std::snprintf(line, sizeof(line), "%s GEMM %.2f GFLOP/s, memory %.1f GB/s", name.c_str(),
                  r.gemm_gflops, r.membw_gbps);
    Log("DIAGNOSE", line, {});
  }
  failing.insert(failing.end(), unreachable.begin(), unreachable.end());
  return failing;
}

bool Driver::HandleIncident(const Incident& inc, std::string* resume, int64_t* resume_step,
                            std::string* why) {
  const int k = static_cast<int>(report_.incidents.size());
  const std::string incident_dir = dir_ + "/robust/incident-" + std::to_string(k);
  std::error_code ec;
  fs::create_directories(incident_dir, ec);
  Log("SUSPENDED", std::string(TriggerName(inc.kind)) + " on " + Join(inc.machines) + ": " +
                       inc.evidence,
      {{"kind", TriggerName(inc.kind)}, {"machines", inc.machines},
       {"detect_s", inc.at_s - inc.onset_s}});
  Dump(inc, incident_dir);
  KillAll();
  std::vector<std::string> evidence;
  std::vector<std::string> evict = Diagnose(&evidence);
  for (const auto& e : evidence) Log("DIAGNOSE", e, {});
  // Who goes: the machine a hang, a lost heartbeat or a detector names; a machine that crashed
  // twice; any machine failing its self-check. A single crash restarts in place.
  for (const auto& m : inc.machines) {
    const bool crash = inc.kind == TriggerKind::kExit;
    if (crash && ++crashes_[m] < 2) {
      Log("DIAGNOSE", m + " crashed once and passes its checks: restart in place", {});
      continue;
    }
    if (std::find(evict.begin(), evict.end(), m) == evict.end()) evict.push_back(m);
  }
  IncidentRecord rec{inc, {}, "", inc.at_s - inc.onset_s, -1};
  for (const auto& m : evict) {
    const std::string reason = std::string(TriggerName(inc.kind)) + ": " + inc.evidence;
    if (Status s = blocklist_->Add(m, machines_[m].host, reason); !s.ok()) {
      Log("NOTE", "blocklist: " + s.ToString(), {});
    }
    if (machines_[m].conn) machines_[m].conn->Send(R"({"cmd":"exit"})").IgnoreError();
    active_.erase(std::remove(active_.begin(), active_.end(), m), active_.end());
    std::string replacement;
    while (!standby_.empty() && replacement.empty()) {
      std::string s = standby_.front();
      standby_.erase(standby_.begin());
      if (machines_[s].conn) replacement = s;
    }
    if (!replacement.empty()) {
      active_.push_back(replacement);
      Log("EVICT", m + " -> blocklist; replaced by standby " + replacement, {{"reason", reason}});
    } else if (o_.allow_shrink && !active_.empty()) {
      Log("EVICT", m + " -> blocklist; no standby left, shrinking to " +
                       std::to_string(active_.size()) + " machines", {{"reason", reason}});
    } else {
      *why = "evicted " + m + " and no standby machine is left (allow shrinking with --shrink)";
      rec.evicted.push_back(m);
      report_.evicted.push_back(m);
      report_.incidents.push_back(rec);
      return false;
    }
    rec.evicted.push_back(m);
    report_.evicted.push_back(m);
  }
  std::vector<std::string> rejected;
  auto point = PickRestorePoint(cmd_.checkpoint_roots(), &rejected);
  for (const auto& r : rejected) Log("RESTORE", "skipped " + r, {});
  if (!point.ok()) {
    *why = "cannot pick a checkpoint: " + point.status().ToString();
    report_.incidents.push_back(rec);
    return false;
  }
  *resume = point->path;
  *resume_step = point->step;
  rec.restored_from = point->path;
  Log("RESTORE", point->path.empty()
                     ? "no verified checkpoint: restarting from step 0"
                     : "from " + point->path + " (step " + std::to_string(point->step) + ", " +
                           std::to_string(point->verified_objects) + " checksums verified)",
      {{"step", point->step}});
  report_.incidents.push_back(rec);
  return true;
}

}  // namespace

Result<DriverReport> RunDriver(const DriverOptions& options) {
  if (options.command.empty()) return InvalidArgumentError("loom robust: no command after --");
  if (options.machines < 1) return InvalidArgumentError("loom robust: --machines must be >= 1");
  Driver driver(options);
  return driver.Run();
}

}  // namespace loom::robust
