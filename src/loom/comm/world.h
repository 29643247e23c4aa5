// WorldInfo: who this process is in the job, read from the launcher's environment.
//
// Sources, in order: loom's own (`LOOM_RANK`, `LOOM_WORLD_SIZE`, `LOOM_LOCAL_RANK`,
// `LOOM_LOCAL_WORLD_SIZE`, `LOOM_STORE`, set by `loom launch` / `loom train --nproc`), OpenMPI's
// mpirun (`OMPI_COMM_WORLD_*`) and Slurm's srun (`SLURM_PROCID`, `SLURM_NTASKS`, ...). Under
// mpirun/srun the store defaults to `file://$PWD/.loom_rendezvous/<job id>` (the working directory
// must then be shared by the hosts) unless LOOM_STORE is set.
// Thread-safety: value type.
#pragma once

#include <string>

#include "loom/base/env_params.h"
#include "loom/base/status.h"

namespace loom::comm {

enum class Launcher { kNone, kLoom, kMpirun, kSrun };
std::string_view LauncherName(Launcher l);

struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string store_url;  // where ranks rendezvous
  std::string run_id;     // shared by all ranks of one job (namespaces store keys)
  Launcher launcher = Launcher::kNone;

  std::string DebugString() const;
};

// kNone when no launcher variables are present (a single process, rank 0 of 1).
// Errors name the variable that is missing or inconsistent.
Result<WorldInfo> WorldFromEnv(const Env& env);

}  // namespace loom::comm
