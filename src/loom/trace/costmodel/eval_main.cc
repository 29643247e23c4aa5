// loom_costmodel_eval: scores the baselines (roofline, XGBoost, MLP without positions) on a
// collected dataset: held-out shapes, a held-out shape group, held-out devices, and KMeans vs
// random few-shot on each target device.
//   loom_costmodel_eval --data ds.jsonl [--targets avx512x1] [--json out.json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "loom/trace/costmodel/evaluate.h"

int main(int argc, char** argv) {
  using namespace loom::trace::costmodel;
  EvalOptions o;
  std::string data, json_out;
  CLI::App app{"Evaluate latency-predictor baselines (devices = ISA/thread variants of one host)"};
  app.add_option("--data", data, "dataset from loom_costmodel_collect")->required();
  app.add_option("--targets", o.target_devices, "held-out devices (default: all)");
  app.add_option("--group", o.holdout_group, "held-out shape group")->default_val(o.holdout_group);
  app.add_option("--fewshot-fraction", o.fewshot_fraction)->default_val(o.fewshot_fraction);
  app.add_option("--random-seeds", o.random_seeds)->default_val(o.random_seeds);
  app.add_option("--fewshot-weight", o.fewshot_weight, "XGBoost weight / MLP copies of a pick")
      ->default_val(o.fewshot_weight);
  app.add_option("--max-iqr-rel", o.max_iqr_rel, "drop samples with noisier timings first")
      ->default_val(o.max_iqr_rel);
  app.add_option("--finetune-epochs", o.finetune_epochs)->default_val(o.finetune_epochs);
  app.add_option("--seed", o.seed)->default_val(o.seed);
  app.add_option("--xgb-rounds", o.xgb.rounds)->default_val(o.xgb.rounds);
  app.add_option("--mlp-epochs", o.mlp.epochs)->default_val(o.mlp.epochs);
  app.add_option("--json", json_out, "also write the report as JSON");
  CLI11_PARSE(app, argc, argv);
  loom::Result<Dataset> ds = ReadDataset(data);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "dataset %s: %zu samples, %zu devices (ISA/thread variants sharing one memory "
      "hierarchy)\n",
      data.c_str(), ds->samples.size(), ds->devices.size());
  loom::Result<EvalReport> r = RunEvaluation(*ds, o);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 1;
  }
  if (o.max_iqr_rel > 0) std::printf("kept samples with IQR/median <= %g\n", o.max_iqr_rel);
  std::printf("%s", r->ToText().c_str());
  if (!json_out.empty()) std::ofstream(json_out) << r->ToJson() << "\n";
  return 0;
}
