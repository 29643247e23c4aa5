// OpenMPI transport of `loom bench overlap-peer` (built when CMake finds MPI). C API only.
// MPI is initialised with MPI_THREAD_SINGLE semantics and no progress thread: OpenMPI 4.1's
// ob1/TCP path moves a rendezvous message only inside MPI calls, which is what the decomposed
// variant measures by calling MPI_Test between GEMM panels.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "loom/cli/bench_overlap_peer.h"

namespace loom::cli {
namespace {

Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return OkStatus();
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return UnavailableError(std::string(what) + " failed: " + std::string(msg, len));
}

class MpiPeerComm final : public PeerComm {
 public:
  MpiPeerComm() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiPeerComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, len);
    if (auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
    return v;
  }
  std::string notes() const override {
    int level = 0;
    MPI_Query_thread(&level);
    const char* btl = std::getenv("OMPI_MCA_btl");
    return "mpi_thread_level=" + std::to_string(level) +
           "; async_progress_thread=none (ob1 progresses only inside MPI calls)" +
           "; OMPI_MCA_btl=" + (btl ? btl : "(mpirun --mca)");
  }

  Status AllGather(const float* in, float* out, size_t count) override {
    return Check(MPI_Allgather(in, static_cast<int>(count), MPI_FLOAT, out,
                               static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD),
                 "MPI_Allgather");
  }
  Status ReduceScatter(const float* in, float* out, size_t count) override {
    return Check(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                          MPI_COMM_WORLD),
                 "MPI_Reduce_scatter_block");
  }
  Status AllToAllV(const float* in, const std::vector<int64_t>& send_counts, float* out,
                   const std::vector<int64_t>& recv_counts) override {
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    int so = 0, ro = 0;
    for (int p = 0; p < size_; ++p) {
      sc[p] = static_cast<int>(send_counts[p]);
      rc[p] = static_cast<int>(recv_counts[p]);
      sd[p] = so;
      rd[p] = ro;
      so += sc[p];
      ro += rc[p];
    }
    return Check(MPI_Alltoallv(in, sc.data(), sd.data(), MPI_FLOAT, out, rc.data(), rd.data(),
                               MPI_FLOAT, MPI_COMM_WORLD),
                 "MPI_Alltoallv");
  }
  Status AllReduceMax(double* data, size_t n) override {
    return Check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_MAX,
                               MPI_COMM_WORLD),
                 "MPI_Allreduce(max)");
  }
  Status Barrier() override { return Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  Result<int> Isend(const float* data, size_t count, int peer, int tag) override {
    MPI_Request req = MPI_REQUEST_NULL;
    LOOM_RETURN_IF_ERROR(Check(MPI_Isend(data, static_cast<int>(count), MPI_FLOAT, peer, tag,
                                         MPI_COMM_WORLD, &req),
                               "MPI_Isend"));
    return Keep(req);
  }
  Result<int> Irecv(float* data, size_t count, int peer, int tag) override {
    MPI_Request req = MPI_REQUEST_NULL;
    LOOM_RETURN_IF_ERROR(Check(MPI_Irecv(data, static_cast<int>(count), MPI_FLOAT, peer, tag,
                                         MPI_COMM_WORLD, &req),
                               "MPI_Irecv"));
    return Keep(req);
  }
  Result<bool> Test(int request) override {
    auto it = requests_.find(request);
    if (it == requests_.end()) return InvalidArgumentError("unknown MPI request handle");
    int flag = 0;
    LOOM_RETURN_IF_ERROR(Check(MPI_Test(&it->second, &flag, MPI_STATUS_IGNORE), "MPI_Test"));
    if (flag) requests_.erase(it);
    return flag != 0;
  }
  Status Wait(int request) override {
    auto it = requests_.find(request);
    if (it == requests_.end()) return InvalidArgumentError("unknown MPI request handle");
    Status s = Check(MPI_Wait(&it->second, MPI_STATUS_IGNORE), "MPI_Wait");
    requests_.erase(it);
    return s;
  }

 private:
  int Keep(MPI_Request req) {
    requests_.emplace(next_handle_, req);
    return next_handle_++;
  }

  int rank_ = 0;
  int size_ = 1;
  int next_handle_ = 0;  // handles are never reused
  std::map<int, MPI_Request> requests_;  // outstanding requests only
};

}  // namespace

Result<std::unique_ptr<PeerComm>> MakeMpiPeerComm() {
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) {
    return UnavailableError("the mpi impls must run under mpirun (OMPI_COMM_WORLD_RANK unset)");
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    return UnavailableError("MPI_Init failed");
  }
  return std::unique_ptr<PeerComm>(std::make_unique<MpiPeerComm>());
}

}  // namespace loom::cli
