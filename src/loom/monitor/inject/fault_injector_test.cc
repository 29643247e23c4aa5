// Unprivileged tests of fault injection: spec validation (errors name the flag), tc rates, the
// command runner, and the signal faults (stop, kill) on forked children with the ground-truth log.
#include "loom/monitor/inject/fault_injector.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/process_target.h"
#include "loom/monitor/inject/stale_cleanup.h"
#include "loom/monitor/inject/tc_rate.h"
#include "loom/monitor/inject/test_child.h"

namespace loom::monitor {
namespace {

int64_t WallMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Polls /proc/PID/stat until the state is one of `states` (signals are delivered asynchronously).
char WaitForState(int pid, const std::string& states) {
  char last = '?';
  for (int i = 0; i < 200; ++i) {
    auto s = ProcState(pid);
    if (s.ok()) last = *s;
    if (states.find(last) != std::string::npos) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return last;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string TempLog(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/inject_" + std::to_string(::getpid()) + "_" + name + ".jsonl";
  ::unlink(path.c_str());
  return path;
}

FaultSpec PidSpec(const std::string& type, int pid) {
  FaultSpec s;
  s.type = type;
  s.pid = pid;
  return s;
}

void ExpectInvalid(const FaultSpec& spec, const std::string& names) {
  Status s = ValidateFaultSpec(spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(names), std::string::npos) << s;
}

TEST(ValidateFaultSpecTest, ErrorsNameTheFlag) {
  ExpectInvalid(PidSpec("hang", 42), "--fault");
  ExpectInvalid(PidSpec("stop", 0), "--pid");
  ExpectInvalid(PidSpec("stop", -3), "--pid");
  FaultSpec s = PidSpec("cpu_quota", 42);
  ExpectInvalid(s, "--cpu-fraction");
  s.cpu_fraction = 65;
  ExpectInvalid(s, "--cpu-fraction");
  s = PidSpec("mem_limit", 42);
  s.mem_bytes = 100;
  ExpectInvalid(s, "--mem");
  s = PidSpec("kill", 42);
  s.duration_s = 5;
  ExpectInvalid(s, "--duration");
  s = PidSpec("stop", 42);
  s.duration_s = -1;
  ExpectInvalid(s, "--duration");
  s = PidSpec("stop", 42);
  s.dev = "eth0";
  ExpectInvalid(s, "--dev");
  s = PidSpec("stop", 42);
  s.rate = "10mbit";
  ExpectInvalid(s, "--rate");
  FaultSpec n;
  n.type = "tbf";
  ExpectInvalid(n, "--dev");
  n.dev = "veth0";
  ExpectInvalid(n, "--rate");
  n.rate = "fast";
  ExpectInvalid(n, "--rate");
  n.rate = "10mbit";
  EXPECT_TRUE(ValidateFaultSpec(n).ok());
  n.pid = 7;
  ExpectInvalid(n, "--pid");
  FaultSpec d;
  d.type = "drop";
  d.dev = "veth0";
  d.drop_fraction = 1.5;
  ExpectInvalid(d, "--drop");
  d.drop_fraction = 0.05;
  EXPECT_TRUE(ValidateFaultSpec(d).ok());
  d.cpu_fraction = 0.5;
  ExpectInvalid(d, "--cpu-fraction");
}

TEST(TcRateTest, ParsesTcUnits) {
  EXPECT_DOUBLE_EQ(ParseTcRate("10mbit").value(), 1e7);
  EXPECT_DOUBLE_EQ(ParseTcRate("1gbit").value(), 1e9);
  EXPECT_DOUBLE_EQ(ParseTcRate("125kbps").value(), 1e6);
  EXPECT_DOUBLE_EQ(ParseTcRate("2.5mbit").value(), 2.5e6);
  for (const char* bad : {"", "10", "mbit", "10MiB", "-1mbit", "0mbit", "1bit", "nanmbit"}) {
    EXPECT_EQ(ParseTcRate(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CommandRunnerTest, ExitCodesOutputAndErrors) {
  auto ok = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->exit_code, 3);
  EXPECT_NE(ok->output.find("out"), std::string::npos);
  EXPECT_NE(ok->output.find("err"), std::string::npos);
  auto checked = RunChecked({"sh", "-c", "echo broken; exit 1"});
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("exited 1: broken"), std::string::npos)
      << checked.status();
  EXPECT_EQ(RunCommand({"loom-no-such-tool-xyz"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RunCommand({"sleep", "5"}, "", 100).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(CheckNetns("loom-no-such-netns-xyz").code(), StatusCode::kNotFound);
  EXPECT_EQ(CheckNetns("../etc").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckNetns("").ok());
}

TEST(InjectTest, MissingOrForbiddenPidIsAClearError) {
  int gone;
  {
    TestChild child(TestChild::kSleep);
    gone = child.pid();
  }  // killed and reaped: the pid no longer exists (pids are not reused this fast)
  auto r = Inject(PidSpec("stop", gone));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("pid " + std::to_string(gone) + " does not exist"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(Inject(PidSpec("kill", 1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Inject(PidSpec("stop", ::getpid())).status().code(), StatusCode::kInvalidArgument);
}

TEST(InjectTest, StopPutsTargetInStateTAndRevertResumesIt) {
  TestChild child(TestChild::kSleep);
  ASSERT_EQ(WaitForState(child.pid(), "S"), 'S');
  const std::string log = TempLog("stop");
  FaultSpec spec = PidSpec("stop", child.pid());
  spec.duration_s = 0.2;
  spec.log_path = log;
  const int64_t before = WallMsNow();
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  EXPECT_EQ(WaitForState(child.pid(), "T"), 'T');
  EXPECT_FALSE((*inj)->reverted());
  EXPECT_EQ((*inj)->end_ms(), -1);
  ASSERT_TRUE((*inj)->Revert().ok());
  const char after = WaitForState(child.pid(), "SR");
  EXPECT_TRUE(after == 'S' || after == 'R') << after;

  const std::vector<std::string> lines = ReadLines(log);
  ASSERT_EQ(lines.size(), 1u);
  const nlohmann::json r = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(r["type"], "stop");
  EXPECT_EQ(r["target"]["pid"], child.pid());
  EXPECT_GE(r["onset_ms"].get<int64_t>(), before);
  EXPECT_GE(r["end_ms"].get<int64_t>(), r["onset_ms"].get<int64_t>());
  EXPECT_LE(r["end_ms"].get<int64_t>(), WallMsNow());
  EXPECT_EQ(r["onset_ms"].get<int64_t>(), (*inj)->onset_ms());
  EXPECT_EQ(r["end_ms"].get<int64_t>(), (*inj)->end_ms());
  EXPECT_DOUBLE_EQ(r["planned_duration_s"].get<double>(), 0.2);
  EXPECT_EQ(r["parameters"]["signal"], "SIGSTOP");
  EXPECT_FALSE(r["host"].get<std::string>().empty());
  EXPECT_EQ(r["revert"], "ok");
  EXPECT_EQ(r["target_alive_at_end"], true);
}

TEST(InjectTest, RevertIsIdempotentAndLogsOnce) {
  TestChild child(TestChild::kSleep);
  const std::string log = TempLog("idem");
  FaultSpec spec = PidSpec("stop", child.pid());
  spec.log_path = log;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  ASSERT_TRUE((*inj)->Revert().ok());
  const int64_t end = (*inj)->end_ms();
  // A second SIGCONT would be harmless; what matters is no second record and the same end time.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE((*inj)->Revert().ok());
  EXPECT_EQ((*inj)->end_ms(), end);
  inj->reset();  // the destructor must not revert or log again either
  EXPECT_EQ(ReadLines(log).size(), 1u);
}

TEST(InjectTest, DestructorReverts) {
  TestChild child(TestChild::kSleep);
  const std::string log = TempLog("dtor");
  {
    FaultSpec spec = PidSpec("stop", child.pid());
    spec.log_path = log;
    auto inj = Inject(spec);
    ASSERT_TRUE(inj.ok()) << inj.status();
    ASSERT_EQ(WaitForState(child.pid(), "T"), 'T');
  }
  const char after = WaitForState(child.pid(), "SR");
  EXPECT_TRUE(after == 'S' || after == 'R') << after;
  const std::vector<std::string> lines = ReadLines(log);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["revert"], "ok");
}

TEST(InjectTest, KillIsSeenByWaitpidAsSigkill) {
  TestChild child(TestChild::kBusy);
  const std::string log = TempLog("kill");
  FaultSpec spec = PidSpec("kill", child.pid());
  spec.log_path = log;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const int status = child.Wait();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  ASSERT_TRUE((*inj)->Revert().ok());  // nothing to undo
  EXPECT_EQ((*inj)->end_ms(), (*inj)->onset_ms());
  const nlohmann::json r = nlohmann::json::parse(ReadLines(log).at(0));
  EXPECT_EQ(r["type"], "kill");
  EXPECT_EQ(r["parameters"]["signal"], "SIGKILL");
  EXPECT_EQ(r["target_alive_at_end"], false);
  EXPECT_DOUBLE_EQ(r["duration_s"].get<double>(), 0.0);
}

TEST(InjectTest, RecordBeforeRevertHasNullEnd) {
  TestChild child(TestChild::kSleep);
  auto inj = Inject(PidSpec("stop", child.pid()));
  ASSERT_TRUE(inj.ok()) << inj.status();
  const nlohmann::json r = nlohmann::json::parse((*inj)->RecordJson());
  EXPECT_TRUE(r["end_ms"].is_null());
  EXPECT_TRUE(r["revert"].is_null());
  EXPECT_EQ(r["target"]["pid"], child.pid());
}

TEST(InjectTest, UnwritableLogIsReportedButFaultStillReverted) {
  TestChild child(TestChild::kSleep);
  FaultSpec spec = PidSpec("stop", child.pid());
  spec.log_path = "/nonexistent-dir-loom/x.jsonl";
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  ASSERT_EQ(WaitForState(child.pid(), "T"), 'T');
  Status s = (*inj)->Revert();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir-loom/x.jsonl"), std::string::npos) << s;
  const char after = WaitForState(child.pid(), "SR");
  EXPECT_TRUE(after == 'S' || after == 'R') << after;
}

TEST(StaleCleanupTest, InjectorPidIsReadBackFromTheNamesInjectGives) {
  EXPECT_EQ(InjectorPidOf("loom-inject-12-345-0"), 345);
  EXPECT_EQ(InjectorPidOf("loom_inject_345_7"), 345);
  EXPECT_EQ(InjectorPidOf(internal::UniqueInjectionName("loom-inject-", "4242")), ::getpid());
  std::string table = internal::UniqueInjectionName("loom_inject_", "");
  for (char& c : table) c = c == '-' ? '_' : c;
  EXPECT_EQ(InjectorPidOf(table), ::getpid());
  for (const char* other :
       {"loom-inject-12-345", "loom-inject-a-345-0", "system.slice", "loom_inject_x_1",
        "loom_inject_1_2_3", "loom-inject-1-2-3-4", "user-1000"}) {
    EXPECT_EQ(InjectorPidOf(other), -1) << other;
  }
}

}  // namespace
}  // namespace loom::monitor
