// BenchArm: one implementation of one collective, run repeatedly on fixed buffers by
// `loom bench collectives` (loom's algorithms, Gloo's own algorithms, OpenMPI).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/comm/communicator.h"

namespace loom::cli {

enum class BenchOp { kAllReduce, kReduceScatter, kAllGather };

class BenchArm {
 public:
  virtual ~BenchArm() = default;
  virtual Status Run() = 0;
  const std::string& name() const { return name_; }

 protected:
  explicit BenchArm(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// MPI peers; available when loom was built with MPI and this process runs under mpirun.
bool MpiEnabled();
Status MpiInit();
void MpiFinalize();
// `in` and `out` as for the loom arm of `op`; count = elements of the larger buffer.
Result<std::unique_ptr<BenchArm>> MakeMpiArm(BenchOp op, float* in, float* out, size_t count);

}  // namespace loom::cli
