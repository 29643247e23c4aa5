#include "loom/comm/testing/run_ranks.h"

#include <thread>
#include <vector>

namespace loom::comm::testing {

void RunRanks(int world_size, const std::function<void(int rank)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) threads.emplace_back([&fn, r] { fn(r); });
  for (auto& t : threads) t.join();
}

}  // namespace loom::comm::testing
