#include "loom/cli/rank_setup.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

extern char** environ;

#include "loom/cli/commands.h"
#include "loom/comm/gloo/gloo_transport.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/launcher.h"

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
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (!env.count(kv.substr(0, kv.find('=')))) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid;
  if (::posix_spawnp(&pid, cargv[0], nullptr, nullptr, cargv.data(), cenv.data()) != 0) {
    std::fprintf(stderr, "loom: cannot run %s\n", cargv[0]);
    return 127;
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
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
