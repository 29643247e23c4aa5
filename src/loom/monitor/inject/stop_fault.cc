// stop: SIGSTOP the target (a hang: /proc state 'T', no progress, no traffic); SIGCONT on revert.
#include <signal.h>

#include <nlohmann/json.hpp>

#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/process_target.h"

namespace loom::monitor::internal {
namespace {

class StopFault : public Fault {
 public:
  explicit StopFault(int pid) : pid_(pid) {}
  Status Apply() override { return SendSignal(pid_, SIGSTOP); }
  Status Undo() override {
    Status s = SendSignal(pid_, SIGCONT);
    return s.code() == StatusCode::kNotFound ? OkStatus() : s;  // exited meanwhile: nothing to do
  }
  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["signal"] = "SIGSTOP";
    (*params)["revert_signal"] = "SIGCONT";
  }

 private:
  int pid_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeStopFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new StopFault(spec.pid));
}

}  // namespace loom::monitor::internal
