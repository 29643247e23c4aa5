// Facts about a network device (in a named namespace or the current one), read with iproute2.
//
//   LOOM_RETURN_IF_ERROR(CheckNetDevice("lva42", "loom-a-42"));  // NotFound names dev and netns
//   LOOM_ASSIGN_OR_RETURN(bool up, NetDeviceIsUp("lva42", "loom-a-42"));
//   LOOM_ASSIGN_OR_RETURN(std::string kind, RootQdiscKind("lva42", "loom-a-42"));  // "noqueue"
//
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "loom/base/status.h"

namespace loom::monitor {

// "device 'X' in netns 'NS'" / "device 'X'" (for messages).
std::string DeviceName(const std::string& dev, const std::string& netns);

// OK if the namespace exists and holds the device; NotFound otherwise.
Status CheckNetDevice(const std::string& dev, const std::string& netns);

// Whether the device is administratively up (UP among its flags).
Result<bool> NetDeviceIsUp(const std::string& dev, const std::string& netns);

// The kind of the device's root qdisc ("noqueue", "pfifo_fast", "tbf", ...).
Result<std::string> RootQdiscKind(const std::string& dev, const std::string& netns);

}  // namespace loom::monitor
