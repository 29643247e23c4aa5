// Stand-in for bench_mpi.cc when loom is built without MPI: the MPI arms report themselves as
// unavailable and `loom bench collectives` skips them, saying so.
#include "loom/cli/bench_arm.h"

namespace loom::cli {

bool MpiEnabled() { return false; }
Status MpiInit() { return OkStatus(); }
void MpiFinalize() {}
Result<std::unique_ptr<BenchArm>> MakeMpiArm(BenchOp, float*, float*, size_t) {
  return UnavailableError("loom was built without MPI");
}

}  // namespace loom::cli
