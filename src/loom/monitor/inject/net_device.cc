#include "loom/monitor/inject/net_device.h"

#include <sstream>

#include "loom/monitor/inject/command_runner.h"

namespace loom::monitor {

std::string DeviceName(const std::string& dev, const std::string& netns) {
  return "device '" + dev + "'" + (netns.empty() ? "" : " in netns '" + netns + "'");
}

Status CheckNetDevice(const std::string& dev, const std::string& netns) {
  if (dev.empty() || dev.size() > 15 || dev.find_first_of(" /:") != std::string::npos) {
    return InvalidArgumentError("dev (--dev) '" + dev + "' is not a network device name");
  }
  LOOM_RETURN_IF_ERROR(CheckNetns(netns));
  LOOM_ASSIGN_OR_RETURN(CommandOutput out,
                        RunCommand({"ip", "-o", "link", "show", "dev", dev}, netns));
  if (out.exit_code != 0) return NotFoundError(DeviceName(dev, netns) + " does not exist");
  return OkStatus();
}

Result<bool> NetDeviceIsUp(const std::string& dev, const std::string& netns) {
  LOOM_ASSIGN_OR_RETURN(std::string out,
                        RunChecked({"ip", "-o", "link", "show", "dev", dev}, netns));
  // "7: lva1@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ..."
  const size_t open = out.find('<');
  const size_t close = out.find('>', open);
  if (open == std::string::npos || close == std::string::npos) {
    return DataLossError("cannot parse the flags of " + DeviceName(dev, netns) + " from: " + out);
  }
  std::istringstream flags(out.substr(open + 1, close - open - 1));
  std::string f;
  while (std::getline(flags, f, ',')) {
    if (f == "UP") return true;
  }
  return false;
}

Result<std::string> RootQdiscKind(const std::string& dev, const std::string& netns) {
  LOOM_ASSIGN_OR_RETURN(std::string out,
                        RunChecked({"tc", "qdisc", "show", "dev", dev, "root"}, netns));
  // "qdisc noqueue 0: root refcnt 2"
  std::istringstream in(out);
  std::string word, kind;
  in >> word >> kind;
  if (word != "qdisc" || kind.empty()) {
    return DataLossError("cannot parse the root qdisc of " + DeviceName(dev, netns) +
                         " from: " + out);
  }
  return kind;
}

}  // namespace loom::monitor
