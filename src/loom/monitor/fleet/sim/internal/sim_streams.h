// Philox stream ids of the fleet simulator: each random quantity has its own stream so that,
// e.g., adding a fault to a plan does not change any machine's noise.
#pragma once

#include <cstdint>

namespace loom::monitor::internal {

inline constexpr uint64_t kRegimeStream = 1;
inline constexpr uint64_t kFaultStream = 2;
inline constexpr uint64_t kStepJitterStream = 3;
// Per machine: kMachineStreamBase + 4 * machine + {0: gains and phase, 1: noise, 2: spikes}.
inline constexpr uint64_t kMachineStreamBase = 16;
inline constexpr uint64_t MachineStream(int machine, int purpose) {
  return kMachineStreamBase + 4 * static_cast<uint64_t>(machine) + purpose;
}

}  // namespace loom::monitor::internal
