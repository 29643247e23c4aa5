#include "loom/comm/world.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <sstream>

namespace loom::comm {

std::string_view LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kNone: return "none";
    case Launcher::kLoom: return "loom";
    case Launcher::kMpirun: return "mpirun";
    case Launcher::kSrun: return "srun";
  }
  return "?";
}

std::string WorldInfo::DebugString() const {
  std::ostringstream os;
  os << "rank " << rank << "/" << world_size << " (local " << local_rank << "/"
     << local_world_size << ", launcher " << LauncherName(launcher) << ", store " << store_url
     << ")";
  return os.str();
}

namespace {

struct VarNames {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

Status Validate(const WorldInfo& w, const VarNames& v) {
  if (w.world_size < 1) {
    return InvalidArgumentError(std::string(v.size) + "=" + std::to_string(w.world_size) +
                                " must be >= 1");
  }
  if (w.rank < 0 || w.rank >= w.world_size) {
    return InvalidArgumentError(std::string(v.rank) + "=" + std::to_string(w.rank) +
                                " is outside [0, " + std::to_string(w.world_size) + ")");
  }
  if (w.local_rank < 0 || w.local_rank >= w.local_world_size) {
    return InvalidArgumentError(std::string(v.local_rank) + "=" + std::to_string(w.local_rank) +
                                " is outside [0, " + std::to_string(w.local_world_size) + ")");
  }
  return OkStatus();
}

Result<WorldInfo> FromVars(const Env& env, const VarNames& v, Launcher launcher) {
  WorldInfo w;
  w.launcher = launcher;
  LOOM_ASSIGN_OR_RETURN(int64_t rank, env.GetInt(v.rank));
  LOOM_ASSIGN_OR_RETURN(int64_t size, env.GetInt(v.size));
  w.rank = static_cast<int>(rank);
  w.world_size = static_cast<int>(size);
  LOOM_ASSIGN_OR_RETURN(int64_t local_rank, env.GetInt(v.local_rank, rank));
  // Slurm writes SLURM_NTASKS_PER_NODE as "4(x2)": the leading integer is this node's count.
  int64_t local_size = size;
  if (auto text = env.Get(v.local_size)) {
    size_t digits = 0;
    while (digits < text->size() && std::isdigit(static_cast<unsigned char>((*text)[digits]))) {
      ++digits;
    }
    if (digits == 0) {
      return InvalidArgumentError(std::string(v.local_size) + "='" + *text +
                                  "' is not an integer");
    }
    local_size = std::stoll(text->substr(0, digits));
  }
  w.local_rank = static_cast<int>(local_rank);
  w.local_world_size = static_cast<int>(local_size);
  LOOM_RETURN_IF_ERROR(Validate(w, v));
  return w;
}

std::string DefaultSharedStore(const std::string& job_id) {
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  if (ec) cwd = "/tmp";
  return "file://" + cwd + "/.loom_rendezvous/" + job_id;
}

}  // namespace

Result<WorldInfo> WorldFromEnv(const Env& env) {
  if (env.Has("LOOM_RANK") || env.Has("LOOM_WORLD_SIZE")) {
    LOOM_ASSIGN_OR_RETURN(
        WorldInfo w,
        FromVars(env, {"LOOM_RANK", "LOOM_WORLD_SIZE", "LOOM_LOCAL_RANK", "LOOM_LOCAL_WORLD_SIZE"},
                 Launcher::kLoom));
    auto store = env.Get("LOOM_STORE");
    if (!store && w.world_size > 1) {
      return InvalidArgumentError(
          "LOOM_RANK/LOOM_WORLD_SIZE are set but LOOM_STORE is not: ranks need a rendezvous "
          "store (file:///shared/dir or redis://host:port)");
    }
    w.store_url = store.value_or("");
    w.run_id = env.Get("LOOM_RUN_ID").value_or("loom");
    return w;
  }
  if (env.Has("OMPI_COMM_WORLD_RANK")) {
    LOOM_ASSIGN_OR_RETURN(WorldInfo w, FromVars(env,
                                                {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                                 "OMPI_COMM_WORLD_LOCAL_RANK",
                                                 "OMPI_COMM_WORLD_LOCAL_SIZE"},
                                                Launcher::kMpirun));
    std::string job = env.Get("OMPI_MCA_ess_base_jobid").value_or("mpirun");
    w.run_id = env.Get("LOOM_RUN_ID").value_or("ompi-" + job);
    w.store_url = env.Get("LOOM_STORE").value_or(DefaultSharedStore(w.run_id));
    return w;
  }
  if (env.Has("SLURM_PROCID") && env.Has("SLURM_NTASKS")) {
    LOOM_ASSIGN_OR_RETURN(WorldInfo w,
                          FromVars(env, {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                                         "SLURM_NTASKS_PER_NODE"},
                                   Launcher::kSrun));
    std::string job = env.Get("SLURM_JOB_ID").value_or("0") + "." +
                      env.Get("SLURM_STEP_ID").value_or("0");
    w.run_id = env.Get("LOOM_RUN_ID").value_or("slurm-" + job);
    w.store_url = env.Get("LOOM_STORE").value_or(DefaultSharedStore(w.run_id));
    return w;
  }
  WorldInfo w;
  w.run_id = env.Get("LOOM_RUN_ID").value_or("single");
  w.store_url = env.Get("LOOM_STORE").value_or("");
  return w;
}

}  // namespace loom::comm
