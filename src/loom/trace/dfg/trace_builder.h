// BuildModelFromTraces: fits a ModelSpec (and so the global DFG) to one run's aligned per-rank
// traces over a window of steps.
//
//   LOOM_ASSIGN_OR_RETURN(auto traces, ingest::ReadTraces(paths));
//   LOOM_ASSIGN_OR_RETURN(auto match, ingest::MatchCollectives(&traces));
//   LOOM_ASSIGN_OR_RETURN(auto align, ingest::SolveClockOffsets(traces, match));
//   ingest::ApplyClockOffsets(align, &traces);
//   LOOM_ASSIGN_OR_RETURN(TraceModel m, BuildModelFromTraces(traces, match, {}));
//   LOOM_ASSIGN_OR_RETURN(Graph g, BuildGraph(m.spec));
//
// What is read, per rank and step (ProfilerStep#N spans; the step's lane is the main lane):
//   - main-lane top-level spans in order: those before the last backward are `pre` ops (forward,
//     dataloader, earlier micro-steps), the last backward is split into gradient pieces, the
//     first optimizer span after it is UPDATE (collectives the main thread runs inside or after
//     it, e.g. ZeRO-1's parameter all-gather or a loss all-reduce, become update collectives,
//     priced by the link model, and their time is taken out of UPDATE's compute); spans named
//     "wait*" (wait_grad_sync: exposed communication the replay must predict) are skipped; anything
//     after UPDATE is tail time;
//   - collectives on other lanes are the gradient buckets, in order (their count must agree
//     across ranks and steps; steps that disagree are dropped and counted in `notes`);
//   - their SEND/RECV chunks (by seq; ring step from the name suffix "<step>_<chunk>").
// Fitted: per-op durations and gaps = medians over steps (or means, Options::statistic), each
// collective's Sync (start -> first SEND) per rank; a bucket's ready time inside backward
// = its collective's start when it did not queue behind the previous bucket, else interpolated
// by cumulative bytes (backward after the last bucket's ready time is a 0-byte BW.tail); the
// link α/β by least squares over per-ring-step transfers
// (first SEND start -> last RECV end, kept when the receiver was waiting for the data), per
// sending rank's egress link (kPerSender) and over all, or token buckets (rate, burst) when the
// link is shaped (TraceModelOptions::link_model, FitTokenBucket); κ from the
// Theil-Sen slope of backward duration against its overlap with the communication of all but
// the last bucket across steps (d = W + o·(1 − 1/κ); the last bucket's overlap is an effect of
// a slow backward tail, not a cause), then backward pieces are de-rated to their isolated time.
// Without a per-tensor list in the trace, each bucket is split into pieces of <= split_bytes so
// that bucket what-ifs can regroup it.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/link_fit.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::dfg {

struct TraceModelOptions {
  int64_t first_step = -1;  // window (inclusive); -1 = every complete step
  int64_t last_step = -1;
  int64_t skip_first = 1;         // drop this many leading steps of the window (warm-up)
  int64_t split_bytes = 1 << 20;  // backward pieces of <= this many bytes (default 1 MiB)
  LinkTopology topology = LinkTopology::kPerSender;
  double kappa = 0;              // 0 = fit from the trace; >= 1 = use this value
  double link_ns_per_byte = -1;  // >= 0: use this 1/β instead of the fitted one
  double link_alpha_ns = -1;     // >= 0: use this α instead of the fitted one
  // How per-step samples become one value (durations, gaps, the measured iteration). Median
  // (default, robust) or mean (matches the mean iteration on a noisy machine, where the sum of
  // medians of parts undershoots the median of their sum).
  enum class Statistic : uint8_t { kMedian, kMean };
  Statistic statistic = Statistic::kMedian;
  int64_t queued_threshold_ns = 20'000;  // a bucket starting within this of the previous
                                         // bucket's end queued behind it (default 20 µs)
  // The links (kPerSender, α and β not given): kAlphaBeta = α + bytes/β; kAuto = token buckets
  // when FitTokenBucket over all transfers (each link simulated on its own) predicts the trace's
  // arrival times clearly better than the α-β links and at least half the bytes waited for
  // tokens (FitTokenBucket's defaults; a `tc tbf`-shaped, busy link): then every rank's
  // egress is its own fitted bucket (or the common one when its own fit finds no burst), else
  // every link is α-β; kTokenBucket = buckets whenever the common fit's burst is >= 4 KiB.
  enum class LinkModel : uint8_t { kAlphaBeta, kAuto, kTokenBucket };
  LinkModel link_model = LinkModel::kAuto;
};

struct KappaFit {
  double kappa = 1;
  double slope = 0;  // d(backward)/d(overlap) = 1 − 1/κ
  int64_t samples = 0;
  bool identified = false;  // false: too few steps or no spread in overlap; κ = 1 (or given)
  std::string ToString() const;
};

struct TraceModel {
  ModelSpec spec;
  LinkFit link;                     // all transfers (the default for every link)
  std::vector<LinkFit> rank_links;  // kPerSender: per sending rank (samples 0: none / not
                                    // identifiable; that rank uses `link`)
  KappaFit kappa;
  double measured_iteration_ns = 0;  // median (or mean) over steps of the slowest rank's step
  std::vector<double> measured_step_ns;
  std::vector<int64_t> steps;      // step numbers used
  std::vector<std::string> notes;  // what was dropped or assumed
};

// "auto" | "alpha-beta" | "token-bucket" (the CLI's --link-model); kInvalidArgument otherwise.
Result<TraceModelOptions::LinkModel> ParseLinkModel(const std::string& name);

// `traces` must be aligned (ApplyClockOffsets) and `match` their MatchCollectives result.
// kInvalidArgument naming the file/rank/step when the traces have no steps, no backward span,
// or disagree on ranks.
Result<TraceModel> BuildModelFromTraces(const std::vector<ingest::RankTrace>& traces,
                                        const ingest::MatchResult& match,
                                        const TraceModelOptions& options = {});

}  // namespace loom::trace::dfg
