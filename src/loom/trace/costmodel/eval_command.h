// The `eval` command shared by `loom trace costmodel eval` and loom_costmodel_eval: its flags
// (CLI11) and what it runs (ReadDataset, RunEvaluation, text report, optional JSON). The caller
// may set command.options.learned_model (the libtorch transformer) before running it.
//
// Thread-safety: call from one thread.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "loom/trace/costmodel/evaluate.h"

namespace loom::trace::costmodel {

struct EvalCommand {
  EvalOptions options;
  std::string data;      // dataset from `collect`
  std::string json_out;  // also write the report here ("" = no)
};

// --data --targets --group --fewshot-fraction --random-seeds --fewshot-methods --fewshot-only
// --fewshot-weight --max-iqr-rel --finetune-epochs --seed --xgb-rounds --mlp-epochs --json.
void AddEvalFlags(CLI::App& app, EvalCommand* command);
// Returns an exit code (0 ok, 1 failure) and prints the report or the error.
int RunEvalCommand(const EvalCommand& command);

}  // namespace loom::trace::costmodel
