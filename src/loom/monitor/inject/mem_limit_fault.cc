// mem_limit: memory pressure. The target moves into its own cgroup v1 memory cgroup (nested in
// its current one) with memory.limit_in_bytes = mem_bytes; the kernel reclaims, swaps or
// OOM-kills the target when it goes over (an OOM kill is the fault, not an injector error).
// Existing charges move along when the kernel still supports memory.move_charge_at_immigrate
// (recorded as move_charge); otherwise only new allocations count against the limit.
// Revert: moved back to its original memory cgroup, the cgroup removed.
#include <nlohmann/json.hpp>

#include "loom/monitor/inject/cgroup_v1.h"
#include "loom/monitor/inject/fault.h"

namespace loom::monitor::internal {
namespace {

class MemLimitFault : public Fault {
 public:
  MemLimitFault(int pid, int64_t bytes) : pid_(pid), bytes_(bytes) {}

  Status Apply() override {
    LOOM_ASSIGN_OR_RETURN(
        cgroup_, ScopedCgroup::Create("memory", pid_,
                                      UniqueInjectionName("loom-inject-", std::to_string(pid_))));
    dir_ = cgroup_->dir();
    move_charge_ = cgroup_->Write("memory.move_charge_at_immigrate", "3").ok();
    Status s = cgroup_->Write("memory.limit_in_bytes", std::to_string(bytes_));
    if (s.ok()) s = cgroup_->MoveTargetIn();
    if (!s.ok()) cgroup_.reset();
    return s;
  }

  Status Undo() override {
    if (!cgroup_) return OkStatus();
    // Lift the limit first so moving the target back cannot trip the OOM killer here.
    cgroup_->Write("memory.limit_in_bytes", "-1").IgnoreError();
    Status s = cgroup_->Release();
    cgroup_.reset();
    return s;
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["mem_bytes"] = bytes_;
    (*params)["cgroup"] = dir_;
    (*params)["move_charge"] = move_charge_;
  }

 private:
  int pid_;
  int64_t bytes_;
  std::unique_ptr<ScopedCgroup> cgroup_;
  std::string dir_;
  bool move_charge_ = false;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeMemLimitFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new MemLimitFault(spec.pid, spec.mem_bytes));
}

}  // namespace loom::monitor::internal
