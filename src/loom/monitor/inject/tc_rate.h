// Parses a tc rate ("10mbit", "1gbit", "500kbit", "125kbps", "100bit") into bits per second,
// accepting only tc's decimal units so that what is recorded is what tc applies.
//
//   LOOM_ASSIGN_OR_RETURN(double bps, ParseTcRate("10mbit"));   // 1e7
#pragma once

#include <string>

#include "loom/base/status.h"

namespace loom::monitor {

Result<double> ParseTcRate(const std::string& rate);

}  // namespace loom::monitor
