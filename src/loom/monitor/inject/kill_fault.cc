// kill: SIGKILL the target (a crash). Apply returns once the target is dead (zombie or gone;
// at most 2 s), so onset_ms is when the crash has happened. Nothing to revert; the record's
// end_ms equals onset_ms.
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/process_target.h"

namespace loom::monitor::internal {
namespace {

class KillFault : public Fault {
 public:
  explicit KillFault(int pid) : pid_(pid) {}
  Status Apply() override {
    LOOM_RETURN_IF_ERROR(SendSignal(pid_, SIGKILL));
    for (int i = 0; i < 400 && ProcessAlive(pid_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return OkStatus();
  }
  Status Undo() override { return OkStatus(); }  // a crash cannot be undone
  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["signal"] = "SIGKILL";
  }

 private:
  int pid_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeKillFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new KillFault(spec.pid));
}

}  // namespace loom::monitor::internal
