// OpenMPI arms of `loom bench collectives` (built when CMake finds MPI).
// C API only: OpenMPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

#include "loom/cli/bench_arm.h"

namespace loom::cli {
namespace {

class MpiArm final : public BenchArm {
 public:
  MpiArm(BenchOp op, float* in, float* out, size_t count)
      : BenchArm("mpi"), op_(op), in_(in), out_(out), count_(count) {
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  Status Run() override {
    int rc = MPI_SUCCESS;
    const int n = static_cast<int>(count_), block = static_cast<int>(count_ / size_);
    switch (op_) {
      case BenchOp::kAllReduce:
        rc = MPI_Allreduce(MPI_IN_PLACE, out_, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case BenchOp::kReduceScatter:
        rc = MPI_Reduce_scatter_block(in_, out_, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case BenchOp::kAllGather:
        rc = MPI_Allgather(in_, block, MPI_FLOAT, out_, block, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    }
    if (rc != MPI_SUCCESS) return UnavailableError("MPI collective failed with code " + std::to_string(rc));
    return OkStatus();
  }

 private:
  BenchOp op_;
  float* in_;
  float* out_;
  size_t count_;
  int size_ = 1;
};

bool g_mpi_initialised = false;

}  // namespace

bool MpiEnabled() { return g_mpi_initialised; }

Status MpiInit() {
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) return OkStatus();  // not under mpirun
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) return UnavailableError("MPI_Init failed");
  g_mpi_initialised = true;
  return OkStatus();
}

void MpiFinalize() {
  if (g_mpi_initialised) MPI_Finalize();
  g_mpi_initialised = false;
}

Result<std::unique_ptr<BenchArm>> MakeMpiArm(BenchOp op, float* in, float* out, size_t count) {
  return std::unique_ptr<BenchArm>(std::make_unique<MpiArm>(op, in, out, count));
}

}  // namespace loom::cli
