// cpu_quota: a compute straggler. The target moves into its own cgroup v1 cpu cgroup with
// cpu.cfs_period_us = 100000 and cpu.cfs_quota_us = cpu_fraction x period (at least 1000, the
// kernel's minimum). Revert: moved back to its original cpu cgroup, the cgroup removed.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "loom/monitor/inject/cgroup_v1.h"
#include "loom/monitor/inject/fault.h"

namespace loom::monitor::internal {
namespace {

constexpr int64_t kPeriodUs = 100000;

class CpuQuotaFault : public Fault {
 public:
  CpuQuotaFault(int pid, double fraction)
      : pid_(pid),
        quota_us_(std::max<int64_t>(1000, std::llround(fraction * kPeriodUs))),
        fraction_(fraction) {}

  Status Apply() override {
    LOOM_ASSIGN_OR_RETURN(
        cgroup_, ScopedCgroup::Create("cpu", pid_,
                                      UniqueInjectionName("loom-inject-", std::to_string(pid_))));
    dir_ = cgroup_->dir();
    Status s = cgroup_->Write("cpu.cfs_period_us", std::to_string(kPeriodUs));
    if (s.ok()) s = cgroup_->Write("cpu.cfs_quota_us", std::to_string(quota_us_));
    if (s.ok()) s = cgroup_->MoveTargetIn();
    if (!s.ok()) cgroup_.reset();
    return s;
  }

  Status Undo() override {
    if (!cgroup_) return OkStatus();
    Status s = cgroup_->Release();
    cgroup_.reset();
    return s;
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["cpu_fraction"] = fraction_;
    (*params)["cfs_period_us"] = kPeriodUs;
    (*params)["cfs_quota_us"] = quota_us_;
    (*params)["cgroup"] = dir_;
  }

 private:
  int pid_;
  int64_t quota_us_;
  double fraction_;
  std::unique_ptr<ScopedCgroup> cgroup_;
  std::string dir_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeCpuQuotaFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new CpuQuotaFault(spec.pid, spec.cpu_fraction));
}

}  // namespace loom::monitor::internal
