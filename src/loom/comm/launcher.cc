#include "loom/comm/launcher.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "loom/base/clock.h"
#include "loom/base/logging.h"

namespace loom::comm {
namespace {

volatile sig_atomic_t g_pending_signal = 0;

void OnSignal(int sig) { g_pending_signal = sig; }

// Installs the forwarding handlers for the duration of Launch().
class SignalForwarding {
 public:
  SignalForwarding() {
    g_pending_signal = 0;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalForwarding() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

int FreeTcpPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 29500;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string RandomId() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

// Splits a rank's byte stream into lines and writes them with a prefix, one write(2) per line.
class LinePrefixer {
 public:
  LinePrefixer(int out_fd, std::string prefix) : out_fd_(out_fd), prefix_(std::move(prefix)) {}
  void Feed(const char* data, size_t n) {
    pending_.append(data, n);
    size_t start = 0, nl;
    while ((nl = pending_.find('\n', start)) != std::string::npos) {
      Emit(std::string_view(pending_).substr(start, nl - start + 1));
      start = nl + 1;
    }
    pending_.erase(0, start);
  }
  void Flush() {
    if (!pending_.empty()) Emit(pending_ + "\n");
    pending_.clear();
  }

 private:
  void Emit(std::string_view line) {
    std::string s = prefix_;
    s.append(line);
    const char* p = s.data();
    size_t left = s.size();
    while (left > 0) {
      ssize_t w = ::write(out_fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        return;  // our stdout is gone; keep supervising anyway
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
  int out_fd_;
  std::string prefix_;
  std::string pending_;
};

struct Rank {
  Subprocess proc;
  std::unique_ptr<LinePrefixer> out, err;
  std::optional<RankExit> exit;
};

// Reads whatever is available on the ranks' pipes, waiting at most `wait_ms`.
void PumpOutput(std::vector<Rank>& ranks, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, bool>> who;  // rank, is_stdout
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    if (ranks[r].proc.stdout_fd() >= 0) {
      fds.push_back({ranks[r].proc.stdout_fd(), POLLIN, 0});
      who.push_back({r, true});
    }
    if (ranks[r].proc.stderr_fd() >= 0) {
      fds.push_back({ranks[r].proc.stderr_fd(), POLLIN, 0});
      who.push_back({r, false});
    }
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  int n = ::poll(fds.data(), fds.size(), wait_ms);
  if (n <= 0) return;
  char buf[1 << 16];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    auto [r, is_out] = who[i];
    ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
    LinePrefixer* p = is_out ? ranks[r].out.get() : ranks[r].err.get();
    if (got > 0) {
      p->Feed(buf, static_cast<size_t>(got));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      p->Flush();
      if (is_out) {
        ranks[r].proc.CloseStdout();
      } else {
        ranks[r].proc.CloseStderr();
      }
    }
  }
}

}  // namespace

Result<LaunchResult> Launch(const LaunchOptions& options) {
  if (options.nproc < 1) return InvalidArgumentError("nproc must be >= 1");
  if (options.argv.empty()) return InvalidArgumentError("no command to launch");

  std::string run_id = options.run_id.empty() ? "run-" + RandomId() : options.run_id;
  std::string store_url = options.store_url;
  std::string owned_store_dir;
  if (store_url.empty()) {
    owned_store_dir = (std::filesystem::temp_directory_path() / ("loom-rdzv-" + run_id)).string();
    std::error_code ec;
    std::filesystem::create_directories(owned_store_dir, ec);
    if (ec) return InternalError("cannot create store directory " + owned_store_dir);
    store_url = "file://" + owned_store_dir;
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string threads = std::to_string(std::max(1u, cores / static_cast<unsigned>(options.nproc)));
  int master_port = options.torch_env ? FreeTcpPort() : 0;

  SignalForwarding forwarding;
  auto start = SteadyClock::now();
  std::vector<Rank> ranks(options.nproc);
  for (int r = 0; r < options.nproc; ++r) {
    std::map<std::string, std::string> env = options.env;
    env["LOOM_RANK"] = std::to_string(r);
    env["LOOM_WORLD_SIZE"] = std::to_string(options.nproc);
    env["LOOM_LOCAL_RANK"] = std::to_string(r);
    env["LOOM_LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
    env["LOOM_STORE"] = store_url;
    env["LOOM_RUN_ID"] = run_id;
    env["PYTHONUNBUFFERED"] = "1";
    for (const char* v : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
      if (!env.count(v) && std::getenv(v) == nullptr) env[v] = threads;
    }
    if (options.torch_env) {
      env["RANK"] = std::to_string(r);
      env["WORLD_SIZE"] = std::to_string(options.nproc);
      env["LOCAL_RANK"] = std::to_string(r);
      env["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(master_port);
    }
    std::string prefix = options.prefix_output ? "[rank " + std::to_string(r) + "] " : "";
    ranks[r].out = std::make_unique<LinePrefixer>(options.stdout_fd, prefix);
    ranks[r].err = std::make_unique<LinePrefixer>(options.stderr_fd, prefix);
    Status s = ranks[r].proc.Start(options.argv, env);
    if (!s.ok()) {
      for (int q = 0; q < r; ++q) ranks[q].proc.Signal(SIGKILL);
      return s.WithContext("starting rank " + std::to_string(r));
    }
  }

  LaunchResult result;
  std::optional<SteadyClock::time_point> kill_at, term_at;
  std::string stop_reason;
  auto stop_all = [&](int sig, const std::string& why) {
    if (stop_reason.empty()) stop_reason = why;
    for (auto& rk : ranks) rk.proc.Signal(sig);
    if (!kill_at) kill_at = SteadyClock::now() + options.grace;
  };

  int alive = options.nproc;
  int forwarded = 0;
  while (alive > 0 || std::any_of(ranks.begin(), ranks.end(), [](const Rank& rk) {
           return rk.proc.stdout_fd() >= 0 || rk.proc.stderr_fd() >= 0;
         })) {
    PumpOutput(ranks, 50);
    if (int sig = g_pending_signal; sig != 0 && sig != forwarded) {
      forwarded = sig;
      stop_all(sig, std::string("launcher received ") + strsignal(sig));
      if (!result.first_failure) result.exit_code = 128 + sig;
    }
    double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
    for (int r = 0; r < options.nproc; ++r) {
      if (ranks[r].exit) continue;
      auto st = ranks[r].proc.Poll();
      if (!st) continue;
      ranks[r].exit = RankExit{r, *st, elapsed};
      --alive;
      if (!st->ok() && !result.first_failure && stop_reason.empty()) {
        result.first_failure = r;
        result.exit_code = st->ShellCode();
        term_at = SteadyClock::now() + options.report_window;
      }
    }
    if (term_at && SteadyClock::now() >= *term_at && stop_reason.empty()) {
      stop_all(SIGTERM, "rank " + std::to_string(*result.first_failure) + " failed");
    }
    if (options.timeout.count() > 0 && stop_reason.empty() &&
        SteadyClock::now() - start > options.timeout) {
      result.exit_code = 124;
      stop_all(SIGTERM, "job exceeded the launcher timeout of " +
                            std::to_string(options.timeout.count() / 1000.0) + " s");
    }
    if (kill_at && SteadyClock::now() > *kill_at) {
      for (auto& rk : ranks) rk.proc.Signal(SIGKILL);
      kill_at = SteadyClock::now() + std::chrono::hours(1);
    }
    if (alive == 0) {
      // Children are gone; any grandchild still holding a pipe was killed with the group.
      PumpOutput(ranks, 0);
      for (auto& rk : ranks) {
        rk.out->Flush();
        rk.err->Flush();
        rk.proc.CloseStdout();
        rk.proc.CloseStderr();
      }
    }
  }

  for (auto& rk : ranks) result.ranks.push_back(*rk.exit);
  if (result.first_failure) {
    const RankExit& f = result.ranks[*result.first_failure];
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", f.seconds);
    result.message = "rank " + std::to_string(f.rank) + " (pid " +
                     std::to_string(ranks[f.rank].proc.pid()) + ") " + f.status.ToString() +
                     " after " + secs + " s; stopped the other ranks";
  } else if (!stop_reason.empty()) {
    result.message = stop_reason + "; stopped all ranks";
  } else {
    result.message = "all " + std::to_string(options.nproc) + " ranks exited with status 0";
  }
  if (!owned_store_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(owned_store_dir, ec);
  }
  return result;
}

}  // namespace loom::comm
