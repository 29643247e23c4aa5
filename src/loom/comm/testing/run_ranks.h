// RunRanks: runs fn(rank) on one thread per rank and joins them (ranks as threads in tests).
#pragma once

#include <functional>

namespace loom::comm::testing {

void RunRanks(int world_size, const std::function<void(int rank)>& fn);

}  // namespace loom::comm::testing
