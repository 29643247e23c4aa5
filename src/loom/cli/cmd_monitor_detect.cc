// Placeholder: `loom monitor detect|eval` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorDetect(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
