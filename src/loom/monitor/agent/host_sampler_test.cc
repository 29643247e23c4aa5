// HostSampler on a synthetic /proc tree written to a temp dir: values, rates from deltas, and
// "missing source -> available 0 and NaN" rather than zero.
#include "loom/monitor/agent/host_sampler.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace loom::monitor {
namespace {

namespace fs = std::filesystem;

class FakeProc {
 public:
  FakeProc() {
    char tmpl[] = "/tmp/loom_fakeproc_XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~FakeProc() { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Remove(const std::string& rel) { fs::remove(fs::path(root_) / rel); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

std::string NetDev(int64_t eth_rx, int64_t eth_tx, int64_t lo) {
  std::string l = std::to_string(lo);
  return "Inter-| Receive | Transmit\n face |bytes ...\n"
         "    lo: " + l + " 1 0 0 0 0 0 0 " + l + " 1 0 0 0 0 0 0\n"
         "  eth0: " + std::to_string(eth_rx) + " 10 0 0 0 0 0 0 " + std::to_string(eth_tx) +
         " 10 0 0 0 0 0 0\n"
         "  eth1: 1000 1 0 0 0 0 0 0 1000 1 0 0 0 0 0 0\n";
}

std::string Snmp(int64_t retrans) {
  return "Tcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 " + std::to_string(retrans) + " 0\n";
}

std::string PidStat(int pid, char state, int64_t utime, int64_t stime, int64_t rss_pages) {
  return std::to_string(pid) + " (trainer) " + state +
         " 1 1 1 0 -1 0 0 0 0 0 " + std::to_string(utime) + " " + std::to_string(stime) +
         " 0 0 20 0 4 0 100 1000 " + std::to_string(rss_pages) + " 0\n";
}

// Finds the value of `name` whose labels include all of `want`; fails the test when absent.
double Find(const std::vector<MetricPoint>& pts, const std::string& name,
            const MetricLabels& want = {}) {
  for (const MetricPoint& p : pts) {
    if (p.name != name) continue;
    bool match = true;
    for (const auto& w : want) {
      bool has = false;
      for (const auto& l : p.labels) has |= (l == w);
      match &= has;
    }
    if (match) return p.value;
  }
  ADD_FAILURE() << "no point " << name;
  return -12345;
}

bool Has(const std::vector<MetricPoint>& pts, const std::string& name) {
  for (const MetricPoint& p : pts) {
    if (p.name == name) return true;
  }
  return false;
}

TEST(HostSamplerTest, RatesFromDeltasOnSyntheticProc) {
  FakeProc proc;
  proc.Write("stat", "cpu  100 0 100 700 100 0 0 0 0 0\n");
  proc.Write("meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
  proc.Write("net/dev", NetDev(10000, 5000, 777));
  proc.Write("net/snmp", Snmp(10));
  proc.Write("pressure/cpu", "some avg10=25.00 avg60=0 avg300=0 total=1\n");
  proc.Write("pressure/io", "some avg10=1.00 avg60=0 avg300=0 total=1\n");
  // pressure/memory absent: unavailable, not zero.
  proc.Write("cg/cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_usec 100000\n");
  proc.Write("77/stat", PidStat(77, 'S', 100, 100, 10));

  HostSamplerOptions o;
  o.proc_root = proc.root();
  o.cgroup_dir = proc.root() + "/cg";
  o.pids = {{77, 3}, {78, 4}};  // 78 does not exist
  o.clk_tck = 100;
  o.page_size = 4096;
  HostSampler sampler(o);

  std::vector<MetricPoint> first = sampler.Sample(10.0);
  EXPECT_TRUE(std::isnan(Find(first, "host_cpu_busy_ratio")));  // no delta yet
  EXPECT_TRUE(std::isnan(Find(first, "host_net_receive_bytes_per_second")));
  EXPECT_DOUBLE_EQ(Find(first, "host_memory_used_bytes"), 750 * 1024);
  EXPECT_DOUBLE_EQ(Find(first, "host_memory_available_bytes"), 250 * 1024);
  EXPECT_DOUBLE_EQ(Find(first, "host_cpu_seconds_total", {{"mode", "idle"}}), 7.0);
  EXPECT_DOUBLE_EQ(Find(first, "host_pressure_some_avg10_ratio", {{"resource", "cpu"}}), 0.25);
  EXPECT_TRUE(
      std::isnan(Find(first, "host_pressure_some_avg10_ratio", {{"resource", "memory"}})));
  EXPECT_EQ(Find(first, "source_available", {{"source", "pressure_memory"}}), 0);
  EXPECT_EQ(Find(first, "source_available", {{"source", "pressure_cpu"}}), 1);
  EXPECT_EQ(Find(first, "source_available", {{"source", "cgroup_cpu_stat"}}), 1);
  EXPECT_EQ(Find(first, "proc_up", {{"pid", "77"}}), 1);
  EXPECT_EQ(Find(first, "proc_up", {{"pid", "78"}, {"rank", "4"}}), 0);
  EXPECT_TRUE(std::isnan(Find(first, "proc_stopped", {{"pid", "78"}})));
  EXPECT_EQ(Find(first, "proc_stopped", {{"pid", "77"}, {"rank", "3"}}), 0);
  EXPECT_DOUBLE_EQ(Find(first, "proc_resident_memory_bytes", {{"pid", "77"}}), 10 * 4096);

  // Two seconds later: 300 more busy ticks out of 400; eth0 +4000/+2000 B, eth1 idle, lo busy
  // (ignored in the sum); 6 retransmits; 0.5 s throttled; the rank used 1.5 CPU-s and stopped.
  proc.Write("stat", "cpu  300 0 200 750 150 0 0 0 0 0\n");
  proc.Write("net/dev", NetDev(14000, 7000, 99999));
  proc.Write("net/snmp", Snmp(16));
  proc.Write("cg/cpu.stat", "nr_periods 20\nnr_throttled 6\nthrottled_usec 1100000\n");
  proc.Write("77/stat", PidStat(77, 'T', 200, 150, 12));
  std::vector<MetricPoint> second = sampler.Sample(12.0);
  EXPECT_DOUBLE_EQ(Find(second, "host_cpu_busy_ratio"), 300.0 / 400.0);
  EXPECT_DOUBLE_EQ(Find(second, "host_net_receive_bytes_per_second"), 2000);
  EXPECT_DOUBLE_EQ(Find(second, "host_net_transmit_bytes_per_second"), 1000);
  EXPECT_DOUBLE_EQ(
      Find(second, "host_net_device_receive_bytes_per_second", {{"device", "eth0"}}), 2000);
  EXPECT_DOUBLE_EQ(Find(second, "host_net_device_receive_bytes_per_second", {{"device", "lo"}}),
                   (99999 - 777) / 2.0);
  EXPECT_DOUBLE_EQ(Find(second, "host_net_receive_bytes_total", {{"device", "eth0"}}), 14000);
  EXPECT_DOUBLE_EQ(Find(second, "host_tcp_retrans_segments_per_second"), 3);
  EXPECT_DOUBLE_EQ(Find(second, "cgroup_cpu_throttled_ratio"), 0.5);
  EXPECT_DOUBLE_EQ(Find(second, "cgroup_cpu_throttled_periods_per_second"), 2);
  EXPECT_DOUBLE_EQ(Find(second, "proc_cpu_cores", {{"pid", "77"}}), 0.75);  // 1.5 s over 2 s
  EXPECT_EQ(Find(second, "proc_stopped", {{"pid", "77"}}), 1);
  EXPECT_EQ(Find(second, "proc_state", {{"pid", "77"}, {"state", "T"}}), 1);

  // The rank exits and /proc/net/snmp disappears: proc_up 0, NaNs, availability 0.
  proc.Remove("77/stat");
  proc.Remove("net/snmp");
  std::vector<MetricPoint> third = sampler.Sample(13.0);
  EXPECT_EQ(Find(third, "proc_up", {{"pid", "77"}}), 0);
  EXPECT_TRUE(std::isnan(Find(third, "proc_cpu_cores", {{"pid", "77"}})));
  EXPECT_EQ(Find(third, "source_available", {{"source", "net_snmp"}}), 0);
  EXPECT_TRUE(std::isnan(Find(third, "host_tcp_retrans_segments_per_second")));
  EXPECT_FALSE(Has(third, "host_tcp_retrans_segments_total"));
}

TEST(HostSamplerTest, CounterResetGivesNanNotANegativeRate) {
  FakeProc proc;
  proc.Write("net/dev", NetDev(10000, 5000, 0));
  HostSamplerOptions o;
  o.proc_root = proc.root();
  o.clk_tck = 100;
  o.page_size = 4096;
  HostSampler sampler(o);
  sampler.Sample(1.0);
  proc.Write("net/dev", NetDev(100, 5000, 0));  // interface reset
  std::vector<MetricPoint> pts = sampler.Sample(2.0);
  EXPECT_TRUE(std::isnan(Find(pts, "host_net_receive_bytes_per_second")));
  EXPECT_DOUBLE_EQ(Find(pts, "host_net_transmit_bytes_per_second"), 0);
  EXPECT_EQ(Find(pts, "source_available", {{"source", "proc_stat"}}), 0);
  EXPECT_TRUE(std::isnan(Find(pts, "host_cpu_busy_ratio")));
  EXPECT_FALSE(Has(pts, "host_cpu_seconds_total"));
}

TEST(HostSamplerTest, WatchAndUnwatchPids) {
  FakeProc proc;
  proc.Write("5/stat", PidStat(5, 'R', 1, 1, 1));
  HostSamplerOptions o;
  o.proc_root = proc.root();
  HostSampler sampler(o);
  EXPECT_FALSE(Has(sampler.Sample(1.0), "proc_up"));
  sampler.WatchPid({5, 0});
  EXPECT_EQ(Find(sampler.Sample(2.0), "proc_up", {{"pid", "5"}, {"rank", "0"}}), 1);
  sampler.UnwatchPid(5);
  EXPECT_FALSE(Has(sampler.Sample(3.0), "proc_up"));
}

TEST(HostSamplerTest, RealProcReadsEverySourceThatExists) {
  HostSampler sampler(HostSamplerOptions{});
  sampler.Sample(0.0);
  std::vector<MetricPoint> pts = sampler.Sample(0.5);
  EXPECT_EQ(Find(pts, "source_available", {{"source", "proc_stat"}}), 1);
  EXPECT_EQ(Find(pts, "source_available", {{"source", "meminfo"}}), 1);
  EXPECT_EQ(Find(pts, "source_available", {{"source", "net_dev"}}), 1);
  EXPECT_GT(Find(pts, "host_memory_available_bytes"), 0);
  double busy = Find(pts, "host_cpu_busy_ratio");
  if (!std::isnan(busy)) {  // NaN when no CPU tick elapsed between the two reads
    EXPECT_GE(busy, 0);
    EXPECT_LE(busy, 1);
  }
}

}  // namespace
}  // namespace loom::monitor
