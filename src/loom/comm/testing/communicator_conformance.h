// The conformance suite every Communicator backend runs: each collective for world sizes 1-4,
// every DType, odd sizes, both algorithms, against a scalar reference; plus timeouts, dead peers
// and argument errors.
//
// A backend registers itself with
//   INSTANTIATE_TEST_SUITE_P(MyBackend, CommunicatorConformance,
//                            ::testing::Values(MyBackendFactory()));
// where the factory builds N connected communicators in this process (rank r's is used by the
// thread of rank r) and can kill a rank to simulate a peer failure.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "loom/comm/communicator.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::comm::testing {

struct World {
  std::vector<std::unique_ptr<Communicator>> comms;
  // Makes `rank` look dead to its peers (marks it failed). Empty: the rank's communicator is
  // destroyed, which closes its connections as a crashed process would.
  std::function<void(int rank)> kill;

  void Kill(int rank) {
    if (kill) {
      kill(rank);
    } else {
      comms[rank].reset();
    }
  }
};

struct BackendFactory {
  std::string name;
  std::function<World(int world_size, CommunicatorOptions options)> make;
};

inline std::ostream& operator<<(std::ostream& os, const BackendFactory& f) { return os << f.name; }

class CommunicatorConformance : public ::testing::TestWithParam<BackendFactory> {
 protected:
  World Make(int n, CommunicatorOptions options = {}) { return GetParam().make(n, options); }
};

}  // namespace loom::comm::testing
