#include "loom/robust/executor.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "loom/base/clock.h"
#include "loom/comm/subprocess.h"
#include "loom/monitor/agent/proc_stat.h"
#include "loom/monitor/app/app_receiver.h"
#include "loom/monitor/app/rank_app_state.h"
#include "loom/robust/heartbeat.h"
#include "loom/robust/line_channel.h"
#include "loom/robust/self_check.h"
#include "loom/robust/stack_dump.h"

namespace loom::robust {
namespace {

int64_t WallMs() { return WallNanos() / 1000000; }

// Whole words only: "error_feedback" in a config dump is not an error.
std::regex KeywordRegex(const std::vector<std::string>& words) {
  std::string alt;
  for (const std::string& w : words) {
    std::string quoted;
    for (char c : w) {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) quoted += '\\';
      quoted += c;
    }
    alt += (alt.empty() ? "" : "|") + quoted;
  }
  return std::regex(alt.empty() ? "$^" : "\\b(" + alt + ")\\b");
}

// The rank this executor runs: its process, output line buffers and app state.
struct RankRun {
  int attempt = -1;
  int rank = -1;
  std::unique_ptr<comm::Subprocess> proc;
  std::string out_buf, err_buf;
  bool out_open = true, err_open = true;
  monitor::RankAppState app;
  double last_cpu_s = -1;
  double last_cpu_at_s = 0;
  // Since the last heartbeat: steps that reported their compute time, and its sum.
  int64_t window_steps = 0;
  double window_compute_s = 0;
};

class Executor {
 public:
  Executor(const ExecutorOptions& o, std::unique_ptr<LineConnection> conn,
           std::unique_ptr<monitor::AppReceiver> rx)
      : o_(o), conn_(std::move(conn)), rx_(std::move(rx)), keywords_(KeywordRegex(o.log_keywords)) {}

  Status Run() {
    nlohmann::json hello = {{"type", "hello"}, {"machine", o_.machine}, {"pid", getpid()}};
    char host[256] = "?";
    gethostname(host, sizeof(host));
    hello["host"] = host;
    LOOM_RETURN_IF_ERROR(conn_->Send(hello.dump()));
    Deadline next_hb = SteadyClock::now();
    for (;;) {
      std::vector<pollfd> fds = {{conn_->fd(), POLLIN, 0}, {rx_->fd(), POLLIN, 0}};
      if (run_.proc && run_.out_open) fds.push_back({run_.proc->stdout_fd(), POLLIN, 0});
      if (run_.proc && run_.err_open) fds.push_back({run_.proc->stderr_fd(), POLLIN, 0});
      const int wait_ms = std::min<int>(static_cast<int>(TimeLeft(next_hb).count()), 200);
      poll(fds.data(), fds.size(), wait_ms);
      for (const monitor::AppMessage& m : rx_->Drain()) {
        run_.app.Apply(m);
        if (m.kind == monitor::AppMessage::Kind::kStep && !std::isnan(m.compute_s)) {
          ++run_.window_steps;
          run_.window_compute_s += m.compute_s;
        }
      }
      PumpOutput();
      LOOM_RETURN_IF_ERROR(ReapRank());
      std::vector<std::string> lines;
      const bool open = conn_->ReadLines(&lines);
      for (const std::string& line : lines) {
        bool exit = false;
        LOOM_RETURN_IF_ERROR(HandleCommand(line, &exit));
        if (exit) return OkStatus();
      }
      if (!open) {
        KillRank();
        return UnavailableError("driver " + conn_->peer() + " went away");
      }
      if (SteadyClock::now() >= next_hb) {
        LOOM_RETURN_IF_ERROR(conn_->Send(EncodeHeartbeat(MakeHeartbeat())));
        next_hb = SteadyClock::now() + o_.heartbeat;
      }
    }
  }

 private:
  Heartbeat MakeHeartbeat() {
    Heartbeat hb;
    hb.machine = o_.machine;
    hb.ts_ms = WallMs();
    hb.attempt = run_.attempt;
    hb.rank = run_.rank;
    hb.log_hits.swap(log_hits_);
    if (!run_.proc) {
      hb.state = '-';
      return hb;
    }
    hb.pid = run_.proc->pid();
    auto st = monitor::ReadProcStat(hb.pid);
    const double now = NowNanos() / 1e9;
    if (st.ok()) {
      hb.state = st->state;
      if (run_.last_cpu_s >= 0 && now > run_.last_cpu_at_s) {
        hb.cpu_rate = (st->cpu_seconds - run_.last_cpu_s) / (now - run_.last_cpu_at_s);
      }
      run_.last_cpu_s = st->cpu_seconds;
      run_.last_cpu_at_s = now;
    } else {
      hb.state = '-';
    }
    const monitor::RankAppState& a = run_.app;
    hb.step = a.step;
    hb.step_time_s = std::isnan(a.last_step_time_s) ? 0 : a.last_step_time_s;
    hb.last_coll_seq = a.last_coll_seq;
    hb.last_coll_op = a.last_coll_op;
    hb.coll_bytes = a.coll_bytes_total;
    hb.app_age_ms = a.last_update_ms > 0 ? hb.ts_ms - a.last_update_ms : -1;
    if (run_.window_steps > 0) hb.compute_s = run_.window_compute_s / run_.window_steps;
    run_.window_steps = 0;
    run_.window_compute_s = 0;
    return hb;
  }

  // Forwards the rank's output, prefixed, and collects lines with error keywords.
  void PumpOutput() {
    if (!run_.proc) return;
    Drain(run_.proc->stdout_fd(), &run_.out_buf, &run_.out_open, stdout);
    Drain(run_.proc->stderr_fd(), &run_.err_buf, &run_.err_open, stderr);
  }

  void Drain(int fd, std::string* buf, bool* open, FILE* to) {
    if (!*open) return;
    char tmp[8192];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) break;
      ssize_t n = read(fd, tmp, sizeof(tmp));
      if (n <= 0) {
        *open = false;
        if (!buf->empty()) buf->push_back('\n');
        break;
      }
      buf->append(tmp, static_cast<size_t>(n));
    }
    size_t start = 0;
    for (size_t nl; (nl = buf->find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string line = buf->substr(start, nl - start);
      std::fprintf(to, "[%s rank %d] %s\n", o_.machine.c_str(), run_.rank, line.c_str());
      if (log_hits_.size() < 8 && std::regex_search(line, keywords_)) {
        log_hits_.push_back(line.substr(0, 300));
      }
    }
    buf->erase(0, start);
    std::fflush(to);
  }

  // Once the rank exited and its output is drained, reports the exit to the driver.
  Status ReapRank() {
    if (!run_.proc) return OkStatus();
    auto st = run_.proc->Poll();
    if (!st) return OkStatus();
    PumpOutput();
    nlohmann::json j = {{"type", "exit"},       {"machine", o_.machine},
                        {"attempt", run_.attempt}, {"rank", run_.rank},
                        {"code", st->ShellCode()}, {"text", st->ToString()},
                        {"ts_ms", WallMs()}};
    run_.proc.reset();
    return conn_->Send(j.dump());
  }

  void KillRank() {
    if (run_.proc && !run_.proc->exit_status()) run_.proc->Signal(SIGKILL);
  }

  Status HandleCommand(const std::string& line, bool* exit) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("cmd")) {
      return InvalidArgumentError("executor " + o_.machine + ": bad command: " + line);
    }
    const std::string cmd = j["cmd"].get<std::string>();
    if (cmd == "start") return Start(j);
    if (cmd == "kill") {
      KillRank();
      return OkStatus();
    }
    if (cmd == "exit") {
      KillRank();
      if (run_.proc) run_.proc->Wait();
      *exit = true;
      return OkStatus();
    }
    if (cmd == "dump") {
      nlohmann::json r = {{"type", "dump"}, {"machine", o_.machine}};
      if (!run_.proc) {
        r["error"] = "no rank running";
      } else {
        auto text = DumpStacks(run_.proc->pid(), std::chrono::seconds(15));
        if (text.ok()) {
          r["text"] = *text;
        } else {
          r["error"] = text.status().ToString();
        }
      }
      return conn_->Send(r.dump());
    }
    if (cmd == "selfcheck") {
      SelfCheckResult s = RunSelfCheck(j.value("budget_s", 0.6));
      nlohmann::json r = {{"type", "selfcheck"},        {"machine", o_.machine},
                          {"gemm_gflops", s.gemm_gflops}, {"membw_gbps", s.membw_gbps},
                          {"seconds", s.seconds}};
      return conn_->Send(r.dump());
    }
    return InvalidArgumentError("executor " + o_.machine + ": unknown command '" + cmd + "'");
  }

  Status Start(const nlohmann::json& j) {
    if (run_.proc) {
      KillRank();
      run_.proc->Wait();
      run_.proc.reset();
    }
    run_ = RankRun{};
    run_.attempt = j.at("attempt").get<int>();
    run_.rank = j.at("rank").get<int>();
    auto argv = j.at("argv").get<std::vector<std::string>>();
    auto env = j.at("env").get<std::map<std::string, std::string>>();
    env["LOOM_MONITOR_SOCKET"] = rx_->path();
    run_.proc = std::make_unique<comm::Subprocess>();
    Status s = run_.proc->Start(argv, env, /*capture_output=*/true);
    if (!s.ok()) {
      run_.proc.reset();
      nlohmann::json r = {{"type", "exit"}, {"machine", o_.machine}, {"attempt", run_.attempt},
                          {"rank", run_.rank}, {"code", 127}, {"text", s.ToString()}};
      return conn_->Send(r.dump());
    }
    return OkStatus();
  }

  const ExecutorOptions& o_;
  std::unique_ptr<LineConnection> conn_;
  std::unique_ptr<monitor::AppReceiver> rx_;
  RankRun run_;
  std::vector<std::string> log_hits_;
  std::regex keywords_;
};

}  // namespace

Status RunExecutor(const ExecutorOptions& options) {
  if (options.machine.empty()) return InvalidArgumentError("executor needs a machine name");
  std::string host;
  int port = 0;
  LOOM_RETURN_IF_ERROR(ParseHostPort(options.driver, &host, &port));
  LOOM_ASSIGN_OR_RETURN(auto conn, ConnectLine(host, port, std::chrono::seconds(30)));
  const std::string sock = options.socket_dir + "/loom-app-" + options.machine + "-" +
                           std::to_string(getpid()) + ".sock";
  LOOM_ASSIGN_OR_RETURN(auto rx, monitor::AppReceiver::Bind(sock));
  Executor ex(options, std::move(conn), std::move(rx));
  return ex.Run();
}

}  // namespace loom::robust
