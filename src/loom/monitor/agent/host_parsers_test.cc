#include "loom/monitor/agent/host_parsers.h"

#include <gtest/gtest.h>

#include <random>

#include "loom/monitor/agent/proc_stat.h"

namespace loom::monitor {
namespace {

TEST(HostParsersTest, ProcStatCpuLine) {
  const char* text =
      "cpu  100 5 50 800 20 3 2 1 7 0\n"
      "cpu0 50 2 25 400 10 1 1 0 0 0\n"
      "intr 12345\n";
  Result<CpuTicks> c = ParseProcStatCpu(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->user, 100);
  EXPECT_EQ(c->steal, 1);
  EXPECT_EQ(c->Total(), 981);        // guest (7) is inside user and not added again
  EXPECT_EQ(c->Busy(), 981 - 820);   // minus idle and iowait
  EXPECT_FALSE(ParseProcStatCpu("cpu0 1 2 3 4\n").ok());
  Result<CpuTicks> bad = ParseProcStatCpu("cpu 1 x 3 4 5\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cpu nice"), std::string::npos) << bad.status();
}

TEST(HostParsersTest, Meminfo) {
  Result<MemInfo> m = ParseMeminfo(
      "MemTotal:       16000 kB\nMemFree:  100 kB\nMemAvailable:    4000 kB\nBuffers: 1 kB\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->total_bytes, 16000 * 1024);
  EXPECT_EQ(m->available_bytes, 4000 * 1024);
  EXPECT_EQ(m->UsedBytes(), 12000 * 1024);
  Result<MemInfo> missing = ParseMeminfo("MemTotal: 1 kB\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("MemAvailable"), std::string::npos);
  EXPECT_NE(ParseMeminfo("MemTotal: 1 MB\nMemAvailable: 1 kB\n").status().message().find(
                "MemTotal"),
            std::string::npos);
}

constexpr const char* kNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo:    5000      50    0    0    0     0          0         0     5000      50    0    "
    "0    0     0       0          0\n"
    "  eth0: 1000000    900    0    7    0     0          0         0   200000     300    0    "
    "2    0     0       0          0\n";

TEST(HostParsersTest, NetDev) {
  Result<std::vector<NetDevCounters>> d = ParseNetDev(kNetDev);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].device, "lo");
  EXPECT_EQ((*d)[1].device, "eth0");
  EXPECT_EQ((*d)[1].rx_bytes, 1000000);
  EXPECT_EQ((*d)[1].rx_packets, 900);
  EXPECT_EQ((*d)[1].rx_drop, 7);
  EXPECT_EQ((*d)[1].tx_bytes, 200000);
  EXPECT_EQ((*d)[1].tx_packets, 300);
  EXPECT_EQ((*d)[1].tx_drop, 2);
  Result<std::vector<NetDevCounters>> bad = ParseNetDev("h\nh\n eth1: 1 2 3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("eth1"), std::string::npos);
}

TEST(HostParsersTest, SnmpRetransSegs) {
  const char* text =
      "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
      "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "
      "CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
      "Tcp: 1 200 120000 -1 10 5 0 0 3 1000 900 42 0 1 0\n";
  Result<int64_t> r = ParseSnmpTcpRetransSegs(text);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 42);
  EXPECT_FALSE(ParseSnmpTcpRetransSegs("Tcp: A B\nTcp: 1\n").ok());
  EXPECT_FALSE(ParseSnmpTcpRetransSegs("Tcp: RetransSegs").ok());  // regression: header at EOF
  EXPECT_NE(ParseSnmpTcpRetransSegs("Tcp: A B\nTcp: 1 2\n").status().message().find(
                "RetransSegs"),
            std::string::npos);
}

TEST(HostParsersTest, Pressure) {
  Result<double> p = ParsePressureSomeAvg10(
      "some avg10=12.50 avg60=2.84 avg300=14.97 total=4832220507\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(*p, 12.5);
  EXPECT_FALSE(ParsePressureSomeAvg10("full avg10=1.00\n").ok());
  EXPECT_FALSE(ParsePressureSomeAvg10("some avg10=abc\n").ok());
}

TEST(HostParsersTest, CgroupCpuStatV1AndV2) {
  Result<CgroupCpuStat> v2 = ParseCgroupCpuStat(
      "usage_usec 5000000\nuser_usec 1\nsystem_usec 2\nnr_periods 100\nnr_throttled 40\n"
      "throttled_usec 2500000\n");
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->nr_throttled, 40);
  EXPECT_DOUBLE_EQ(v2->throttled_seconds, 2.5);
  EXPECT_DOUBLE_EQ(v2->usage_seconds, 5.0);
  Result<CgroupCpuStat> v1 =
      ParseCgroupCpuStat("nr_periods 10\nnr_throttled 3\nthrottled_time 1500000000\n");
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_DOUBLE_EQ(v1->throttled_seconds, 1.5);
  EXPECT_DOUBLE_EQ(v1->usage_seconds, -1);
  EXPECT_NE(ParseCgroupCpuStat("nr_periods 1\n").status().message().find("nr_throttled"),
            std::string::npos);
}

// Fuzz: truncated or corrupted pseudo-files give an error or a value, never a crash.
TEST(HostParsersTest, FuzzedFilesNeverCrash) {
  const std::string stat_line =
      "4242 (my name) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 123 1000000 512 0\n";
  const std::string files[] = {
      "cpu  100 5 50 800 20 3 2 1 7 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n",
      "MemTotal: 16000 kB\nMemAvailable: 4000 kB\n",
      std::string(kNetDev),
      "Tcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 42 0\n",
      "some avg10=12.50 avg60=2.84 avg300=14.97 total=4832220507\n",
      "nr_periods 10\nnr_throttled 3\nthrottled_time 1500000000\n",
      stat_line};
  std::mt19937 rng(11);
  int rejected = 0;
  for (int i = 0; i < 7000; ++i) {
    const int which = i % 7;
    std::string s = files[which];
    if ((i / 7) % 2 == 0) {
      s.resize(rng() % s.size());
    } else {
      for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 128);
    }
    bool ok = false;
    switch (which) {
      case 0: ok = ParseProcStatCpu(s).ok(); break;
      case 1: ok = ParseMeminfo(s).ok(); break;
      case 2: ok = ParseNetDev(s).ok(); break;
      case 3: ok = ParseSnmpTcpRetransSegs(s).ok(); break;
      case 4: ok = ParsePressureSomeAvg10(s).ok(); break;
      case 5: ok = ParseCgroupCpuStat(s).ok(); break;
      default: ok = ParseProcStat(s, 100, 4096).ok(); break;
    }
    rejected += ok ? 0 : 1;
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace loom::monitor
