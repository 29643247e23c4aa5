// `loom env`: the environment variables loom reads, their values here and their defaults.
#include <cstdio>

#include "loom/base/env_params.h"
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterEnv(CLI::App& app, CliContext* ctx) {
  auto* cmd = app.add_subcommand("env", "list the environment variables loom reads");
  cmd->callback([ctx] {
    Env env = Env::Process();
    for (const EnvParam& p : KnownEnvParams()) {
      auto v = env.Get(p.name);
      std::printf("%-28s %-24s %s%s%s\n", std::string(p.name).c_str(),
                  v ? v->c_str() : "(unset)", std::string(p.help).c_str(),
                  p.default_value.empty() ? "" : "; default ",
                  std::string(p.default_value).c_str());
    }
    ctx->exit_code = 0;
  });
}

}  // namespace loom::cli
