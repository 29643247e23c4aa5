// loom_costmodel_eval: scores the baselines (roofline, XGBoost, MLP without positions) on a
// collected dataset: held-out shapes, a held-out shape group, held-out devices, and KMeans vs
// random few-shot on each target device. Same flags as `loom trace costmodel eval`
// (eval_command.h), which also scores the libtorch transformer; this binary needs no torch.
//   loom_costmodel_eval --data ds.jsonl [--targets avx512x1] [--json out.json]
#include "loom/trace/costmodel/eval_command.h"

int main(int argc, char** argv) {
  using namespace loom::trace::costmodel;
  EvalCommand command;
  CLI::App app{"Evaluate latency-predictor baselines (devices = ISA/thread variants of one host)"};
  AddEvalFlags(app, &command);
  CLI11_PARSE(app, argc, argv);
  return RunEvalCommand(command);
}
