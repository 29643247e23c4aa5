// Per-channel rescaling of recorded score traces (score_trace.h): a factor per channel applied
// to the top candidate's and the runners-up's scores (candidates are per-channel argmaxes, so
// no candidate changes), and the factors that normalise every channel to its healthy-noise
// level so one gate threshold means the same on all channels.
//
//   std::vector<double> f = ChannelNormFactors(train_jobs, train_traces, /*q=*/0.999);
//   std::vector<ScoreTrace> val_norm = ScaleChannels(val_traces, f);
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "loom/monitor/fleet/eval/score_trace.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

// Copies of `traces` with channel c's finite scores multiplied by factor[c] (channels past the
// end of `factor` keep theirs).
std::vector<ScoreTrace> ScaleChannels(const std::vector<ScoreTrace>& traces,
                                      const std::vector<double>& factor);

// factor[c] = 1 / (the q-quantile of channel c's top score over the seconds of `jobs` with no
// fault active on any machine, transients included, up to 60 s after each fault ends; missing
// candidates and non-finite scores left out). A channel without such scores, or whose
// quantile is <= 1e-6, keeps factor 1. traces[k] belongs to jobs[k].
std::vector<double> ChannelNormFactors(const std::vector<LabelledJob>& jobs,
                                       const std::vector<ScoreTrace>& traces, double q);

}  // namespace loom::monitor
