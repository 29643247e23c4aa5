// Test helper: a forked child process that sleeps or spins until the test ends, killed and
// reaped by the destructor (so a failing test leaves no process behind).
//
//   TestChild child(TestChild::kBusy);
//   ... inject into child.pid() ...
//   int status = child.Wait();   // waitpid status, or use the destructor
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace loom::monitor {

class TestChild {
 public:
  enum Kind { kSleep, kBusy };
  explicit TestChild(Kind kind) {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (kind == kBusy) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      for (;;) ::pause();
    }
  }
  ~TestChild() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::kill(pid_, SIGCONT);
      Wait();
    }
  }
  TestChild(const TestChild&) = delete;
  TestChild& operator=(const TestChild&) = delete;

  int pid() const { return pid_; }
  // Blocks until the child exits; returns the waitpid status.
  int Wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return status;
  }

 private:
  int pid_ = -1;
  bool reaped_ = false;
};

}  // namespace loom::monitor
