// flap: a NIC/link flap. `ip link set dev DEV down`, and up again on revert (for a veth the peer
// loses carrier too). A device that is already down is refused: revert would wrongly bring it up.
#include <nlohmann/json.hpp>

#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/net_device.h"

namespace loom::monitor::internal {
namespace {

class FlapFault : public Fault {
 public:
  explicit FlapFault(const FaultSpec& spec) : dev_(spec.dev), netns_(spec.netns) {}

  Status Apply() override {
    LOOM_RETURN_IF_ERROR(CheckNetDevice(dev_, netns_));
    LOOM_ASSIGN_OR_RETURN(bool up, NetDeviceIsUp(dev_, netns_));
    if (!up) {
      return FailedPreconditionError(DeviceName(dev_, netns_) +
                                     " is already down; flap needs an up link");
    }
    return RunChecked({"ip", "link", "set", "dev", dev_, "down"}, netns_).status();
  }

  Status Undo() override {
    return RunChecked({"ip", "link", "set", "dev", dev_, "up"}, netns_).status();
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["action"] = "link down, up on revert";
  }

 private:
  std::string dev_, netns_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeFlapFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new FlapFault(spec));
}

}  // namespace loom::monitor::internal
