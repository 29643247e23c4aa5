// `loom trace costmodel collect|train|predict|eval`: the CDMPP-style kernel latency predictor
// (loom/trace/costmodel). collect and eval share their flags and logic with the standalone
// loom_costmodel_collect / loom_costmodel_eval (collect_command.h, eval_command.h); eval adds the
// libtorch transformer (transformer_torch.h) next to the roofline / XGBoost / MLP baselines.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "loom/cli/commands.h"
#include "loom/trace/costmodel/collect_command.h"
#include "loom/trace/costmodel/eval_command.h"
#include "loom/trace/costmodel/metrics.h"
#include "loom/trace/costmodel/transformer_torch.h"

namespace loom::cli {
namespace {

namespace cm = trace::costmodel;

void AddTransformerFlags(CLI::App* app, cm::TransformerOptions* o) {
  app->add_option("--epochs", o->epochs, "transformer training epochs")->default_val(o->epochs);
  app->add_option("--batch", o->batch)->default_val(o->batch);
  app->add_option("--lr", o->lr, "Adam learning rate (cosine-decayed)")->default_val(o->lr);
  app->add_option("--d-model", o->d_model)->default_val(o->d_model);
  app->add_option("--layers", o->layers, "encoder layers")->default_val(o->layers);
  app->add_option("--mape-weight", o->mape_weight, "weight of the MAPE loss term")
      ->default_val(o->mape_weight);
  app->add_option("--cmd-weight", o->cmd_weight, "weight of the CMD domain-adaptation term")
      ->default_val(o->cmd_weight);
  app->add_option("--cmd-order", o->cmd_order, "highest central moment in CMD")
      ->default_val(o->cmd_order);
  app->add_flag_callback("--no-pe", [o] { o->positional_encoding = false; },
                         "drop the pre-order positional encoding (ablation)");
  app->add_option("--model-seed", o->seed, "transformer initialisation/shuffle seed")
      ->default_val(o->seed);
  app->add_flag("--verbose", o->verbose, "per-epoch loss on stderr");
}

int Fail(const Status& s) {
  std::fprintf(stderr, "loom trace costmodel: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

void PrintAccuracy(const char* what, const cm::Dataset& ds, const std::vector<int>& idx,
                   const std::vector<double>& pred) {
  std::vector<double> truth;
  for (int i : idx) truth.push_back(ds.samples[i].latency_s);
  std::printf("%-28s n=%-5zu MAPE %5.1f%%  MdAPE %5.1f%%  RMSE(ln) %.3f  tau %.3f\n", what,
              idx.size(), 100 * cm::Mape(truth, pred), 100 * cm::MedianApe(truth, pred),
              cm::RmseLog(truth, pred), cm::KendallTau(truth, pred));
}

struct TrainArgs {
  std::string data, out;
  std::vector<std::string> exclude_devices;
  cm::TransformerOptions options;
};

Status RunTrain(const TrainArgs& a) {
  LOOM_ASSIGN_OR_RETURN(cm::Dataset ds, cm::ReadDataset(a.data));
  std::vector<int> train, held;
  for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
    const bool out = std::find(a.exclude_devices.begin(), a.exclude_devices.end(),
                               ds.samples[i].device) != a.exclude_devices.end();
    (out ? held : train).push_back(i);
  }
  for (const std::string& d : a.exclude_devices) {
    if (ds.FindDevice(d) == nullptr) {
      return InvalidArgumentError("--exclude-devices: device '" + d + "' is not in " + a.data);
    }
  }
  cm::TransformerPredictor model(a.options);
  LOOM_RETURN_IF_ERROR(model.Train(ds, train, held));
  const cm::TransformerTrainingLog& log = model.training_log();
  std::printf("trained on %zu samples (%zu held-out-device samples unlabelled for CMD) in %.1f s;"
              " loss %.4f -> %.4f, best epoch %d (validation RMSE(ln) %.3f)\n",
              train.size(), held.size(), log.seconds, log.epoch_loss.front(),
              log.epoch_loss.back(), log.best_epoch, log.best_validation_rmse_log);
  LOOM_ASSIGN_OR_RETURN(std::vector<double> pt, model.PredictSeconds(ds, train));
  PrintAccuracy("training devices (in-sample)", ds, train, pt);
  if (!held.empty()) {
    LOOM_ASSIGN_OR_RETURN(std::vector<double> ph, model.PredictSeconds(ds, held));
    PrintAccuracy("excluded devices", ds, held, ph);
  }
  LOOM_RETURN_IF_ERROR(model.Save(a.out));
  std::printf("wrote %s\n", a.out.c_str());
  return OkStatus();
}

struct PredictArgs {
  std::string model, data, json_out;
  std::vector<std::string> devices;
};

Status RunPredict(const PredictArgs& a) {
  LOOM_ASSIGN_OR_RETURN(cm::TransformerPredictor model, cm::TransformerPredictor::Load(a.model));
  LOOM_ASSIGN_OR_RETURN(cm::Dataset ds, cm::ReadDataset(a.data));
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
    if (a.devices.empty() || std::find(a.devices.begin(), a.devices.end(),
                                       ds.samples[i].device) != a.devices.end()) {
      idx.push_back(i);
    }
  }
  if (idx.empty()) return InvalidArgumentError("no samples of the requested devices in " + a.data);
  LOOM_ASSIGN_OR_RETURN(std::vector<double> pred, model.PredictSeconds(ds, idx));
  PrintAccuracy("predicted vs measured", ds, idx, pred);
  if (!a.json_out.empty()) {
    nlohmann::json j = {{"model", a.model}, {"data", a.data}, {"latency_unit", "s"},
                        {"predictions", nlohmann::json::array()}};
    for (size_t r = 0; r < idx.size(); ++r) {
      const cm::Sample& s = ds.samples[idx[r]];
      j["predictions"].push_back({{"id", s.id},
                                  {"instance_key", s.instance_key},
                                  {"device", s.device},
                                  {"measured_s", s.latency_s},
                                  {"predicted_s", pred[r]}});
    }
    std::ofstream out(a.json_out);
    out << j.dump(1) << "\n";
    if (!out) return UnavailableError("cannot write " + a.json_out);
  }
  return OkStatus();
}

}  // namespace

void RegisterTraceCostmodel(CLI::App& trace, CliContext* ctx) {
  CLI::App* cmd = trace.add_subcommand(
      "costmodel", "CDMPP-style kernel latency predictor (devices = ISA/thread variants of this host)");
  cmd->require_subcommand(1);

  auto collect = std::make_shared<cm::CollectCommand>();
  CLI::App* c = cmd->add_subcommand("collect", "time sampled kernels on this host's devices");
  cm::AddCollectFlags(*c, collect.get());
  c->callback([collect, ctx] { ctx->exit_code = cm::RunCollectCommand(*collect); });

  auto train = std::make_shared<TrainArgs>();
  CLI::App* t = cmd->add_subcommand("train", "train the transformer on a dataset, save the model");
  t->add_option("--data", train->data, "dataset from `collect`")->required();
  t->add_option("--out", train->out, "model file (JSON)")->required();
  t->add_option("--exclude-devices", train->exclude_devices,
                "devices not trained on (their features are the unlabelled CMD target)");
  AddTransformerFlags(t, &train->options);
  t->callback([train, ctx] {
    const Status s = RunTrain(*train);
    ctx->exit_code = s.ok() ? 0 : Fail(s);
  });

  auto predict = std::make_shared<PredictArgs>();
  CLI::App* p = cmd->add_subcommand("predict", "predict a dataset's latencies with a saved model");
  p->add_option("--model", predict->model, "model file from `train`")->required();
  p->add_option("--data", predict->data, "dataset (its devices table gives the device vectors)")
      ->required();
  p->add_option("--devices", predict->devices, "only these devices (default: all)");
  p->add_option("--json", predict->json_out, "per-sample predictions as JSON");
  p->callback([predict, ctx] {
    const Status s = RunPredict(*predict);
    ctx->exit_code = s.ok() ? 0 : Fail(s);
  });

  struct EvalArgs {
    cm::EvalCommand command;
    cm::TransformerOptions transformer;
    bool no_transformer = false;
    bool no_adapt = false;
  };
  auto eval = std::make_shared<EvalArgs>();
  CLI::App* e = cmd->add_subcommand(
      "eval", "MAPE on held-out shapes/group/devices: transformer vs XGBoost, roofline, MLP; "
              "KMeans vs random few-shot");
  cm::AddEvalFlags(*e, &eval->command);
  AddTransformerFlags(e, &eval->transformer);
  e->add_flag("--no-transformer", eval->no_transformer, "baselines only");
  e->add_flag("--no-adapt", eval->no_adapt,
              "train the transformer without the test features as CMD target");
  e->callback([eval, ctx] {
    cm::EvalCommand command = eval->command;
    if (!eval->no_transformer) {
      command.options.learned_model = cm::TransformerModelFactory(eval->transformer);
      command.options.adapt_to_test = !eval->no_adapt;
    }
    ctx->exit_code = cm::RunEvalCommand(command);
  });
}

}  // namespace loom::cli
