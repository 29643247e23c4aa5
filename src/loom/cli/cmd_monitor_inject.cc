// Placeholder: `loom monitor inject` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorInject(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
