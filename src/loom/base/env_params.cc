#include "loom/base/env_params.h"

#include <cstdlib>

namespace loom {

std::span<const EnvParam> KnownEnvParams() {
  static constexpr EnvParam kParams[] = {
      {"LOOM_RANK", "", "this process's rank (set by `loom launch`)"},
      {"LOOM_WORLD_SIZE", "", "number of ranks (set by `loom launch`)"},
      {"LOOM_LOCAL_RANK", "", "rank within this host (set by `loom launch`)"},
      {"LOOM_LOCAL_WORLD_SIZE", "", "ranks on this host (set by `loom launch`)"},
      {"LOOM_STORE", "",
       "rendezvous store: file:///shared/dir (default under launchers: "
       "./.loom_rendezvous/<job id>) or redis://host:port"},
      {"LOOM_RUN_ID", "", "run identifier shared by all ranks (set by `loom launch`)"},
      {"LOOM_HOST_ADDR", "",
       "address Gloo's TCP transport binds to (default: this host's name, as Gloo resolves it)"},
      {"LOOM_COMM_TIMEOUT_MS", "300000",
       "default timeout of a collective or rendezvous in milliseconds"},
      {"LOOM_COMM_SEGMENT_BYTES", "",
       "pipelining unit of loom's ring collectives (overrides the communicator's default)"},
      {"LOOM_COMM_DIRECT_MAX_BYTES", "",
       "largest all-reduce that uses the direct exchange instead of the ring"},
      {"LOOM_LOG_LEVEL", "info", "log threshold, e.g. 'info' or 'warn,comm=debug'"},
      {"LOOM_CACHE_DIR", "~/.cache/loom", "where measured machine facts (GEMM peak) are cached"},
      {"LOOM_NUM_THREADS", "", "compute threads per rank (default: cores / local ranks)"},
      {"LOOM_SIMD", "auto",
       "compression kernels: auto (best this CPU has), avx512, avx2 or scalar (same bytes)"},
      {"OMPI_COMM_WORLD_RANK", "", "rank under OpenMPI's mpirun"},
      {"OMPI_COMM_WORLD_SIZE", "", "world size under OpenMPI's mpirun"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "", "local rank under OpenMPI's mpirun"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "", "local world size under OpenMPI's mpirun"},
      {"OMPI_MCA_ess_base_jobid", "", "job id under OpenMPI (names the default store)"},
      {"SLURM_PROCID", "", "rank under srun"},
      {"SLURM_NTASKS", "", "world size under srun"},
      {"SLURM_LOCALID", "", "local rank under srun"},
      {"SLURM_NTASKS_PER_NODE", "", "local world size under srun"},
      {"SLURM_JOB_ID", "", "job id under srun (names the default store)"},
      {"SLURM_STEP_ID", "", "step id under srun (names the default store)"},
  };
  return kParams;
}

Env Env::Process() { return Env(); }

Env Env::FromMap(std::map<std::string, std::string> vars) {
  Env e;
  e.from_process_ = false;
  for (auto& [k, v] : vars) e.vars_.emplace(k, v);
  return e;
}

std::optional<std::string> Env::Get(std::string_view name) const {
  if (from_process_) {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  }
  auto it = vars_.find(name);
  if (it == vars_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

Result<int64_t> Env::GetInt(std::string_view name, std::optional<int64_t> fallback) const {
  std::optional<std::string> v = Get(name);
  if (!v) {
    if (fallback) return *fallback;
    return NotFoundError("environment variable " + std::string(name) + " is not set");
  }
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v->c_str(), &end, 10);
  if (errno != 0 || end == v->c_str() || *end != '\0') {
    return InvalidArgumentError("environment variable " + std::string(name) + "='" + *v +
                                "' is not an integer");
  }
  return static_cast<int64_t>(x);
}

}  // namespace loom
