// Root-only tests of the cgroup v1 and network faults on real children, namespaces and veths the
// tests create (names loom-inj-test-<pid>-{a,b}, addresses 10.78.0.{1,2}/24) and remove again.
// Each test skips when the machine lacks what it needs (root, a cgroup v1 hierarchy, netns, nft).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "loom/base/file_util.h"
#include "loom/monitor/inject/cgroup_v1.h"
#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault_injector.h"
#include "loom/monitor/inject/process_target.h"
#include "loom/monitor/inject/stale_cleanup.h"
#include "loom/monitor/inject/test_child.h"

namespace loom::monitor {
namespace {

#define SKIP_UNLESS_CGROUP(controller)                                                     \
  do {                                                                                     \
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";                                    \
    if (!CgroupV1Root(controller).ok()) GTEST_SKIP() << CgroupV1Root(controller).status(); \
  } while (0)

std::string Param(const Injection& inj, const std::string& key) {
  return nlohmann::json::parse(inj.RecordJson())["parameters"][key].get<std::string>();
}

int64_t StatField(const std::string& cpu_stat, const std::string& key) {
  std::istringstream in(cpu_stat);
  std::string k;
  int64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return -1;
}

double CpuCoresOver(int pid, double seconds) {
  const int64_t t0 = ProcCpuTicks(pid).value();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const int64_t t1 = ProcCpuTicks(pid).value();
  return static_cast<double>(t1 - t0) / static_cast<double>(::sysconf(_SC_CLK_TCK)) / seconds;
}

TEST(FreezeTest, FreezesTheTargetAndRemovesTheCgroupOnRevert) {
  SKIP_UNLESS_CGROUP("freezer");
  TestChild child(TestChild::kBusy);
  const std::string original = CgroupV1PathOf(child.pid(), "freezer").value();
  FaultSpec spec;
  spec.type = "freeze";
  spec.pid = child.pid();
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string dir = Param(**inj, "cgroup");
  EXPECT_EQ(ReadFileToString(dir + "/freezer.state").value(), "FROZEN\n");
  EXPECT_EQ(std::stoi(ReadFileToString(dir + "/cgroup.procs").value()), child.pid());
  // A frozen busy loop gets no CPU at all (the kernel shows it as 'D' or 'S', never 'R').
  const int64_t t0 = ProcCpuTicks(child.pid()).value();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(ProcCpuTicks(child.pid()).value(), t0);
  EXPECT_NE(ProcState(child.pid()).value(), 'R');

  ASSERT_TRUE((*inj)->Revert().ok());
  EXPECT_FALSE(PathExists(dir));
  EXPECT_EQ(CgroupV1PathOf(child.pid(), "freezer").value(), original);
  double cores = 0;
  for (int i = 0; i < 10 && cores == 0; ++i) cores = CpuCoresOver(child.pid(), 0.2);
  EXPECT_GT(cores, 0) << "the thawed busy loop never ran again";
}

TEST(CpuQuotaTest, ThrottlesABusyChildToRoughlyTheQuota) {
  SKIP_UNLESS_CGROUP("cpu");
  TestChild child(TestChild::kBusy);
  const std::string original = CgroupV1PathOf(child.pid(), "cpu").value();
  FaultSpec spec;
  spec.type = "cpu_quota";
  spec.pid = child.pid();
  spec.cpu_fraction = 0.2;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string dir = Param(**inj, "cgroup");
  EXPECT_EQ(ReadFileToString(dir + "/cpu.cfs_quota_us").value(), "20000\n");
  EXPECT_EQ(ReadFileToString(dir + "/cpu.cfs_period_us").value(), "100000\n");
  const int64_t throttled0 = StatField(ReadFileToString(dir + "/cpu.stat").value(), "nr_throttled");
  const double cores = CpuCoresOver(child.pid(), 1.0);
  const int64_t throttled1 = StatField(ReadFileToString(dir + "/cpu.stat").value(), "nr_throttled");
  // Shared machine: the child may get less than its quota, never much more.
  EXPECT_LT(cores, 2 * 0.2) << "cpu rate under a 0.2-core quota";
  EXPECT_GT(throttled1, throttled0);
  EXPECT_GT(throttled1, 0);

  ASSERT_TRUE((*inj)->Revert().ok());
  EXPECT_FALSE(PathExists(dir));
  EXPECT_EQ(CgroupV1PathOf(child.pid(), "cpu").value(), original);
}

TEST(MemLimitTest, SetsTheLimitAndRestoresTheCgroup) {
  SKIP_UNLESS_CGROUP("memory");
  TestChild child(TestChild::kSleep);
  const std::string original = CgroupV1PathOf(child.pid(), "memory").value();
  FaultSpec spec;
  spec.type = "mem_limit";
  spec.pid = child.pid();
  spec.mem_bytes = 64 << 20;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string dir = Param(**inj, "cgroup");
  EXPECT_EQ(ReadFileToString(dir + "/memory.limit_in_bytes").value(), "67108864\n");
  EXPECT_EQ(CgroupV1PathOf(child.pid(), "memory").value(),
            (original == "/" ? "" : original) + dir.substr(dir.rfind('/')));
  ASSERT_TRUE((*inj)->Revert().ok());
  EXPECT_FALSE(PathExists(dir));
  EXPECT_EQ(CgroupV1PathOf(child.pid(), "memory").value(), original);
}

TEST(CgroupFaultTest, TargetExitingDuringTheFaultStillRevertsCleanly) {
  SKIP_UNLESS_CGROUP("cpu");
  TestChild child(TestChild::kSleep);
  FaultSpec spec;
  spec.type = "cpu_quota";
  spec.pid = child.pid();
  spec.cpu_fraction = 0.5;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string dir = Param(**inj, "cgroup");
  ::kill(child.pid(), SIGKILL);
  child.Wait();
  EXPECT_TRUE((*inj)->Revert().ok()) << (*inj)->Revert();
  EXPECT_FALSE(PathExists(dir));
  EXPECT_EQ(nlohmann::json::parse((*inj)->RecordJson())["target_alive_at_end"], false);
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

TEST(StaleCleanupTest, RemovesCgroupsOfDeadInjectorsOnly) {
  SKIP_UNLESS_CGROUP("freezer");
  TestChild child(TestChild::kSleep);
  int dead;
  {
    TestChild gone(TestChild::kSleep);
    dead = gone.pid();
  }
  const std::string rel = CgroupV1PathOf(child.pid(), "freezer").value();
  const std::string parent = CgroupV1Root("freezer").value() + (rel == "/" ? "" : rel);
  const std::string pid = std::to_string(child.pid());
  const std::string stale = parent + "/loom-inject-" + pid + "-" + std::to_string(dead) + "-0";
  const std::string live =
      parent + "/loom-inject-" + pid + "-" + std::to_string(::getpid()) + "-99";
  // What a SIGKILLed injector leaves: the target frozen in its cgroup.
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(live.c_str(), 0755), 0);
  struct Guard {  // if an assertion fails: thaw and remove, so the child can be killed
    std::string a, b, parent;
    ~Guard() {
      std::ofstream(a + "/freezer.state") << "THAWED";
      auto procs = ReadFileToString(a + "/cgroup.procs");
      if (procs.ok() && !procs->empty()) std::ofstream(parent + "/cgroup.procs") << *procs;
      ::rmdir(a.c_str());
      ::rmdir(b.c_str());
    }
  } guard{stale, live, parent};
  { std::ofstream(stale + "/cgroup.procs") << pid; }
  { std::ofstream(stale + "/freezer.state") << "FROZEN"; }
  ASSERT_NE(CgroupV1PathOf(child.pid(), "freezer").value().find("loom-inject-"), std::string::npos);

  auto report = CleanupStaleInjections("");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->errors.empty()) << report->errors.front();
  EXPECT_TRUE(Contains(report->removed, "cgroup " + stale));
  EXPECT_TRUE(Contains(report->live, "cgroup " + live));
  EXPECT_FALSE(PathExists(stale));
  EXPECT_TRUE(PathExists(live));
  EXPECT_EQ(CgroupV1PathOf(child.pid(), "freezer").value(), rel);
}

// Two namespaces joined by a veth pair: A (10.78.0.1, dev lia<pid>) and B (10.78.0.2).
class NetnsPair : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    const std::string id = std::to_string(::getpid());
    ns_a_ = "loom-inj-test-" + id + "-a";
    ns_b_ = "loom-inj-test-" + id + "-b";
    dev_a_ = "lia" + id;
    dev_b_ = "lib" + id;
    if (!RunChecked({"ip", "netns", "add", ns_a_}).ok()) GTEST_SKIP() << "cannot create netns";
    created_ = true;
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", ns_b_},
             {"ip", "link", "add", dev_a_, "type", "veth", "peer", "name", dev_b_},
             {"ip", "link", "set", dev_a_, "netns", ns_a_},
             {"ip", "link", "set", dev_b_, "netns", ns_b_},
             {"ip", "-n", ns_a_, "addr", "add", "10.78.0.1/24", "dev", dev_a_},
             {"ip", "-n", ns_b_, "addr", "add", "10.78.0.2/24", "dev", dev_b_},
             {"ip", "-n", ns_a_, "link", "set", dev_a_, "up"},
             {"ip", "-n", ns_b_, "link", "set", dev_b_, "up"},
             {"ip", "-n", ns_a_, "link", "set", "lo", "up"},
             {"ip", "-n", ns_b_, "link", "set", "lo", "up"}}) {
      auto r = RunChecked(argv);
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }
  void TearDown() override {
    if (!created_) return;
    // Deleting the namespaces deletes the veth pair and every qdisc and nft table inside.
    RunCommand({"ip", "netns", "del", ns_a_}).status().IgnoreError();
    RunCommand({"ip", "netns", "del", ns_b_}).status().IgnoreError();
    EXPECT_FALSE(PathExists("/var/run/netns/" + ns_a_));
  }

  FaultSpec NetSpec(const std::string& type) const {
    FaultSpec s;
    s.type = type;
    s.dev = dev_a_;
    s.netns = ns_a_;
    return s;
  }

  std::string InA(const std::vector<std::string>& argv) const {
    auto r = RunChecked(argv, ns_a_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }

  // Runs `fn` on a thread that has joined namespace `ns` (setns is per thread for net).
  template <typename Fn>
  static void InNetns(const std::string& ns, Fn fn) {
    std::thread t([&] {
      const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::setns(fd, CLONE_NEWNET), 0) << std::strerror(errno);
      ::close(fd);
      fn();
    });
    t.join();
  }

  // TCP connect from A to 10.78.0.2:9 (nothing listens): ECONNREFUSED means B answered, i.e. the
  // link works; anything else (unreachable, timeout) means it does not.
  int ConnectErrnoFromA() {
    int result = 0;
    InNetns(ns_a_, [&] {
      const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(9);
      ::inet_pton(AF_INET, "10.78.0.2", &addr.sin_addr);
      if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        result = 0;
      } else if (errno != EINPROGRESS) {
        result = errno;
      } else {
        pollfd p{s, POLLOUT, 0};
        if (::poll(&p, 1, 500) <= 0) {
          result = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(result);
          ::getsockopt(s, SOL_SOCKET, SO_ERROR, &result, &len);
        }
      }
      ::close(s);
    });
    return result;
  }

  // Sends `n` UDP datagrams A -> B and returns how many arrived.
  int UdpDelivered(int n) {
    int received = 0;
    int rx = -1;
    InNetns(ns_b_, [&] {
      rx = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(47800);
      ::inet_pton(AF_INET, "10.78.0.2", &addr.sin_addr);
      EXPECT_EQ(::bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
      int buf = 4 << 20;
      ::setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    });
    InNetns(ns_a_, [&] {
      const int tx = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(47800);
      ::inet_pton(AF_INET, "10.78.0.2", &addr.sin_addr);
      char payload[64] = {};
      for (int i = 0; i < n; ++i) {
        ::sendto(tx, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
        if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ::close(tx);
    });
    char buf[128];
    while (true) {
      pollfd p{rx, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) break;
      if (::recv(rx, buf, sizeof(buf), 0) > 0) ++received;
    }
    ::close(rx);
    return received;
  }

  std::string ns_a_, ns_b_, dev_a_, dev_b_;
  bool created_ = false;
};

TEST_F(NetnsPair, TbfInstallsTheQdiscAndRevertRemovesIt) {
  FaultSpec spec = NetSpec("tbf");
  spec.rate = "10mbit";
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string shown = InA({"tc", "qdisc", "show", "dev", dev_a_});
  EXPECT_NE(shown.find("qdisc tbf"), std::string::npos) << shown;
  EXPECT_NE(shown.find("rate 10Mbit"), std::string::npos) << shown;
  // A second tbf on the same device is refused rather than silently replacing the first.
  auto again = Inject(spec);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status();
  ASSERT_TRUE((*inj)->Revert().ok());
  const std::string after = InA({"tc", "qdisc", "show", "dev", dev_a_});
  EXPECT_EQ(after.find("tbf"), std::string::npos) << after;
}

TEST_F(NetnsPair, DropAddsAnOwnedTableThatDropsPacketsAndRevertDeletesIt) {
  if (!RunCommand({"nft", "--version"}).ok()) GTEST_SKIP() << "nft (package nftables) missing";
  const int baseline = UdpDelivered(1000);
  ASSERT_GE(baseline, 990) << "the veth loses packets without any fault";
  FaultSpec spec = NetSpec("drop");
  spec.drop_fraction = 0.5;
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string table = Param(**inj, "nft_table");  // "inet loom_inject_<pid>_<n>"
  const std::string name = table.substr(table.find(' ') + 1);
  const std::string listed = InA({"nft", "list", "table", "inet", name});
  EXPECT_NE(listed.find("numgen random mod 10000 < 5000 drop"), std::string::npos) << listed;
  EXPECT_NE(listed.find("oifname \"" + dev_a_ + "\""), std::string::npos) << listed;
  const int delivered = UdpDelivered(1000);
  EXPECT_GT(delivered, 400);  // binomial(1000, 0.5): sd 16
  EXPECT_LT(delivered, 600);
  ASSERT_TRUE((*inj)->Revert().ok());
  EXPECT_NE(RunCommand({"nft", "list", "table", "inet", name}, ns_a_)->exit_code, 0);
  EXPECT_GE(UdpDelivered(1000), 990);
}

TEST_F(NetnsPair, FlapTakesTheLinkDownAndBringsItBack) {
  ASSERT_EQ(ConnectErrnoFromA(), ECONNREFUSED) << "link should work before the flap";
  FaultSpec spec = NetSpec("flap");
  auto inj = Inject(spec);
  ASSERT_TRUE(inj.ok()) << inj.status();
  const std::string shown = InA({"ip", "link", "show", "dev", dev_a_});
  EXPECT_NE(shown.find("state DOWN"), std::string::npos) << shown;
  EXPECT_NE(ConnectErrnoFromA(), ECONNREFUSED);
  // Flapping a link that is already down is refused (revert would wrongly bring it up).
  EXPECT_EQ(Inject(spec).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*inj)->Revert().ok());
  int err = 0;
  for (int i = 0; i < 30 && err != ECONNREFUSED; ++i) {
    err = ConnectErrnoFromA();
    if (err != ECONNREFUSED) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(err, ECONNREFUSED) << "link should work again after revert: " << std::strerror(err);
}

TEST_F(NetnsPair, MissingDeviceOrNamespaceIsNamed) {
  FaultSpec spec = NetSpec("flap");
  spec.dev = "nosuchdev0";
  Status s = Inject(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("nosuchdev0"), std::string::npos) << s;
  EXPECT_NE(s.message().find(ns_a_), std::string::npos) << s;
  spec = NetSpec("tbf");
  spec.rate = "1mbit";
  spec.netns = "loom-inj-no-such-ns";
  s = Inject(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("loom-inj-no-such-ns"), std::string::npos) << s;
}

TEST_F(NetnsPair, StaleCleanupDeletesTablesOfDeadInjectorsOnly) {
  if (!RunCommand({"nft", "--version"}).ok()) GTEST_SKIP() << "nft (package nftables) missing";
  int dead;
  {
    TestChild gone(TestChild::kSleep);
    dead = gone.pid();
  }
  const std::string stale = "loom_inject_" + std::to_string(dead) + "_0";
  const std::string live = "loom_inject_" + std::to_string(::getpid()) + "_99";
  InA({"nft", "add", "table", "inet", stale});
  InA({"nft", "add", "table", "inet", live});
  auto report = CleanupStaleInjections(ns_a_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(Contains(report->removed, "nft table inet " + stale + " in netns " + ns_a_));
  EXPECT_TRUE(Contains(report->live, "nft table inet " + live + " in netns " + ns_a_));
  const std::string tables = InA({"nft", "list", "tables"});
  EXPECT_EQ(tables.find(stale), std::string::npos) << tables;
  EXPECT_NE(tables.find(live), std::string::npos) << tables;
}

TEST_F(NetnsPair, DestructorRevertsNetworkFaultsAndLogs) {
  const std::string log =
      ::testing::TempDir() + "/inject_net_" + std::to_string(::getpid()) + ".jsonl";
  ::unlink(log.c_str());
  {
    FaultSpec spec = NetSpec("tbf");
    spec.rate = "1mbit";
    spec.log_path = log;
    auto inj = Inject(spec);
    ASSERT_TRUE(inj.ok()) << inj.status();
  }
  EXPECT_EQ(InA({"tc", "qdisc", "show", "dev", dev_a_}).find("tbf"), std::string::npos);
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json r = nlohmann::json::parse(line);
  EXPECT_EQ(r["type"], "tbf");
  EXPECT_EQ(r["target"]["dev"], dev_a_);
  EXPECT_EQ(r["target"]["netns"], ns_a_);
  EXPECT_EQ(r["parameters"]["rate"], "1mbit");
  EXPECT_EQ(r["parameters"]["previous_qdisc"], "noqueue");
  EXPECT_EQ(r["revert"], "ok");
  EXPECT_FALSE(std::getline(in, line));
}

}  // namespace
}  // namespace loom::monitor
