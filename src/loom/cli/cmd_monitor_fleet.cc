// Placeholder: `loom monitor fleet` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorFleet(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
