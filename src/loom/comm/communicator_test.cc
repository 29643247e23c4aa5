// Runs the conformance suite on both backends: in-process threads and Gloo TCP over loopback
// (ranks as threads of this process, connected through a MemoryStore).
#include <gtest/gtest.h>

#include "loom/comm/gloo/gloo_transport.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/memory_store.h"
#include "loom/comm/testing/communicator_conformance.h"

namespace loom::comm::testing {
namespace {

BackendFactory InProcFactory() {
  return {"inproc", [](int n, CommunicatorOptions options) {
            std::shared_ptr<InProcHub> hub;
            World w;
            w.comms = MakeInProcCommunicators(n, options, &hub);
            w.kill = [hub](int rank) { hub->KillRank(rank); };
            return w;
          }};
}

BackendFactory GlooFactory() {
  return {"gloo", [](int n, CommunicatorOptions options) {
            auto store = std::make_shared<MemoryStore>();
            World w;
            w.comms.resize(n);
            RunRanks(n, [&](int r) {
              WorldInfo info{.rank = r, .world_size = n, .local_rank = r, .local_world_size = n};
              GlooOptions go{.timeout = std::chrono::seconds(30), .comm = options};
              auto c = ConnectGloo(info, *store, go);
              ASSERT_TRUE(c.ok()) << c.status().ToString();
              w.comms[r] = std::move(c).value();
            });
            return w;  // no kill hook: destroying a communicator closes its sockets
          }};
}

INSTANTIATE_TEST_SUITE_P(InProc, CommunicatorConformance, ::testing::Values(InProcFactory()),
                         [](const auto&) { return std::string("inproc"); });
INSTANTIATE_TEST_SUITE_P(Gloo, CommunicatorConformance, ::testing::Values(GlooFactory()),
                         [](const auto&) { return std::string("gloo"); });

TEST(GlooConnectTest, MissingPeerTimesOutNamingTheStore) {
  MemoryStore store;
  WorldInfo info{.rank = 0, .world_size = 2, .local_rank = 0, .local_world_size = 2};
  auto start = SteadyClock::now();
  auto c = ConnectGloo(info, store, {.timeout = std::chrono::milliseconds(500)});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDeadlineExceeded) << c.status().ToString();
  EXPECT_NE(c.status().message().find("rank 0 of 2"), std::string::npos) << c.status().ToString();
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - start).count(), 10.0);
}

}  // namespace
}  // namespace loom::comm::testing
