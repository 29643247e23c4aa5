// The LSTM-VAE model file: one JSON file per metric, MODEL_DIR/<metric>.json:
//   {"format": "loom.lstm_vae", "version": 1, "metric": "cpu_busy", "window": 8,
//    "hidden": 4, "latent": 8, "decoder_input": "zeros",
//    "normalisation": "...",  (informational)
//    "training": {"train_windows", "validation_windows", "epochs", "best_epoch", "train_mse",
//                 "validation_mse", "beta", "seed", "seconds", "cpu_seconds", "data",
//                 "norm_horizon_s"},
//    "tensors": {"enc.w_ih": {"shape": [16, 1], "data": [...]}, ...}}  (row-major)
//
//   LOOM_RETURN_IF_ERROR(SaveLstmVaeModel(model, "/tmp/vae"));  // /tmp/vae/<metric>.json
//   LOOM_ASSIGN_OR_RETURN(LstmVaeModel m, ReadLstmVaeModel("/tmp/vae", "cpu_busy", 8));
//
// Errors name the file and the field. Reading a file whose "metric" or "window" differs from the
// one asked for is an explicit error naming both. Thread-safety: reentrant.
#pragma once

#include <string>

#include "loom/base/status.h"
#include "loom/monitor/fleet/denoise/lstm_vae_model.h"

namespace loom::monitor {

inline constexpr char kLstmVaeFormat[] = "loom.lstm_vae";

std::string LstmVaeModelToJson(const LstmVaeModel& model);
// `where` (a file name) prefixes error messages.
Result<LstmVaeModel> LstmVaeModelFromJson(const std::string& text, const std::string& where);

// MODEL_DIR/<metric>.json.
std::string LstmVaeModelPath(const std::string& model_dir, const std::string& metric);
// Validates, creates model_dir if needed and writes atomically.
Status SaveLstmVaeModel(const LstmVaeModel& model, const std::string& model_dir);
// Reads MODEL_DIR/<metric>.json; `window` > 0 must equal the file's window (0: any).
Result<LstmVaeModel> ReadLstmVaeModel(const std::string& model_dir, const std::string& metric,
                                      int window = 0);

}  // namespace loom::monitor
