#include "loom/comm/launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"

namespace loom::comm {
namespace {

struct Captured {
  LaunchResult result;
  std::string out;
  double seconds;
};

Captured RunLaunch(LaunchOptions o) {
  std::string path = ::testing::TempDir() + "/launch_out_" + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "w+");
  o.stdout_fd = fileno(f);
  o.stderr_fd = fileno(f);
  Stopwatch sw;
  auto r = Launch(o);
  double secs = sw.Seconds();
  std::fclose(f);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return {r.ok() ? *r : LaunchResult{}, *ReadFileToString(path), secs};
}

TEST(LauncherTest, EveryRankGetsItsEnvironmentAndPrefixedOutput) {
  LaunchOptions o;
  o.nproc = 3;
  o.torch_env = true;
  o.argv = {"/bin/sh", "-c",
            "echo \"r=$LOOM_RANK w=$LOOM_WORLD_SIZE t=$RANK/$WORLD_SIZE s=${LOOM_STORE%%/loom-*}\"; "
            "test -d \"${LOOM_STORE#file://}\" && echo store-ok; printf partial"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 0);
  EXPECT_FALSE(c.result.first_failure);
  for (int r = 0; r < 3; ++r) {
    std::string p = "[rank " + std::to_string(r) + "] ";
    EXPECT_NE(c.out.find(p + "r=" + std::to_string(r) + " w=3 t=" + std::to_string(r) + "/3"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find(p + "store-ok"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find(p + "partial\n"), std::string::npos) << c.out;  // unterminated line
  }
  EXPECT_EQ(c.result.ranks.size(), 3u);
}

TEST(LauncherTest, FailedRankStopsOthersAndIsNamed) {
  LaunchOptions o;
  o.nproc = 3;
  o.grace = std::chrono::milliseconds(500);
  o.report_window = std::chrono::milliseconds(200);
  o.argv = {"/bin/sh", "-c", "if [ $LOOM_RANK = 1 ]; then sleep 0.2; exit 3; fi; sleep 60"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 3);
  ASSERT_TRUE(c.result.first_failure);
  EXPECT_EQ(*c.result.first_failure, 1);
  EXPECT_NE(c.result.message.find("rank 1"), std::string::npos) << c.result.message;
  EXPECT_NE(c.result.message.find("exited with status 3"), std::string::npos) << c.result.message;
  EXPECT_LT(c.seconds, 10.0);  // the sleepers were stopped, not waited for
  EXPECT_EQ(c.result.ranks[0].status.signal, SIGTERM);
}

TEST(LauncherTest, KilledRankReportsSignal) {
  LaunchOptions o;
  o.nproc = 2;
  o.grace = std::chrono::milliseconds(300);
  o.report_window = std::chrono::milliseconds(100);
  o.argv = {"/bin/sh", "-c", "if [ $LOOM_RANK = 0 ]; then kill -9 $$; fi; sleep 60"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 128 + 9);
  EXPECT_EQ(*c.result.first_failure, 0);
  EXPECT_NE(c.result.message.find("killed by signal 9"), std::string::npos) << c.result.message;
}

TEST(LauncherTest, RankIgnoringSigtermIsKilledAfterGrace) {
  LaunchOptions o;
  o.nproc = 2;
  o.grace = std::chrono::milliseconds(300);
  o.report_window = std::chrono::milliseconds(100);
  o.argv = {"/bin/sh", "-c", "trap '' TERM; if [ $LOOM_RANK = 1 ]; then exit 5; fi; sleep 30"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 5);
  EXPECT_LT(c.seconds, 10.0);
  EXPECT_EQ(c.result.ranks[0].status.signal, SIGKILL);
}

TEST(LauncherTest, SurvivorsGetTimeToReportBeforeTheyAreStopped) {
  LaunchOptions o;
  o.nproc = 2;
  o.report_window = std::chrono::milliseconds(3000);
  // Rank 0 notices rank 1's failure after 0.3 s and exits with its own message.
  o.argv = {"/bin/sh", "-c",
            "if [ $LOOM_RANK = 1 ]; then exit 4; fi; sleep 0.3; echo 'peer rank 1 is gone'; exit 1"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 4);
  EXPECT_EQ(*c.result.first_failure, 1);
  EXPECT_NE(c.out.find("[rank 0] peer rank 1 is gone"), std::string::npos) << c.out;
  EXPECT_EQ(c.result.ranks[0].status.code, 1);  // exited on its own, not by SIGTERM
  EXPECT_LT(c.seconds, 2.5);
}

TEST(LauncherTest, ForwardsSigintToEveryRank) {
  LaunchOptions o;
  o.nproc = 2;
  o.grace = std::chrono::milliseconds(2000);
  // Each rank reports the signal it receives, then exits.
  o.argv = {"/bin/sh", "-c", "trap 'echo got INT; exit 3' INT; sleep 30 & wait"};
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(::getpid(), SIGINT);  // as a Ctrl-C at the terminal would
  });
  Captured c = RunLaunch(o);
  interrupter.join();
  EXPECT_EQ(c.result.exit_code, 128 + SIGINT);
  EXPECT_NE(c.out.find("[rank 0] got INT"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("[rank 1] got INT"), std::string::npos) << c.out;
  EXPECT_LT(c.seconds, 10.0);
}

TEST(LauncherTest, MissingCommandIs127) {
  LaunchOptions o;
  o.nproc = 1;
  o.argv = {"/nonexistent/loom-no-such-binary"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 127);
  EXPECT_NE(c.out.find("cannot execute"), std::string::npos) << c.out;
}

TEST(LauncherTest, JobTimeout) {
  LaunchOptions o;
  o.nproc = 2;
  o.timeout = std::chrono::milliseconds(300);
  o.grace = std::chrono::milliseconds(300);
  o.argv = {"/bin/sh", "-c", "sleep 30"};
  Captured c = RunLaunch(o);
  EXPECT_EQ(c.result.exit_code, 124);
  EXPECT_NE(c.result.message.find("timeout"), std::string::npos) << c.result.message;
  EXPECT_LT(c.seconds, 10.0);
}

}  // namespace
}  // namespace loom::comm
