// Tests of the robust driver's parts: command rewriting, blocklist, line channel, self-check
// verdicts, stack dumps of a stopped process, and restore-point selection with a corrupt step.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loom/ckpt/checkpointer.h"
#include "loom/ckpt/storage.h"
#include "loom/ckpt/testing/test_util.h"
#include "loom/robust/blocklist.h"
#include "loom/robust/line_channel.h"
#include "loom/robust/live_fleet.h"
#include "loom/robust/restore_point.h"
#include "loom/robust/self_check.h"
#include "loom/robust/stack_dump.h"
#include "loom/robust/straggler_score.h"
#include "loom/robust/train_command.h"

namespace loom::robust {
namespace {

namespace fs = std::filesystem;
using ckpt::testing::ScratchDir;

TEST(TrainCommandTest, PinsRunDirAndAddsResume) {
  auto c = TrainCommand::Make({"loom", "train", "steps=40", "resume=auto"}, "/bin/loom", "r/train");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->is_loom_train());
  EXPECT_EQ(c->argv(), (std::vector<std::string>{"/bin/loom", "train", "steps=40", "resume=auto",
                                                 "run_dir=r/train"}));
  EXPECT_EQ(c->checkpoint_roots(), std::vector<std::string>{"r/train/ckpt"});
  EXPECT_EQ(c->WithResume("r/train/ckpt/step_00000020"),
            (std::vector<std::string>{"/bin/loom", "train", "steps=40", "run_dir=r/train",
                                      "resume=r/train/ckpt/step_00000020"}));
  EXPECT_EQ(c->WithResume(""), c->argv());
}

TEST(TrainCommandTest, KnowsBothCheckpointTiersAndRefusesNproc) {
  auto c = TrainCommand::Make({"loom", "train", "run_dir=/x", "ckpt.dir=/dev/shm/c",
                               "ckpt.persist_dir=/data/c"},
                              "/bin/loom", "unused");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->checkpoint_roots(), (std::vector<std::string>{"/dev/shm/c", "/data/c"}));
  auto bad = TrainCommand::Make({"loom", "train", "--nproc", "2"}, "/bin/loom", "r");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("--machines"), std::string::npos);
  auto other = TrainCommand::Make({"python3", "train.py"}, "/bin/loom", "r");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->is_loom_train());
  EXPECT_EQ(other->WithResume("/x/step_1"), other->argv());
}

TEST(BlocklistTest, PersistsAcrossOpens) {
  ScratchDir dir;
  const std::string path = dir.path() + "/blocklist.json";
  {
    auto bl = Blocklist::Open(path);
    ASSERT_TRUE(bl.ok());
    EXPECT_FALSE((*bl)->Contains("m1"));
    ASSERT_TRUE((*bl)->Add("m1", "node-1", "stopped").ok());
    ASSERT_TRUE((*bl)->Add("m1", "node-1", "again").ok());
  }
  auto bl = Blocklist::Open(path);
  ASSERT_TRUE(bl.ok());
  EXPECT_TRUE((*bl)->Contains("m1"));
  ASSERT_EQ((*bl)->entries().size(), 1u);
  EXPECT_EQ((*bl)->entries()[0].reason, "stopped");
  std::ofstream(path) << "{not json";
  auto broken = Blocklist::Open(path);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().ToString().find(path), std::string::npos);
}

TEST(LineChannelTest, DeliversLinesBothWaysAndSeesClose) {
  auto listener = LineListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto client = ConnectLine("127.0.0.1", (*listener)->port(), std::chrono::seconds(5));
  ASSERT_TRUE(client.ok()) << client.status();
  std::unique_ptr<LineConnection> server;
  for (int i = 0; i < 100 && !server; ++i) {
    auto s = (*listener)->Accept();
    if (s.ok()) server = std::move(*s);
    else usleep(10000);
  }
  ASSERT_TRUE(server);
  const std::string big(100000, 'x');
  ASSERT_TRUE((*client)->Send("one").ok());
  ASSERT_TRUE((*client)->Send(big).ok());
  std::vector<std::string> lines;
  for (int i = 0; i < 200 && lines.size() < 2; ++i) {
    ASSERT_TRUE(server->ReadLines(&lines));
    usleep(5000);
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "one");
  EXPECT_EQ(lines[1], big);
  client->reset();
  bool open = true;
  for (int i = 0; i < 200 && open; ++i) {
    open = server->ReadLines(&lines);
    usleep(5000);
  }
  EXPECT_FALSE(open);
  std::string host;
  int port = 0;
  EXPECT_TRUE(ParseHostPort("10.0.0.1:7070", &host, &port).ok());
  EXPECT_EQ(host, "10.0.0.1");
  EXPECT_EQ(port, 7070);
  EXPECT_FALSE(ParseHostPort("10.0.0.1", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("h:70x", &host, &port).ok());
}

TEST(SelfCheckTest, FlagsTheMachineBelowTheFleetMedian) {
  SelfCheckResult r = RunSelfCheck(0.2);
  EXPECT_GT(r.gemm_gflops, 0.1);
  EXPECT_GT(r.membw_gbps, 0.1);
  std::map<std::string, SelfCheckResult> fleet = {{"m0", {10, 20, 1}}, {"m1", {9.5, 21, 1}},
                                                  {"m2", {10.2, 19, 1}}, {"m3", {4.0, 20, 1}}};
  std::vector<std::string> evidence;
  auto failing = FailingSelfChecks(fleet, 0.75, &evidence);
  EXPECT_EQ(failing, std::vector<std::string>{"m3"});
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_NE(evidence[0].find("GEMM 4.00 GFLOP/s"), std::string::npos) << evidence[0];
}

TEST(StragglerScoreTest, NamesTheMachineWithTheLongestComputeTime) {
  StragglerScore s({.window = 4, .min_samples = 3, .threshold = 0.75});
  for (int i = 0; i < 3; ++i) {
    s.Add("m0", 0.10 + 0.01 * i);
    s.Add("m1", 0.11);
    s.Add("m2", 0.30);  // throttled: 3x the compute time
  }
  s.Add("m3", 0.1);  // too few samples: no score
  s.Add("m0", std::nan(""));  // ignored
  auto scores = s.Scores();
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_DOUBLE_EQ(scores["m0"], 1.0);
  EXPECT_NEAR(scores["m1"], 0.11 / 0.11, 1e-12);
  EXPECT_NEAR(scores["m2"], 0.11 / 0.30, 1e-12);
  EXPECT_NEAR(s.MedianOf("m0"), 0.11, 1e-12);
  // The window forgets: after four fast samples m2 is no straggler any more.
  for (int i = 0; i < 4; ++i) s.Add("m2", 0.1);
  EXPECT_GT(s.Scores()["m2"], 0.75);
  StragglerScore alone({});
  for (int i = 0; i < 8; ++i) alone.Add("m0", 1.0);
  EXPECT_TRUE(alone.Scores().empty()) << "one machine has no peers to compare with";
}

TEST(StackDumpTest, DumpsAStoppedProcess) {
  pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  ASSERT_GT(child, 0);
  usleep(100000);
  kill(child, SIGSTOP);
  auto text = DumpStacks(child, std::chrono::seconds(20));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("PID " + std::to_string(child)), std::string::npos) << *text;
  EXPECT_NE(text->find("TID"), std::string::npos) << *text;
  auto gone = DumpStacks(child, std::chrono::seconds(5));
  EXPECT_FALSE(gone.ok());
}

// Two committed steps; the newer one's data is corrupted: the older one is picked.
TEST(RestorePointTest, SkipsAStepWhoseChecksumsFail) {
  ScratchDir dir;
  auto storage = ckpt::NewPosixStorage();
  std::vector<float> w = ckpt::testing::RangeValues(1, 0, 4096);
  for (int64_t step : {10, 20}) {
    ckpt::Checkpointer c(storage.get(), dir.path() + "/ckpt", nullptr);
    ckpt::StateDict d;
    d.AddFull("w", DType::kF32, {4096}, w.data(), false);
    auto h = c.Save(step, d);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->Wait().ok());
  }
  std::vector<std::string> rejected;
  auto p = PickRestorePoint({dir.path() + "/ckpt", dir.path() + "/missing"}, &rejected);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->step, 20);
  EXPECT_TRUE(rejected.empty());
  // Flip a byte in the largest file of step 20 (its tensor data).
  std::string biggest;
  uintmax_t size = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() + "/ckpt/step_00000020")) {
    if (e.is_regular_file() && e.file_size() > size) {
      size = e.file_size();
      biggest = e.path().string();
    }
  }
  ASSERT_FALSE(biggest.empty());
  {
    std::fstream f(biggest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  rejected.clear();
  p = PickRestorePoint({dir.path() + "/ckpt"}, &rejected);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->step, 10);
  EXPECT_GT(p->verified_objects, 0);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("step_00000020"), std::string::npos) << rejected[0];
  rejected.clear();
  p = PickRestorePoint({dir.path() + "/none"}, &rejected);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->path.empty());
}

}  // namespace
}  // namespace loom::robust

namespace loom::robust {
namespace {

TEST(LiveFleetTest, AlignsHeartbeatsToSecondsWithMissingAsNan) {
  LiveFleet fleet({"m0", "m1"}, /*horizon_s=*/5, /*start_s=*/100.0);
  Heartbeat hb;
  hb.state = 'R';
  for (int t = 0; t < 8; ++t) {
    hb.machine = "m0";
    hb.cpu_rate = 0.5 + t;
    hb.compute_s = 0.1;
    hb.coll_bytes = 1000 * t;
    fleet.Add(hb, 100.2 + t);
    if (t != 6) {  // m1 reports nothing in second 6
      hb.machine = "m1";
      hb.cpu_rate = 2.0;
      hb.compute_s = -1;  // not reported
      hb.coll_bytes = 0;
      fleet.Add(hb, 100.3 + t);
    }
  }
  monitor::FleetSeries s = fleet.Series(108.0);  // seconds 0..7 complete; horizon keeps 3..7
  ASSERT_EQ(s.seconds, 5);
  ASSERT_EQ(s.metrics(), 3);
  EXPECT_FLOAT_EQ(s.at(0, 0, 4), 7.5f);  // m0 cpu at second 7
  EXPECT_FLOAT_EQ(s.at(0, 0, 0), 3.5f);  // second 3
  EXPECT_FLOAT_EQ(s.at(1, 0, 4), 0.1f);
  EXPECT_FLOAT_EQ(s.at(2, 0, 4), 1000.0f);  // bytes per second
  EXPECT_TRUE(std::isnan(s.at(0, 1, 3))) << "m1 was silent in second 6: missing, not zero";
  EXPECT_FLOAT_EQ(s.at(0, 1, 4), 2.0f);
  EXPECT_TRUE(std::isnan(s.at(1, 1, 4))) << "compute_s -1 means not reported";
}

}  // namespace
}  // namespace loom::robust
