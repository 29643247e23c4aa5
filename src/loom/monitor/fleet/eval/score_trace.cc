#include "loom/monitor/fleet/eval/score_trace.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <set>

namespace loom::monitor {

Result<ScoreTrace> RecordTrace(ScoredDetector& detector, const FleetSeries& s) {
  ScoreTrace tr;
  tr.seconds = s.seconds;
  detector.Reset();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t t = 0; t < s.seconds; ++t) {
    LOOM_ASSIGN_OR_RETURN(ScoreStep step, detector.Score(s, t));
    if (t == 0) {
      for (const ChannelScore& c : step.channels) tr.channels.push_back(c.metric);
      const size_t cells = tr.channels.size() * static_cast<size_t>(s.seconds);
      tr.machine.assign(cells, -1);
      tr.score.assign(cells, -INFINITY);
      tr.missing.assign(cells, 0);
      tr.runner_machine.assign(cells * ChannelScore::kRunnersUp, -1);
      tr.runner_score.assign(cells * ChannelScore::kRunnersUp, -INFINITY);
    }
    if (step.channels.size() != tr.channels.size()) {
      return InternalError(detector.name() + ": channel count changed at t=" + std::to_string(t));
    }
    for (size_t c = 0; c < step.channels.size(); ++c) {
      const size_t k = static_cast<size_t>(t) * tr.channels.size() + c;
      tr.machine[k] = step.channels[c].machine;
      tr.score[k] = static_cast<float>(step.channels[c].score);
      tr.missing[k] = step.channels[c].missing;
      std::copy(step.channels[c].runner_up.begin(), step.channels[c].runner_up.end(),
                tr.runner_machine.begin() + k * ChannelScore::kRunnersUp);
      std::copy(step.channels[c].runner_up_score.begin(), step.channels[c].runner_up_score.end(),
                tr.runner_score.begin() + k * ChannelScore::kRunnersUp);
    }
  }
  tr.score_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return tr;
}

Result<ScoreTrace> PrependHeartbeatChannel(const ScoreTrace& heartbeat, const ScoreTrace& base,
                                           double timeout_s, const std::string& name) {
  if (heartbeat.seconds != base.seconds || heartbeat.channels.empty()) {
    return InvalidArgumentError("PrependHeartbeatChannel: traces of " +
                                std::to_string(heartbeat.seconds) + " and " +
                                std::to_string(base.seconds) + " s (or no heartbeat channel)");
  }
  ScoreTrace out;
  out.seconds = base.seconds;
  out.score_seconds = heartbeat.score_seconds + base.score_seconds;
  out.channels.push_back(name);
  out.channels.insert(out.channels.end(), base.channels.begin(), base.channels.end());
  const size_t hc = heartbeat.channels.size(), bc = base.channels.size(), oc = bc + 1;
  const size_t cells = oc * static_cast<size_t>(base.seconds);
  out.machine.assign(cells, -1);
  out.score.assign(cells, -INFINITY);
  out.missing.assign(cells, 0);
  constexpr size_t r = ChannelScore::kRunnersUp;
  const bool runners = base.runner_machine.size() == base.machine.size() * r;
  if (runners) {
    out.runner_machine.assign(cells * r, -1);
    out.runner_score.assign(cells * r, -INFINITY);
  }
  for (int64_t t = 0; t < base.seconds; ++t) {
    const size_t h = static_cast<size_t>(t) * hc, b = static_cast<size_t>(t) * bc,
                 o = static_cast<size_t>(t) * oc;
    if (heartbeat.machine[h] >= 0 && heartbeat.score[h] >= timeout_s) {
      out.machine[o] = heartbeat.machine[h];
      out.score[o] = INFINITY;
      out.missing[o] = 1;
    }
    std::copy_n(base.machine.begin() + b, bc, out.machine.begin() + o + 1);
    std::copy_n(base.score.begin() + b, bc, out.score.begin() + o + 1);
    std::copy_n(base.missing.begin() + b, bc, out.missing.begin() + o + 1);
    if (runners) {
      std::copy_n(base.runner_machine.begin() + b * r, bc * r,
                  out.runner_machine.begin() + (o + 1) * r);
      std::copy_n(base.runner_score.begin() + b * r, bc * r,
                  out.runner_score.begin() + (o + 1) * r);
    }
  }
  return out;
}

namespace {

class StepReader {
 public:
  StepReader(const ScoreTrace& tr, const std::vector<int>& order) : tr_(tr), order_(order) {
    if (order_.empty()) {
      for (size_t c = 0; c < tr.channels.size(); ++c) order_.push_back(static_cast<int>(c));
    }
    for (int c : order_) step_.channels.push_back({tr.channels[c]});
  }
  // The step at t; with `excluded` (by machine, may be empty), an excluded candidate is
  // replaced by the channel's first recorded runner-up that is not excluded (or none).
  const ScoreStep& At(int64_t t, const std::vector<uint8_t>& excluded = {}) {
    const size_t base = static_cast<size_t>(t) * tr_.channels.size();
    auto out = [&](int m) {
      return m >= 0 && static_cast<size_t>(m) < excluded.size() && excluded[m];
    };
    constexpr size_t r = ChannelScore::kRunnersUp;
    const bool runners = tr_.runner_machine.size() == tr_.machine.size() * r;
    for (size_t k = 0; k < order_.size(); ++k) {
      ChannelScore& ch = step_.channels[k];
      const size_t cell = base + order_[k];
      ch.machine = tr_.machine[cell];
      ch.score = tr_.score[cell];
      ch.missing = tr_.missing[cell];
      if (!out(ch.machine)) continue;
      ch.machine = -1;
      ch.score = -INFINITY;
      ch.missing = false;
      for (size_t j = 0; runners && j < r; ++j) {
        const int m = tr_.runner_machine[cell * r + j];
        if (m < 0 || out(m)) continue;
        ch.machine = m;
        ch.score = tr_.runner_score[cell * r + j];
        break;
      }
    }
    return step_;
  }
  const std::string& Name(int channel) const { return step_.channels[channel].metric; }

 private:
  const ScoreTrace& tr_;
  std::vector<int> order_;
  ScoreStep step_;
};

// Machine-level continuity over all channels (ReplayStreaming's any_channel).
class AnyChannelGate {
 public:
  explicit AnyChannelGate(const GateOptions& o)
      : threshold_(o.threshold),
        span_(std::max<int64_t>(1, o.continuity_s)),
        need_(std::max<int>(1, static_cast<int>(std::ceil(
                                   std::clamp(o.min_fraction, 0.0, 1.0) * span_ - 1e-9)))),
        ring_(span_) {}

  GateDecision Step(const ScoreStep& step) {
    std::vector<int>& slot = ring_[head_];
    if (filled_ == ring_.size()) {
      for (int m : slot) --count_[m];
    }
    slot.clear();
    GateDecision d;
    for (size_t c = 0; c < step.channels.size(); ++c) {
      const ChannelScore& ch = step.channels[c];
      if (ch.machine < 0 || !(ch.missing || ch.score >= threshold_)) continue;
      if (std::find(slot.begin(), slot.end(), ch.machine) != slot.end()) continue;
      slot.push_back(ch.machine);
      if (static_cast<size_t>(ch.machine) >= count_.size()) count_.resize(ch.machine + 1, 0);
      ++count_[ch.machine];
      if (d.candidate < 0) d.candidate = ch.machine;
      if (!d.alert && count_[ch.machine] >= need_) {
        d.alert = true;
        d.machine = ch.machine;
        d.channel = static_cast<int>(c);
        d.missing = ch.missing;
        d.score = ch.score;
      }
    }
    head_ = (head_ + 1) % ring_.size();
    filled_ = std::min(filled_ + 1, ring_.size());
    return d;
  }

 private:
  double threshold_;
  int64_t span_;
  int need_;
  std::vector<std::vector<int>> ring_;  // machines named in each of the last span_ seconds
  size_t head_ = 0, filled_ = 0;
  std::vector<int> count_;  // by machine: seconds named within the ring
};

}  // namespace

std::vector<AlarmEvent> ReplayStreaming(const ScoreTrace& trace, const GateOptions& gate,
                                        const std::vector<int>& order, int64_t merge_gap_s,
                                        int64_t exclude_flagged_s, bool any_channel) {
  StepReader reader(trace, order);
  ContinuityGate g(gate);
  AnyChannelGate any(gate);
  std::vector<AlarmEvent> alerts;
  std::vector<int64_t> until;     // by machine: excluded through this second
  std::vector<uint8_t> excluded;  // by machine, at the current second
  for (int64_t t = 0; t < trace.seconds; ++t) {
    if (exclude_flagged_s > 0) {
      for (size_t m = 0; m < until.size(); ++m) excluded[m] = t <= until[m];
    }
    const ScoreStep& step = reader.At(t, excluded);
    const GateDecision d = any_channel ? any.Step(step) : g.Step(step, t);
    if (!d.alert) continue;
    alerts.push_back({t, d.machine, reader.Name(d.channel), d.score});
    if (exclude_flagged_s > 0) {
      if (static_cast<size_t>(d.machine) >= until.size()) {
        until.resize(d.machine + 1, -1);
        excluded.resize(d.machine + 1, 0);
      }
      until[d.machine] = t + exclude_flagged_s;
    }
  }
  return MergeAlerts(alerts, merge_gap_s);
}

std::vector<AlarmEvent> ReplayBatch(const ScoreTrace& trace, const GateOptions& gate,
                                    const std::vector<int>& order, int64_t every_s,
                                    int64_t lookback_s) {
  StepReader reader(trace, order);
  ContinuityGate g(gate);
  std::vector<AlarmEvent> alarms;
  for (int64_t tc = lookback_s - 1; tc < trace.seconds; tc += every_s) {
    g.Reset();
    std::set<int> named;
    for (int64_t t = tc - lookback_s + 1; t <= tc; ++t) {
      const GateDecision d = g.Step(reader.At(t), t);
      if (d.alert && named.insert(d.machine).second) {
        alarms.push_back({tc, d.machine, reader.Name(d.channel), d.score});
      }
    }
  }
  return MergeAlerts(alarms, every_s);
}

}  // namespace loom::monitor
