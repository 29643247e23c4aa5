// The `collect` command shared by `loom trace costmodel collect` and loom_costmodel_collect:
// its flags (CLI11) and what it runs (Collect, then WriteDataset), so both front ends stay equal.
//
// Thread-safety: call from one thread.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "loom/trace/costmodel/collect.h"

namespace loom::trace::costmodel {

struct CollectCommand {
  CollectOptions options;
  std::vector<std::string> devices;  // e.g. {"scalarx1", "avx2x2"}; empty: all supported
  std::string out;                   // dataset path (JSON Lines)
};

// --n --out --seed --time-budget-s --devices --devices-per-kernel --max-flops.
void AddCollectFlags(CLI::App& app, CollectCommand* command);
// Collects, prints the measured devices to stderr, writes the dataset. Returns an exit code
// (0 ok, 1 runtime failure, 2 bad device name) and prints the error.
int RunCollectCommand(CollectCommand command);

}  // namespace loom::trace::costmodel
