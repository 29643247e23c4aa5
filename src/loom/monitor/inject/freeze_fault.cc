// freeze: the target (all its threads) moved into its own cgroup v1 freezer cgroup and FROZEN
// (a hang the process cannot observe; unlike SIGSTOP its parent sees no state change). Revert:
// THAWED, moved back to its original freezer cgroup, the cgroup removed.
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "loom/monitor/inject/cgroup_v1.h"
#include "loom/monitor/inject/fault.h"

namespace loom::monitor::internal {
namespace {

// Writes `state` and waits up to 2 s for freezer.state to read it back.
Status SetFreezerState(const ScopedCgroup& cg, const std::string& state) {
  LOOM_RETURN_IF_ERROR(cg.Write("freezer.state", state));
  for (int i = 0; i < 200; ++i) {
    auto now = cg.Read("freezer.state");
    if (now.ok() && now->rfind(state, 0) == 0) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return DeadlineExceededError(cg.dir() + "/freezer.state did not reach " + state + " in 2 s");
}

class FreezeFault : public Fault {
 public:
  explicit FreezeFault(int pid) : pid_(pid) {}

  Status Apply() override {
    LOOM_ASSIGN_OR_RETURN(
        cgroup_, ScopedCgroup::Create("freezer", pid_,
                                      UniqueInjectionName("loom-inject-", std::to_string(pid_))));
    dir_ = cgroup_->dir();
    Status s = cgroup_->MoveTargetIn();
    if (s.ok()) s = SetFreezerState(*cgroup_, "FROZEN");
    if (!s.ok()) {
      SetFreezerState(*cgroup_, "THAWED").IgnoreError();
      cgroup_.reset();  // moves the target back, removes the directory
    }
    return s;
  }

  Status Undo() override {
    if (!cgroup_) return OkStatus();
    Status s = SetFreezerState(*cgroup_, "THAWED");
    Status r = cgroup_->Release();
    cgroup_.reset();
    return s.ok() ? r : s;
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["cgroup"] = dir_;
    (*params)["freezer_state"] = "FROZEN";
  }

 private:
  int pid_;
  std::unique_ptr<ScopedCgroup> cgroup_;
  std::string dir_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeFreezeFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new FreezeFault(spec.pid));
}

}  // namespace loom::monitor::internal
