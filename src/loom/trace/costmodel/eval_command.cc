#include "loom/trace/costmodel/eval_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace loom::trace::costmodel {

void AddEvalFlags(CLI::App& app, EvalCommand* c) {
  EvalOptions& o = c->options;
  app.add_option("--data", c->data, "dataset from `collect`")->required();
  app.add_option("--targets", o.target_devices, "held-out devices (default: all)");
  app.add_option("--group", o.holdout_group, "held-out shape group")->default_val(o.holdout_group);
  app.add_option("--fewshot-fraction", o.fewshot_fraction)->default_val(o.fewshot_fraction);
  app.add_option("--random-seeds", o.random_seeds, "seeds per few-shot method")
      ->default_val(o.random_seeds);
  app.add_option("--fewshot-methods", o.fewshot_methods,
                 "random stratified kmeans kmeans_unweighted kmeans_pooled (old selection)")
      ->default_val(o.fewshot_methods);
  app.add_flag_function(
      "--fewshot-only", [&o](std::int64_t) { o.run_splits = false; },
      "skip the MAPE splits, run only the few-shot comparison");
  app.add_option("--fewshot-weight", o.fewshot_weight, "XGBoost weight / MLP copies of a pick")
      ->default_val(o.fewshot_weight);
  app.add_option("--fewshot-adapt", o.fewshot_adapt,
                 "retrain (XGBoost retrains, models fine-tune) or calibrate (fit ln y = a + b ln "
                 "yhat on the picks)")
      ->default_val(o.fewshot_adapt)
      ->check(CLI::IsMember({"retrain", "calibrate"}));
  app.add_option("--calibration-ridge", o.calibration_ridge, "slope ridge of --fewshot-adapt calibrate")
      ->default_val(o.calibration_ridge);
  app.add_option("--max-iqr-rel", o.max_iqr_rel, "drop samples with noisier timings first")
      ->default_val(o.max_iqr_rel);
  app.add_option("--finetune-epochs", o.finetune_epochs)->default_val(o.finetune_epochs);
  app.add_option("--seed", o.seed)->default_val(o.seed);
  app.add_option("--xgb-rounds", o.xgb.rounds)->default_val(o.xgb.rounds);
  app.add_option("--mlp-epochs", o.mlp.epochs)->default_val(o.mlp.epochs);
  app.add_option("--json", c->json_out, "also write the report as JSON");
}

int RunEvalCommand(const EvalCommand& c) {
  const auto start = std::chrono::steady_clock::now();
  Result<Dataset> ds = ReadDataset(c.data);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "dataset %s: %zu samples, %zu devices (ISA/thread variants sharing one memory "
      "hierarchy)\n",
      c.data.c_str(), ds->samples.size(), ds->devices.size());
  std::fflush(stdout);
  Result<EvalReport> r = RunEvaluation(*ds, c.options);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 1;
  }
  if (c.options.max_iqr_rel > 0) {
    std::printf("kept samples with IQR/median <= %g\n", c.options.max_iqr_rel);
  }
  std::printf("%s", r->ToText().c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("evaluation took %.0f s\n", seconds);
  if (!c.json_out.empty()) {
    nlohmann::json j = nlohmann::json::parse(r->ToJson());
    j["dataset"] = c.data;
    j["samples"] = ds->samples.size();
    j["seconds"] = seconds;
    j["note"] = "devices are ISA/thread variants of one host sharing one memory hierarchy";
    const EvalOptions& o = c.options;
    j["options"] = {{"targets", o.target_devices},
                    {"fewshot_fraction", o.fewshot_fraction},
                    {"fewshot_methods", o.fewshot_methods},
                    {"seeds", o.random_seeds},
                    {"fewshot_weight", o.fewshot_weight},
                    {"fewshot_adapt", o.fewshot_adapt},
                    {"calibration_ridge", o.calibration_ridge},
                    {"finetune_epochs", o.finetune_epochs},
                    {"seed", o.seed},
                    {"run_splits", o.run_splits},
                    {"learned_model", o.learned_model ? o.learned_model_name : ""},
                    {"adapt_to_test", o.adapt_to_test}};
    std::ofstream out(c.json_out);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", c.json_out.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace loom::trace::costmodel
