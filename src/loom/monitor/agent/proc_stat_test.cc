#include "loom/monitor/agent/proc_stat.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace loom::monitor {
namespace {

TEST(ProcStatTest, ParsesCommWithSpacesAndParens) {
  // pid (comm) state ppid ... utime=14 stime=15 ... rss=24
  std::string line =
      "4242 (my (weird) name) T 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 123 "
      "1000000 512 18446744073709551615\n";
  Result<ProcStat> st = ParseProcStat(line, 100, 4096);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->state, 'T');
  EXPECT_DOUBLE_EQ(st->cpu_seconds, 3.0);  // (250 + 50) / 100
  EXPECT_EQ(st->rss_bytes, 512 * 4096);
  EXPECT_EQ(IsStoppedState(st->state), 1);
  EXPECT_EQ(IsStoppedState('S'), 0);
}

TEST(ProcStatTest, MalformedLinesNameTheProblem) {
  EXPECT_NE(ParseProcStat("12 S 1", 100, 4096).status().message().find("comm"), std::string::npos);
  EXPECT_NE(ParseProcStat("12 (x) S 1 2 3", 100, 4096).status().message().find("need 24"),
            std::string::npos);
  EXPECT_NE(ParseProcStat("x (y) S", 100, 4096).status().message().find("pid"), std::string::npos);
  std::string bad_utime = "1 (a) R 1 1 1 0 -1 0 0 0 0 0 x 5 0 0 20 0 1 0 1 1 1";
  EXPECT_NE(ParseProcStat(bad_utime, 100, 4096).status().message().find("field 14"),
            std::string::npos);
}

Result<ProcStat> WaitForState(int pid, char want) {
  Result<ProcStat> st = ReadProcStat(pid);
  for (int i = 0; i < 200 && st.ok() && st->state != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    st = ReadProcStat(pid);
  }
  return st;
}

TEST(ProcStatTest, SeesAStoppedChildAndItsResume) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    while (true) ::pause();
  }
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  Result<ProcStat> stopped = WaitForState(child, 'T');
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->state, 'T');
  EXPECT_EQ(stopped->pid, child);
  EXPECT_GT(stopped->rss_bytes, 0);
  EXPECT_GE(stopped->cpu_seconds, 0);

  ASSERT_EQ(::kill(child, SIGCONT), 0);
  Result<ProcStat> resumed = WaitForState(child, 'S');
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->state, 'S');  // back in pause()

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  Result<ProcStat> gone = ReadProcStat(child);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status();
}

TEST(ProcStatTest, ReadsItself) {
  Result<ProcStat> self = ReadProcStat(static_cast<int>(::getpid()));
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_EQ(self->state, 'R');
  EXPECT_GT(self->rss_bytes, 0);
}

}  // namespace
}  // namespace loom::monitor
