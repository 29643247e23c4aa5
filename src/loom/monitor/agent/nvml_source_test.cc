// NvmlSource against a fake libnvidia-ml (testing/fake_nvml.cc, built as two shared libraries):
// readings flow into gauges, an unsupported query is NaN (not 0), and a missing library, a
// missing symbol or a failing nvmlInit report "unavailable" with the reason.
#include "loom/monitor/agent/nvml_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <string>
#include <vector>

#include "loom/monitor/agent/host_sampler.h"
#include "loom/monitor/agent/prometheus_text.h"
#include "loom/monitor/agent/testing/promtool.h"

namespace loom::monitor {
namespace {

// The value of `name` with label gpu=`gpu` (or unlabelled when gpu < 0); -1 when absent.
double Find(const std::vector<MetricPoint>& ps, const std::string& name, int gpu = -1) {
  for (const MetricPoint& p : ps) {
    if (p.name != name) continue;
    if (gpu < 0 || (p.labels.size() == 1 && p.labels[0].second == std::to_string(gpu))) {
      return p.value;
    }
  }
  return -1;
}

double Available(const std::vector<MetricPoint>& ps) {
  for (const MetricPoint& p : ps) {
    if (p.name == "source_available" && p.labels[0].second == "nvml") return p.value;
  }
  return -1;
}

int OpenCount() {
  void* h = ::dlopen(LOOM_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return -1;  // not loaded at all
  auto fn = reinterpret_cast<int (*)()>(::dlsym(h, "fake_nvml_open_count"));
  const int n = fn();
  ::dlclose(h);
  return n;
}

TEST(NvmlSourceTest, ReadsEveryGpuAndAnUnsupportedQueryIsNaN) {
  ::unsetenv("FAKE_NVML_INIT_FAILS");
  {
    NvmlSource nvml = NvmlSource::Open(LOOM_FAKE_NVML);
    ASSERT_TRUE(nvml.available()) << nvml.error();
    EXPECT_EQ(nvml.gpu_count(), 2);
    EXPECT_EQ(OpenCount(), 1);
    std::vector<MetricPoint> out;
    nvml.Sample(&out);
    EXPECT_EQ(Available(out), 1);
    EXPECT_EQ(Find(out, "gpus"), 2);
    EXPECT_DOUBLE_EQ(Find(out, "gpu_utilization_ratio", 0), 0.37);
    EXPECT_DOUBLE_EQ(Find(out, "gpu_memory_utilization_ratio", 1), 0.45);
    EXPECT_DOUBLE_EQ(Find(out, "gpu_power_watts", 0), 123.456);
    EXPECT_TRUE(std::isnan(Find(out, "gpu_power_watts", 1)));  // NVML_ERROR_NOT_SUPPORTED
    EXPECT_EQ(Find(out, "gpu_temperature_celsius", 1), 70);
    EXPECT_EQ(Find(out, "gpu_memory_used_bytes", 0), double(1ull << 30));
    EXPECT_EQ(Find(out, "gpu_memory_total_bytes", 1), double(80ull << 30));
    // The families render as valid Prometheus text (contiguous, NaN spelled NaN).
    Result<std::string> text = RenderPrometheusText(out, {{"machine", "m0"}});
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_NE(text->find("loom_gpu_power_watts{machine=\"m0\",gpu=\"1\"} NaN"), std::string::npos)
        << *text;
    testing::PromtoolResult r = testing::PromtoolCheckMetrics(*text);
    ASSERT_TRUE(r.found) << "promtool missing (apt install prometheus)";
    EXPECT_TRUE(r.ok) << r.output;
    // Moving keeps one owner: shutdown happens once, when the last owner goes.
    NvmlSource moved = std::move(nvml);
    EXPECT_EQ(OpenCount(), 1);
  }
  EXPECT_LE(OpenCount(), 0);  // nvmlShutdown called (or the library already unloaded)
}

TEST(NvmlSourceTest, MissingLibraryIsUnavailableWithTheReason) {
  NvmlSource nvml = NvmlSource::Open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_TRUE(nvml.enabled());
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.error().find("dlopen /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << nvml.error();
  std::vector<MetricPoint> out;
  nvml.Sample(&out);
  ASSERT_EQ(out.size(), 1u);  // only the availability gauge: no GPU gauge reads as zero
  EXPECT_EQ(Available(out), 0);
}

TEST(NvmlSourceTest, MissingSymbolAndFailedInitAreUnavailable) {
  NvmlSource no_power = NvmlSource::Open(LOOM_FAKE_NVML_NO_POWER);
  EXPECT_FALSE(no_power.available());
  EXPECT_NE(no_power.error().find("missing symbol nvmlDeviceGetPowerUsage"), std::string::npos)
      << no_power.error();
  ::setenv("FAKE_NVML_INIT_FAILS", "1", 1);
  NvmlSource no_driver = NvmlSource::Open(LOOM_FAKE_NVML);
  ::unsetenv("FAKE_NVML_INIT_FAILS");
  EXPECT_FALSE(no_driver.available());
  EXPECT_EQ(no_driver.error(), "nvmlInit: Driver Not Loaded");
  std::vector<MetricPoint> out;
  no_driver.Sample(&out);
  EXPECT_EQ(Available(out), 0);
}

TEST(NvmlSourceTest, DisabledAddsNothingAndHostSamplerCarriesTheGauges) {
  NvmlSource off = NvmlSource::Open("");
  std::vector<MetricPoint> out;
  off.Sample(&out);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(off.enabled());

  HostSampler sampler({.nvml_library = LOOM_FAKE_NVML});
  std::vector<MetricPoint> ps = sampler.Sample(1.0);
  EXPECT_DOUBLE_EQ(Find(ps, "gpu_utilization_ratio", 0), 0.37);
  EXPECT_EQ(Available(ps), 1);
  HostSampler no_gpu({.nvml_library = "/nonexistent/libnvidia-ml.so.1"});
  ps = no_gpu.Sample(1.0);
  EXPECT_EQ(Available(ps), 0);
  EXPECT_EQ(Find(ps, "gpu_utilization_ratio", 0), -1);
}

}  // namespace
}  // namespace loom::monitor
