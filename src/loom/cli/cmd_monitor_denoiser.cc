// Placeholder: `loom monitor denoiser` is being written.
#include "loom/cli/commands.h"

namespace loom::cli {

void RegisterMonitorDenoiser(CLI::App& app, CliContext* ctx) {}

}  // namespace loom::cli
