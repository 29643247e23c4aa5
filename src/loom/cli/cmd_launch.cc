// `loom launch -n N [--torch-env] [--timeout S] -- CMD ARGS...`
#include <cstdio>

#include "loom/cli/commands.h"
#include "loom/comm/launcher.h"

namespace loom::cli {

void RegisterLaunch(CLI::App& app, CliContext* ctx) {
  auto* cmd = app.add_subcommand(
      "launch", "start N local ranks of a command (like torchrun --standalone) and supervise them");
  struct Args {
    int nproc = 2;
    bool torch_env = false;
    bool no_prefix = false;
    double timeout_s = 0;
    double grace_s = 5;
    std::string store;
    std::vector<std::string> command;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("-n,--nproc", args->nproc, "number of ranks")->check(CLI::PositiveNumber);
  cmd->add_flag("--torch-env", args->torch_env,
                "also set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT for PyTorch");
  cmd->add_flag("--no-prefix", args->no_prefix, "do not prefix output lines with [rank N]");
  cmd->add_option("--timeout", args->timeout_s, "stop all ranks after this many seconds (0: none)");
  cmd->add_option("--grace", args->grace_s, "seconds between SIGTERM and SIGKILL when stopping");
  cmd->add_option("--store", args->store,
                  "rendezvous store for the ranks (redis://host:port or file:///dir; default: a "
                  "fresh temporary file store)");
  cmd->add_option("command", args->command, "command and arguments (after --)")->required();
  cmd->callback([args, ctx] {
    comm::LaunchOptions o;
    o.nproc = args->nproc;
    o.argv = args->command;
    o.torch_env = args->torch_env;
    o.store_url = args->store;
    o.prefix_output = !args->no_prefix;
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(args->timeout_s * 1000));
    o.grace = std::chrono::milliseconds(static_cast<int64_t>(args->grace_s * 1000));
    auto r = comm::Launch(o);
    if (!r.ok()) {
      std::fprintf(stderr, "loom launch: %s\n", r.status().ToString().c_str());
      ctx->exit_code = kExitFailure;
      return;
    }
    if (r->exit_code != 0) std::fprintf(stderr, "loom launch: %s\n", r->message.c_str());
    ctx->exit_code = r->exit_code;
  });
}

}  // namespace loom::cli
