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
    }
    if (step.channels.size() != tr.channels.size()) {
      return InternalError(detector.name() + ": channel count changed at t=" + std::to_string(t));
    }
    for (size_t c = 0; c < step.channels.size(); ++c) {
      const size_t k = static_cast<size_t>(t) * tr.channels.size() + c;
      tr.machine[k] = step.channels[c].machine;
      tr.score[k] = static_cast<float>(step.channels[c].score);
      tr.missing[k] = step.channels[c].missing;
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
  const ScoreStep& At(int64_t t) {
    const size_t base = static_cast<size_t>(t) * tr_.channels.size();
    for (size_t k = 0; k < order_.size(); ++k) {
      ChannelScore& ch = step_.channels[k];
      ch.machine = tr_.machine[base + order_[k]];
      ch.score = tr_.score[base + order_[k]];
      ch.missing = tr_.missing[base + order_[k]];
    }
    return step_;
  }
  const std::string& Name(int channel) const { return step_.channels[channel].metric; }

 private:
  const ScoreTrace& tr_;
  std::vector<int> order_;
  ScoreStep step_;
};

}  // namespace

std::vector<AlarmEvent> ReplayStreaming(const ScoreTrace& trace, const GateOptions& gate,
                                        const std::vector<int>& order, int64_t merge_gap_s) {
  StepReader reader(trace, order);
  ContinuityGate g(gate);
  std::vector<AlarmEvent> alerts;
  for (int64_t t = 0; t < trace.seconds; ++t) {
    const GateDecision d = g.Step(reader.At(t), t);
    if (d.alert) alerts.push_back({t, d.machine, reader.Name(d.channel), d.score});
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
