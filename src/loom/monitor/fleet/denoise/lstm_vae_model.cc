#include "loom/monitor/fleet/denoise/lstm_vae_model.h"

#include <cctype>
#include <cmath>

namespace loom::monitor {

LstmVaeModel LstmVaeModel::Zeros(std::string metric, int window, int hidden, int latent) {
  LstmVaeModel m;
  m.metric = std::move(metric);
  m.window = window;
  m.hidden = hidden;
  m.latent = latent;
  for (const auto& [name, shape] : LstmVaeTensorShapes(hidden, latent)) {
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d);
    m.tensors[name].assign(n, 0.f);
  }
  return m;
}

std::vector<std::pair<std::string, std::vector<int>>> LstmVaeTensorShapes(int hidden, int latent) {
  const int h = hidden, g = 4 * hidden, l = latent;
  return {{"enc.w_ih", {g, 1}},    {"enc.w_hh", {g, h}}, {"enc.b_ih", {g}},
          {"enc.b_hh", {g}},       {"mu.w", {l, h}},     {"mu.b", {l}},
          {"logvar.w", {l, h}},    {"logvar.b", {l}},    {"dec_init.w", {2 * h, l}},
          {"dec_init.b", {2 * h}}, {"dec.w_hh", {g, h}}, {"dec.b_ih", {g}},
          {"dec.b_hh", {g}},       {"out.w", {1, h}},    {"out.b", {1}}};
}

Status ValidateLstmVaeModel(const LstmVaeModel& m, const std::string& where) {
  if (m.metric.empty()) return InvalidArgumentError(where + ": empty \"metric\"");
  for (char c : m.metric) {
    if (c == '/' || std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      return InvalidArgumentError(where + ": metric name '" + m.metric +
                                  "' may not contain '/' or whitespace");
    }
  }
  auto range = [&](const char* field, int v, int lo, int hi) -> Status {
    if (v < lo || v > hi) {
      return InvalidArgumentError(where + ": \"" + field + "\" must be in [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "], got " + std::to_string(v));
    }
    return OkStatus();
  };
  LOOM_RETURN_IF_ERROR(range("window", m.window, 2, 4096));
  LOOM_RETURN_IF_ERROR(range("hidden", m.hidden, 1, 256));
  LOOM_RETURN_IF_ERROR(range("latent", m.latent, 1, 256));
  const auto shapes = LstmVaeTensorShapes(m.hidden, m.latent);
  for (const auto& [name, shape] : shapes) {
    auto it = m.tensors.find(name);
    if (it == m.tensors.end())
      return InvalidArgumentError(where + ": missing tensor '" + name + "'");
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d);
    if (it->second.size() != n) {
      return InvalidArgumentError(where + ": tensor '" + name + "' has " +
                                  std::to_string(it->second.size()) + " values, expected " +
                                  std::to_string(n) + " for hidden " + std::to_string(m.hidden) +
                                  ", latent " + std::to_string(m.latent));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(it->second[i])) {
        return InvalidArgumentError(where + ": tensor '" + name + "' value " + std::to_string(i) +
                                    " is not finite");
      }
    }
  }
  if (m.tensors.size() != shapes.size()) {
    for (const auto& [name, values] : m.tensors) {
      bool known = false;
      for (const auto& s : shapes) known = known || s.first == name;
      if (!known) return InvalidArgumentError(where + ": unknown tensor '" + name + "'");
    }
  }
  return OkStatus();
}

}  // namespace loom::monitor
