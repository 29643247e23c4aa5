#include "loom/monitor/fleet/denoise/lstm_vae_json.h"

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/base/json_util.h"

namespace loom::monitor {
namespace {

using nlohmann::json;

Result<const json*> Field(const json& j, const std::string& where, const char* key,
                          json::value_t type) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgumentError(where + ": missing \"" + key + "\"");
  const bool ok = type == json::value_t::number_float     ? it->is_number()
                  : type == json::value_t::number_integer ? it->is_number_integer()
                                                          : it->type() == type;
  if (!ok) {
    return InvalidArgumentError(where + ": \"" + key + "\" has the wrong type (" + it->type_name() +
                                ")");
  }
  return &*it;
}

Result<int64_t> GetInt(const json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const json* v, Field(j, where, key, json::value_t::number_integer));
  return v->get<int64_t>();
}

Result<double> GetNumber(const json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const json* v, Field(j, where, key, json::value_t::number_float));
  return v->get<double>();
}

Result<std::string> GetString(const json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(const json* v, Field(j, where, key, json::value_t::string));
  return v->get<std::string>();
}

Result<int> GetSize(const json& j, const std::string& where, const char* key) {
  LOOM_ASSIGN_OR_RETURN(int64_t v, GetInt(j, where, key));
  if (v < 0 || v > 1 << 20) {
    return InvalidArgumentError(where + ": \"" + key + "\" out of range: " + std::to_string(v));
  }
  return static_cast<int>(v);
}

Result<LstmVaeTrainingInfo> TrainingFromJson(const json& t, const std::string& w) {
  LstmVaeTrainingInfo info;
  LOOM_ASSIGN_OR_RETURN(info.train_windows, GetInt(t, w, "train_windows"));
  LOOM_ASSIGN_OR_RETURN(info.validation_windows, GetInt(t, w, "validation_windows"));
  LOOM_ASSIGN_OR_RETURN(info.epochs, GetSize(t, w, "epochs"));
  LOOM_ASSIGN_OR_RETURN(info.best_epoch, GetSize(t, w, "best_epoch"));
  LOOM_ASSIGN_OR_RETURN(info.train_mse, GetNumber(t, w, "train_mse"));
  LOOM_ASSIGN_OR_RETURN(info.validation_mse, GetNumber(t, w, "validation_mse"));
  LOOM_ASSIGN_OR_RETURN(info.beta, GetNumber(t, w, "beta"));
  LOOM_ASSIGN_OR_RETURN(const json* seed, Field(t, w, "seed", json::value_t::number_unsigned));
  info.seed = seed->get<uint64_t>();
  LOOM_ASSIGN_OR_RETURN(info.seconds, GetNumber(t, w, "seconds"));
  LOOM_ASSIGN_OR_RETURN(info.cpu_seconds, GetNumber(t, w, "cpu_seconds"));
  LOOM_ASSIGN_OR_RETURN(info.data, GetString(t, w, "data"));
  LOOM_ASSIGN_OR_RETURN(info.norm_horizon_s, GetInt(t, w, "norm_horizon_s"));
  return info;
}

Result<LstmVaeModel> FromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgumentError(where + ": expected a JSON object");
  LOOM_ASSIGN_OR_RETURN(std::string format, GetString(j, where, "format"));
  if (format != kLstmVaeFormat) {
    return InvalidArgumentError(where + ": \"format\" is '" + format + "', expected '" +
                                kLstmVaeFormat + "'");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t version, GetInt(j, where, "version"));
  if (version != LstmVaeModel::kFormatVersion) {
    return InvalidArgumentError(where + ": unsupported \"version\" " + std::to_string(version) +
                                " (this build reads version " +
                                std::to_string(LstmVaeModel::kFormatVersion) + ")");
  }
  LstmVaeModel m;
  LOOM_ASSIGN_OR_RETURN(m.metric, GetString(j, where, "metric"));
  LOOM_ASSIGN_OR_RETURN(m.window, GetSize(j, where, "window"));
  LOOM_ASSIGN_OR_RETURN(m.hidden, GetSize(j, where, "hidden"));
  LOOM_ASSIGN_OR_RETURN(m.latent, GetSize(j, where, "latent"));
  LOOM_ASSIGN_OR_RETURN(std::string input, GetString(j, where, "decoder_input"));
  if (input != "zeros") {
    return InvalidArgumentError(where + ": \"decoder_input\" must be \"zeros\", got \"" + input +
                                "\"");
  }
  if (j.contains("training")) {
    LOOM_ASSIGN_OR_RETURN(const json* t, Field(j, where, "training", json::value_t::object));
    LOOM_ASSIGN_OR_RETURN(m.training, TrainingFromJson(*t, where + " training"));
  }
  LOOM_ASSIGN_OR_RETURN(const json* tensors, Field(j, where, "tensors", json::value_t::object));
  for (const auto& [name, t] : tensors->items()) {
    const std::string w = where + " tensor '" + name + "'";
    if (!t.is_object()) return InvalidArgumentError(w + ": expected an object");
    LOOM_ASSIGN_OR_RETURN(const json* shape, Field(t, w, "shape", json::value_t::array));
    LOOM_ASSIGN_OR_RETURN(const json* data, Field(t, w, "data", json::value_t::array));
    size_t n = 1;
    for (const json& d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 1 << 20) {
        return InvalidArgumentError(w + ": \"shape\" must list positive integers, got " +
                                    shape->dump());
      }
      n *= d.get<size_t>();
    }
    if (data->size() != n) {
      return InvalidArgumentError(w + ": \"data\" has " + std::to_string(data->size()) +
                                  " values, shape " + shape->dump() + " needs " +
                                  std::to_string(n));
    }
    std::vector<float>& values = m.tensors[name];
    values.reserve(n);
    for (const json& v : *data) {
      if (!v.is_number()) {
        return InvalidArgumentError(w + ": \"data\" holds a non-number: " + v.dump());
      }
      values.push_back(v.get<float>());
    }
  }
  LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(m, where));
  // Shapes of the file must agree with the ones the sizes imply (not only the element counts).
  for (const auto& [name, shape] : LstmVaeTensorShapes(m.hidden, m.latent)) {
    if ((*tensors)[name]["shape"].get<std::vector<int>>() != shape) {
      return InvalidArgumentError(where + " tensor '" + name + "': \"shape\" " +
                                  (*tensors)[name]["shape"].dump() + " does not match hidden " +
                                  std::to_string(m.hidden) + ", latent " +
                                  std::to_string(m.latent));
    }
  }
  return m;
}

}  // namespace

std::string LstmVaeModelToJson(const LstmVaeModel& m) {
  json tensors = json::object();
  for (const auto& [name, shape] : LstmVaeTensorShapes(m.hidden, m.latent)) {
    auto it = m.tensors.find(name);
    tensors[name] = {{"shape", shape},
                     {"data", it == m.tensors.end() ? std::vector<float>{} : it->second}};
  }
  const LstmVaeTrainingInfo& t = m.training;
  json j = {{"format", kLstmVaeFormat},
            {"version", LstmVaeModel::kFormatVersion},
            {"metric", m.metric},
            {"window", m.window},
            {"hidden", m.hidden},
            {"latent", m.latent},
            {"decoder_input", "zeros"},
            {"normalisation", "min-max to [0, 1] over the fleet, training.norm_horizon_s"},
            {"training",
             {{"train_windows", t.train_windows},
              {"validation_windows", t.validation_windows},
              {"epochs", t.epochs},
              {"best_epoch", t.best_epoch},
              {"train_mse", t.train_mse},
              {"validation_mse", t.validation_mse},
              {"beta", t.beta},
              {"seed", t.seed},
              {"seconds", t.seconds},
              {"cpu_seconds", t.cpu_seconds},
              {"data", t.data},
              {"norm_horizon_s", t.norm_horizon_s}}},
            {"tensors", std::move(tensors)}};
  return j.dump() + "\n";
}

Result<LstmVaeModel> LstmVaeModelFromJson(const std::string& text, const std::string& where) {
  LOOM_ASSIGN_OR_RETURN(json j, ParseJson(text, where));
  return FromJson(j, where);
}

std::string LstmVaeModelPath(const std::string& model_dir, const std::string& metric) {
  return model_dir + "/" + metric + ".json";
}

Status SaveLstmVaeModel(const LstmVaeModel& model, const std::string& model_dir) {
  const std::string path = LstmVaeModelPath(model_dir, model.metric);
  LOOM_RETURN_IF_ERROR(ValidateLstmVaeModel(model, path));
  LOOM_RETURN_IF_ERROR(MakeDirs(model_dir));
  return WriteFileAtomic(path, LstmVaeModelToJson(model));
}

Result<LstmVaeModel> ReadLstmVaeModel(const std::string& model_dir, const std::string& metric,
                                      int window) {
  const std::string path = LstmVaeModelPath(model_dir, metric);
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return text.status().WithContext("LSTM-VAE model for metric '" + metric + "'");
  }
  LOOM_ASSIGN_OR_RETURN(LstmVaeModel m, LstmVaeModelFromJson(*text, path));
  if (m.metric != metric) {
    return InvalidArgumentError(path + ": model is for metric '" + m.metric + "', but metric '" +
                                metric + "' was asked for");
  }
  if (window > 0 && m.window != window) {
    return InvalidArgumentError(path + ": model for metric '" + m.metric + "' has window " +
                                std::to_string(m.window) + ", but window " +
                                std::to_string(window) + " was asked for");
  }
  return m;
}

}  // namespace loom::monitor
