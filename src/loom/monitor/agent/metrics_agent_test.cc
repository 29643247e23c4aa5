// MetricsAgent end to end in-process: app messages over a real socket, a watched child process
// that is SIGSTOP'ed, and the exposition validated by promtool.
#include "loom/monitor/agent/metrics_agent.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "loom/monitor/agent/testing/promtool.h"
#include "loom/monitor/app/app_reporter.h"

namespace loom::monitor {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loom_agent_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_; }

 private:
  std::string path_;
};

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(MetricsAgentTest, RejectsTooShortInterval) {
  MetricsAgentOptions o;
  o.interval_ms = 50;
  Result<std::unique_ptr<MetricsAgent>> a = MetricsAgent::Create(o);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("--interval-ms"), std::string::npos);
}

TEST(MetricsAgentTest, ExposesHostAppAndStoppedRankMetricsThatPromtoolAccepts) {
  TempDir dir;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    while (true) ::pause();
  }
  MetricsAgentOptions o;
  o.machine = "m7";
  o.interval_ms = 100;
  o.socket_path = dir.path() + "/agent.sock";
  o.host.pids = {{static_cast<int>(child), 1}};
  Result<std::unique_ptr<MetricsAgent>> created = MetricsAgent::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  MetricsAgent& agent = **created;

  AppReporter r0(o.socket_path, 0), r1(o.socket_path, 1);
  r0.Phase("train");
  r0.Step(41, 0.5, 0.01);
  r0.Collective("allreduce", 4096, 100, 0.002);
  r0.Collective("allreduce", 4096, 101, 0.003);
  r1.Step(40, 0.75, NAN);
  r1.Phase("ckpt_save");
  ASSERT_EQ(r0.dropped() + r1.dropped(), 0);

  ::kill(child, SIGSTOP);
  for (int i = 0; i < 100; ++i) {  // wait until /proc shows the stop
    Result<ProcStat> st = ReadProcStat(child);
    if (st.ok() && st->state == 'T') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  agent.SampleOnce();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  agent.SampleOnce();
  std::string text = agent.Text();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  EXPECT_TRUE(Contains(text, "loom_app_step{machine=\"m7\",rank=\"0\"} 41\n")) << text;
  EXPECT_TRUE(Contains(text, "loom_app_step{machine=\"m7\",rank=\"1\"} 40\n"));
  EXPECT_TRUE(Contains(text, "loom_app_data_wait_seconds{machine=\"m7\",rank=\"1\"} NaN\n"));
  EXPECT_TRUE(Contains(text, "loom_app_last_collective_seq{machine=\"m7\",rank=\"0\"} 101\n"));
  EXPECT_TRUE(Contains(text, "loom_app_collective_bytes_total{machine=\"m7\",rank=\"0\"} 8192\n"));
  EXPECT_TRUE(Contains(text, "loom_app_phase{machine=\"m7\",rank=\"1\",phase=\"ckpt_save\"} 1\n"));
  EXPECT_TRUE(Contains(
      text, "loom_app_last_collective_op{machine=\"m7\",rank=\"0\",op=\"allreduce\"} 1\n"));
  EXPECT_TRUE(Contains(text, "loom_app_messages_received_total{machine=\"m7\"} 6\n"));
  std::string pid = std::to_string(child);
  EXPECT_TRUE(
      Contains(text, "loom_proc_stopped{machine=\"m7\",rank=\"1\",pid=\"" + pid + "\"} 1\n"))
      << text;
  EXPECT_TRUE(Contains(text, "loom_source_available{machine=\"m7\",source=\"proc_stat\"} 1\n"));
  EXPECT_TRUE(Contains(text, "# TYPE loom_host_cpu_busy_ratio gauge\n"));
  EXPECT_EQ(agent.samples(), 2);

  std::map<int, RankAppState> ranks = agent.RankStates();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].last_coll_seq, 101);
  EXPECT_EQ(ranks[1].phase, "ckpt_save");

  testing::PromtoolResult check = testing::PromtoolCheckMetrics(text);
  ASSERT_TRUE(check.found) << check.output;
  EXPECT_TRUE(check.ok) << check.output << "\n" << text;
}

TEST(MetricsAgentTest, RunSamplesAtTheIntervalAndDrainsInBetween) {
  TempDir dir;
  MetricsAgentOptions o;
  o.machine = "m0";
  o.interval_ms = 100;
  o.socket_path = dir.path() + "/agent.sock";
  Result<std::unique_ptr<MetricsAgent>> created = MetricsAgent::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    AppReporter r(o.socket_path, 2);
    for (int i = 0; i < 20; ++i) {
      r.Step(i, 0.01, 0.0);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  (*created)->Run([&] { return stop.load(); }, 0.45);
  sender.join();
  (*created)->DrainApp();
  EXPECT_GE((*created)->samples(), 3);  // t = 0, 0.1, 0.2, 0.3, 0.4 (scheduling may skip one)
  EXPECT_LE((*created)->samples(), 5);
  EXPECT_EQ((*created)->RankStates()[2].step, 19);
}

TEST(MetricsAgentTest, WithoutSocketAppChannelIsReportedUnavailable) {
  MetricsAgentOptions o;
  o.machine = "m0";
  Result<std::unique_ptr<MetricsAgent>> created = MetricsAgent::Create(o);
  ASSERT_TRUE(created.ok());
  (*created)->SampleOnce();
  EXPECT_TRUE(Contains((*created)->Text(), "loom_app_channel_available{machine=\"m0\"} 0\n"));
}

}  // namespace
}  // namespace loom::monitor
