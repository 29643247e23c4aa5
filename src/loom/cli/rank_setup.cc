#include "loom/cli/rank_setup.h"

#include <unistd.h>

#include <cstdio>

#include "loom/cli/commands.h"
#include "loom/comm/gloo/gloo_transport.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/launcher.h"
#include "loom/comm/subprocess.h"

namespace loom::cli {

bool UnderLauncher() {
  auto w = comm::WorldFromEnv(Env::Process());
  return w.ok() && w->launcher != comm::Launcher::kNone;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "loom";
  return std::string(buf, static_cast<size_t>(n));
}

Result<RankContext> ConnectRank(const std::string& purpose) {
  RankContext ctx;
  LOOM_ASSIGN_OR_RETURN(ctx.world, comm::WorldFromEnv(Env::Process()));
  if (ctx.world.world_size == 1) {
    ctx.comm = std::move(comm::MakeInProcCommunicators(1)[0]);
    return ctx;
  }
  LOOM_ASSIGN_OR_RETURN(ctx.store, comm::OpenStore(ctx.world.store_url,
                                                   ctx.world.run_id + "/" + purpose));
  LOOM_ASSIGN_OR_RETURN(ctx.comm, comm::ConnectGloo(ctx.world, *ctx.store));
  return ctx;
}

int RunForeground(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env) {
  comm::Subprocess child;
  if (Status s = child.Start(argv, env, /*capture_output=*/false); !s.ok()) {
    std::fprintf(stderr, "loom: %s\n", s.ToString().c_str());
    return 127;
  }
  return child.Wait().ShellCode();
}

int RelaunchAsRanks(const std::vector<std::string>& argv, int nproc, const std::string& who) {
  comm::LaunchOptions o;
  o.nproc = nproc;
  o.argv = argv;
  o.argv[0] = SelfExe();
  auto r = comm::Launch(o);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), r.status().ToString().c_str());
    return kExitFailure;
  }
  if (r->exit_code != 0) std::fprintf(stderr, "%s: %s\n", who.c_str(), r->message.c_str());
  return r->exit_code;
}

}  // namespace loom::cli
