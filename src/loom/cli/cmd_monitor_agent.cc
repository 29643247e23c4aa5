// Placeholder: `loom monitor agent` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorAgent(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
