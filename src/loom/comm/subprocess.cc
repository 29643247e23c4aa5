#include "loom/comm/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace loom::comm {

std::string ExitStatus::ToString() const {
  if (signal) {
    const char* name = strsignal(signal);
    return "was killed by signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")";
  }
  return "exited with status " + std::to_string(code);
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_) {
    ::kill(-pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  CloseStdout();
  CloseStderr();
}

void Subprocess::CloseStdout() {
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
}

void Subprocess::CloseStderr() {
  if (err_fd_ >= 0) ::close(err_fd_);
  err_fd_ = -1;
}

Status Subprocess::Start(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env, bool capture_output) {
  if (argv.empty()) return InvalidArgumentError("empty command");
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (capture_output) {
    if (::pipe2(out, O_CLOEXEC) != 0) return InternalError(std::string("pipe: ") + strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return InternalError(std::string("pipe: ") + strerror(errno));
    }
  }
  // Build argv/envp before fork: only async-signal-safe calls are allowed in the child.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key)) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return InternalError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(126);  // parent died between fork and prctl
    if (capture_output) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
    }
    // Restore default signal dispositions the launcher may have changed.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    const char* msg = "loom: cannot execute ";
    ssize_t ignored = ::write(STDERR_FILENO, msg, strlen(msg));
    ignored = ::write(STDERR_FILENO, cargv[0], strlen(cargv[0]));
    ignored = ::write(STDERR_FILENO, ": ", 2);
    const char* why = strerror(errno);
    ignored = ::write(STDERR_FILENO, why, strlen(why));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent, so Signal() works even before the child runs
  if (capture_output) {
    ::close(out[1]);
    ::close(err[1]);
  }
  pid_ = pid;
  out_fd_ = out[0];
  err_fd_ = err[0];
  return OkStatus();
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0 && !exit_) ::kill(-pid_, sig);
}

ExitStatus Subprocess::Wait() {
  while (!exit_ && pid_ > 0) {
    if (!Reap(0)) return ExitStatus{127, 0};
  }
  return exit_.value_or(ExitStatus{127, 0});
}

std::optional<ExitStatus> Subprocess::Poll() {
  if (exit_ || pid_ <= 0) return exit_;
  Reap(WNOHANG);
  return exit_;
}

bool Subprocess::Reap(int flags) {
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, flags);
  if (r < 0 && errno != EINTR) return false;
  if (r == pid_) {
    ExitStatus e;
    if (WIFEXITED(st)) e.code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) e.signal = WTERMSIG(st);
    exit_ = e;
    // The rank may have left children in its group (e.g. a shell's jobs): stop them too.
    ::kill(-pid_, SIGKILL);
  }
  return true;
}

}  // namespace loom::comm
