// Placeholder: `loom robust` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterRobust(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
