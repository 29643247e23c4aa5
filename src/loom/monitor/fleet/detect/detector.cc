// ScoredDetector (detector.h) and the detector factory MakeDetector.
#include "loom/monitor/fleet/detect/detector.h"

#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/detect/baselines.h"
#include "loom/monitor/fleet/detect/denoisers.h"
#include "loom/monitor/fleet/detect/minder.h"

namespace loom::monitor {

Result<Verdict> ScoredDetector::Evaluate(const FleetSeries& s, int64_t t) {
  LOOM_ASSIGN_OR_RETURN(ScoreStep step, Score(s, t));
  const GateDecision d = gate_.Step(step, t);
  Verdict v;
  v.scores = std::move(step.machine_scores);
  v.candidate = d.candidate;
  v.alert = d.alert;
  if (d.alert) {
    v.machine = d.machine;
    v.metric = step.channels[d.channel].metric;
    v.missing = d.missing;
    v.score = d.score;
  }
  return v;
}

void ScoredDetector::Reset() {
  gate_.Reset();
  ResetModel();
}

namespace {

// Typed field access with errors that name the field.
template <typename T>
Result<T> Field(const nlohmann::json& spec, const char* key, T fallback) {
  if (!spec.contains(key)) return fallback;
  try {
    return spec.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("detector spec field '") + key +
                                "' has the wrong type: " + e.what());
  }
}

}  // namespace

Result<std::unique_ptr<ScoredDetector>> MakeScoredDetector(const nlohmann::json& spec,
                                                           const DenoiserLoader& loader) {
  if (!spec.is_object()) return InvalidArgumentError("detector spec must be a JSON object");
  LOOM_ASSIGN_OR_RETURN(const std::string type, Field<std::string>(spec, "type", ""));
  const bool gate_free = type == "heartbeat";
  GateOptions gate;
  gate.continuity_s = gate_free ? 1 : 30;
  gate.threshold = type == "minder"        ? 3.5
                   : type == "mahalanobis" ? 10.0
                   : type == "peer_z"      ? 3.0
                   : type == "iforest"     ? 0.6
                   : type == "nvrx"        ? 1.0 / 0.75
                   : type == "bocd"        ? 3.0
                                           : 10.0;
  LOOM_ASSIGN_OR_RETURN(gate.threshold, Field<double>(spec, "threshold", gate.threshold));
  LOOM_ASSIGN_OR_RETURN(gate.continuity_s,
                        Field<int64_t>(spec, "continuity_s", gate.continuity_s));
  LOOM_ASSIGN_OR_RETURN(gate.min_fraction, Field<double>(spec, "min_fraction", 1.0));
  LOOM_ASSIGN_OR_RETURN(gate.min_channels, Field<int>(spec, "min_channels", 1));
  LOOM_ASSIGN_OR_RETURN(gate.fast_confirm_s, Field<int64_t>(spec, "fast_confirm_s", 0));
  LOOM_ASSIGN_OR_RETURN(gate.fast_min_channels, Field<int>(spec, "fast_min_channels", 2));
  LOOM_ASSIGN_OR_RETURN(gate.missing_confirm_s, Field<int64_t>(spec, "missing_confirm_s", 0));
  if (gate.fast_confirm_s < 0 || gate.missing_confirm_s < 0 || gate.fast_min_channels < 1) {
    return InvalidArgumentError(
        "detector spec fields 'fast_confirm_s' and 'missing_confirm_s' must be >= 0 and "
        "'fast_min_channels' >= 1");
  }
  if (!(gate.min_fraction > 0 && gate.min_fraction <= 1) || gate.min_channels < 1) {
    return InvalidArgumentError(
        "detector spec fields 'min_fraction' must be in (0, 1] and 'min_channels' >= 1");
  }
  LOOM_ASSIGN_OR_RETURN(const int window, Field<int>(spec, "window", 8));
  if (window < 2 || window > 4096) {
    return InvalidArgumentError("detector spec field 'window' must be in [2, 4096], got " +
                                std::to_string(window));
  }
  LOOM_ASSIGN_OR_RETURN(const int64_t horizon, Field<int64_t>(spec, "norm_horizon_s", 600));
  if (type == "minder") {
    MinderOptions o;
    o.window = window;
    o.norm_horizon_s = horizon;
    LOOM_ASSIGN_OR_RETURN(const std::string dist, Field<std::string>(spec, "distance", "l2"));
    LOOM_ASSIGN_OR_RETURN(o.distance, ParseDistance(dist));
    LOOM_ASSIGN_OR_RETURN(o.integrated, Field<bool>(spec, "integrated", false));
    LOOM_ASSIGN_OR_RETURN(o.priority,
                          Field<std::vector<std::string>>(spec, "priority", {}));
    LOOM_ASSIGN_OR_RETURN(o.max_metrics, Field<int>(spec, "max_metrics", 0));
    LOOM_ASSIGN_OR_RETURN(o.corroborate, Field<int>(spec, "corroborate", 0));
    if (o.corroborate < 0) return InvalidArgumentError("detector spec field 'corroborate' < 0");
    LOOM_ASSIGN_OR_RETURN(o.scale_floor, Field<double>(spec, "scale_floor", o.scale_floor));
    LOOM_ASSIGN_OR_RETURN(o.long_window_s, Field<int64_t>(spec, "long_window_s", 0));
    LOOM_ASSIGN_OR_RETURN(o.long_scale_floor,
                          Field<double>(spec, "long_scale_floor", o.long_scale_floor));
    LOOM_ASSIGN_OR_RETURN(o.long_weight, Field<double>(spec, "long_weight", 1.0));
    if (o.long_window_s < 0 || o.long_window_s > 4096 || !(o.long_scale_floor > 0) ||
        !(o.long_weight > 0)) {
      return InvalidArgumentError(
          "detector spec fields 'long_window_s' must be in [0, 4096], 'long_scale_floor' and "
          "'long_weight' > 0");
    }
    LOOM_ASSIGN_OR_RETURN(o.shift.window_s, Field<int64_t>(spec, "shift_window_s", 0));
    LOOM_ASSIGN_OR_RETURN(o.shift.block_s, Field<int64_t>(spec, "shift_block_s", o.shift.block_s));
    LOOM_ASSIGN_OR_RETURN(o.shift.ref_s, Field<int64_t>(spec, "shift_ref_s", o.shift.ref_s));
    LOOM_ASSIGN_OR_RETURN(o.shift.weight, Field<double>(spec, "shift_weight", 1.0));
    LOOM_ASSIGN_OR_RETURN(o.shift.freeze_z, Field<double>(spec, "shift_freeze_z", 0.0));
    if (!(o.shift.freeze_z >= 0)) {
      return InvalidArgumentError("detector spec field 'shift_freeze_z' must be >= 0 (0 = off)");
    }
    if (o.shift.window_s < 0 || o.shift.window_s > 4096 || o.shift.block_s < 1 ||
        (o.shift.window_s > 0 && o.shift.block_s > o.shift.window_s) || o.shift.ref_s < o.shift.min_ref_s ||
        !(o.shift.weight > 0)) {
      return InvalidArgumentError(
          "detector spec fields 'shift_window_s' must be in [0, 4096], 'shift_block_s' in [1, "
          "shift_window_s], 'shift_ref_s' >= " + std::to_string(o.shift.min_ref_s) +
          ", 'shift_weight' > 0");
    }
    LOOM_ASSIGN_OR_RETURN(o.denoiser, Field<std::string>(spec, "denoiser", "moving_median"));
    LOOM_ASSIGN_OR_RETURN(const std::string model_dir, Field<std::string>(spec, "model_dir", ""));
    DenoiserFactory factory;
    if (MakeBuiltinDenoiser(o.denoiser).ok()) {
      factory = BuiltinDenoisers(o.denoiser);
    } else if (loader) {
      factory = [loader, type = o.denoiser, model_dir, window](const std::string& metric) {
        return loader(type, model_dir, metric, window);
      };
    } else {
      return InvalidArgumentError("detector spec field 'denoiser': '" + o.denoiser +
                                  "' is not a built-in (identity, moving_median) and no loader "
                                  "was given");
    }
    return std::unique_ptr<ScoredDetector>(new MinderDetector(o, gate, factory));
  }
  if (type == "mahalanobis") {
    LOOM_ASSIGN_OR_RETURN(const double shrink, Field<double>(spec, "shrinkage", 0.1));
    if (!(shrink >= 0 && shrink <= 1)) {
      return InvalidArgumentError("detector spec field 'shrinkage' must be in [0, 1]");
    }
    return std::unique_ptr<ScoredDetector>(new MahalanobisDetector(window, shrink, horizon, gate));
  }
  if (type == "peer_z") return std::unique_ptr<ScoredDetector>(new PeerZDetector(gate));
  if (type == "iforest") {
    LOOM_ASSIGN_OR_RETURN(const int trees, Field<int>(spec, "trees", 50));
    LOOM_ASSIGN_OR_RETURN(const int sample, Field<int>(spec, "sample", 64));
    LOOM_ASSIGN_OR_RETURN(const uint64_t seed, Field<uint64_t>(spec, "seed", 1));
    if (trees < 1 || sample < 2) {
      return InvalidArgumentError("detector spec fields 'trees' >= 1 and 'sample' >= 2");
    }
    return std::unique_ptr<ScoredDetector>(
        new IsolationForestDetector(window, trees, sample, seed, gate));
  }
  LOOM_ASSIGN_OR_RETURN(const std::string metric, Field<std::string>(spec, "metric", "step_time"));
  if (type == "nvrx") {
    LOOM_ASSIGN_OR_RETURN(const int64_t window_s, Field<int64_t>(spec, "window_s", 60));
    if (window_s < 1) return InvalidArgumentError("detector spec field 'window_s' must be >= 1");
    return std::unique_ptr<ScoredDetector>(new NvrxStragglerDetector(metric, window_s, gate));
  }
  if (type == "bocd") {
    LOOM_ASSIGN_OR_RETURN(const double hazard_s, Field<double>(spec, "hazard_s", 300.0));
    LOOM_ASSIGN_OR_RETURN(const int max_run, Field<int>(spec, "max_run", 300));
    if (hazard_s < 1 || max_run < 2) {
      return InvalidArgumentError("detector spec fields 'hazard_s' >= 1 and 'max_run' >= 2");
    }
    return std::unique_ptr<ScoredDetector>(new BocdDetector(metric, hazard_s, max_run, gate));
  }
  if (type == "heartbeat") {
    return std::unique_ptr<ScoredDetector>(new HeartbeatDetector(metric, gate));
  }
  return InvalidArgumentError("detector spec field 'type': unknown detector '" + type +
                              "' (minder, mahalanobis, peer_z, iforest, nvrx, bocd, heartbeat)");
}

Result<std::unique_ptr<Detector>> MakeDetector(const nlohmann::json& spec,
                                               const DenoiserLoader& loader) {
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<ScoredDetector> d, MakeScoredDetector(spec, loader));
  return std::unique_ptr<Detector>(std::move(d));
}

}  // namespace loom::monitor
