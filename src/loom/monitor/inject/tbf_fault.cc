// tbf: link bandwidth loss. `tc qdisc replace dev DEV root tbf rate R burst B latency 50ms`
// (egress of DEV), burst = max(32 KiB, 10 ms at R). Revert: `tc qdisc del dev DEV root`, which
// brings back the kernel's default qdisc. A device whose root qdisc is already configured (tbf,
// htb, netem, ...) is refused rather than silently replaced and lost on revert.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/net_device.h"
#include "loom/monitor/inject/tc_rate.h"

namespace loom::monitor::internal {
namespace {

class TbfFault : public Fault {
 public:
  TbfFault(const FaultSpec& spec, double bits_per_s)
      : dev_(spec.dev),
        netns_(spec.netns),
        rate_(spec.rate),
        burst_bytes_(std::max<int64_t>(32 * 1024, std::llround(bits_per_s / 8 / 100))) {}

  Status Apply() override {
    LOOM_RETURN_IF_ERROR(CheckNetDevice(dev_, netns_));
    LOOM_ASSIGN_OR_RETURN(std::string kind, RootQdiscKind(dev_, netns_));
    static const std::set<std::string> kDefaults = {"noqueue", "pfifo_fast", "fq_codel",
                                                    "mq",      "pfifo",      "fq"};
    if (!kDefaults.count(kind)) {
      return FailedPreconditionError(DeviceName(dev_, netns_) + " already has root qdisc '" + kind +
                                     "'; tbf would replace it and revert could not restore it");
    }
    previous_qdisc_ = kind;
    return RunChecked({"tc", "qdisc", "replace", "dev", dev_, "root", "tbf", "rate", rate_, "burst",
                       std::to_string(burst_bytes_), "latency", "50ms"},
                      netns_)
        .status();
  }

  Status Undo() override {
    return RunChecked({"tc", "qdisc", "del", "dev", dev_, "root"}, netns_).status();
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["rate"] = rate_;
    (*params)["burst_bytes"] = burst_bytes_;
    (*params)["latency"] = "50ms";
    (*params)["previous_qdisc"] = previous_qdisc_;
  }

 private:
  std::string dev_, netns_, rate_;
  int64_t burst_bytes_;
  std::string previous_qdisc_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeTbfFault(const FaultSpec& spec) {
  LOOM_ASSIGN_OR_RETURN(double bps, ParseTcRate(spec.rate));
  return std::unique_ptr<Fault>(new TbfFault(spec, bps));
}

}  // namespace loom::monitor::internal
