// Placeholder: `loom monitor simulate` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorSimulate(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
