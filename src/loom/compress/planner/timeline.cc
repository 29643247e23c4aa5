#include "loom/compress/planner/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace loom::compress::planner {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::infinity();

Status ValidateProfile(const BackwardProfile& p) {
  double prev = 0;
  std::set<std::string> names;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorInfo& t = p.tensors[i];
    const std::string where = "backward profile: tensor " + std::to_string(i) + " '" + t.name + "'";
    if (t.name.empty()) return InvalidArgumentError(where + ": empty name");
    if (!names.insert(t.name).second) return InvalidArgumentError(where + ": duplicate name");
    if (t.elements <= 0) return InvalidArgumentError(where + ": elements must be > 0");
    if (!std::isfinite(t.ready_s) || t.ready_s < prev) {
      return InvalidArgumentError(where + ": ready_s " + std::to_string(t.ready_s) +
                                  " must be finite and >= the previous tensor's (" +
                                  std::to_string(prev) + "); list tensors in backward order");
    }
    prev = t.ready_s;
  }
  if (!std::isfinite(p.compute_end_s) || p.compute_end_s < prev) {
    return InvalidArgumentError("backward profile: compute_end_s " +
                                std::to_string(p.compute_end_s) + " must be >= the last ready_s " +
                                std::to_string(prev));
  }
  return OkStatus();
}

}  // namespace

const char* PlacementName(Placement p) {
  switch (p) {
    case Placement::kCompute:
      return "compute";
    case Placement::kOffload:
      return "offload";
    case Placement::kLink:
      return "link";
  }
  return "?";
}

TimelineSimulator::TimelineSimulator(BackwardProfile profile, CostModel model)
    : profile_(std::move(profile)), model_(std::move(model)) {}

Result<TimelineSimulator> TimelineSimulator::Create(const BackwardProfile& profile,
                                                    const CostModel& model) {
  LOOM_RETURN_IF_ERROR(ValidateProfile(profile));
  LOOM_RETURN_IF_ERROR(model.Validate());
  TimelineSimulator sim(profile, model);
  for (const CodecCost& c : model.codecs) sim.is_none_.push_back(c.is_none());
  for (const TensorInfo& t : profile.tensors) {
    const double n = static_cast<double>(t.elements);
    for (size_t c = 0; c < model.codecs.size(); ++c) {
      const CodecCost& codec = model.codecs[c];
      Cost cost;
      cost.encode_s = sim.is_none_[c] ? 0 : codec.EncodeSeconds(n);
      cost.link_s = model.LinkSeconds(codec, n);
      cost.decode_s = sim.is_none_[c] ? 0 : model.FinalDecodeSeconds(codec, n);
      sim.costs_.push_back(cost);
    }
  }
  return sim;
}

Result<Timeline> TimelineSimulator::Run(std::span<const TensorStrategy> plan) const {
  if (plan.size() != profile_.tensors.size()) {
    return InvalidArgumentError("timeline: plan has " + std::to_string(plan.size()) +
                                " strategies for " + std::to_string(profile_.tensors.size()) +
                                " tensors");
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].codec < 0 || plan[i].codec >= static_cast<int>(model_.codecs.size())) {
      return InvalidArgumentError("timeline: tensor '" + profile_.tensors[i].name +
                                  "' has codec index " + std::to_string(plan[i].codec) +
                                  " outside the cost model's " +
                                  std::to_string(model_.codecs.size()) + " codecs");
    }
    if (plan[i].placement > Placement::kLink) {
      return InvalidArgumentError(
          "timeline: tensor '" + profile_.tensors[i].name + "' has placement " +
          std::to_string(static_cast<int>(plan[i].placement)) + " (not compute, offload or link)");
    }
  }
  Timeline t;
  Simulate(plan, &t);
  return t;
}

double TimelineSimulator::IterationSeconds(std::span<const TensorStrategy> plan) const {
  thread_local Timeline t;  // reused: the planners call this thousands of times
  Simulate(plan, &t);
  return t.iteration_s;
}

void TimelineSimulator::Simulate(std::span<const TensorStrategy> plan, Timeline* out) const {
  const int n = num_tensors();
  std::vector<TensorTimes>& tt = out->tensors;
  tt.assign(n, TensorTimes{});
  thread_local std::vector<double> comm_ready;
  thread_local std::vector<int> encode_jobs, decode_jobs;  // FIFO queues, read from the heads
  comm_ready.assign(n, kUnknown);
  encode_jobs.clear();
  decode_jobs.clear();
  size_t encode_head = 0, decode_head = 0;
  auto placed = [&](int i, Placement p) {
    return !is_none_[plan[i].codec] && plan[i].placement == p;
  };

  // Compute stream: backward segments, with compute-placed encodes inserted after their tensor.
  // Link-placed tensors go to the link as they are (it encodes them).
  double t = 0, prev_ready = 0;
  // encode_jobs: offloaded encodes in arrival (= tensor) order.
  for (int i = 0; i < n; ++i) {
    t += profile_.tensors[i].ready_s - prev_ready;
    prev_ready = profile_.tensors[i].ready_s;
    tt[i].ready_s = tt[i].encode_start_s = tt[i].encode_end_s = t;
    if (placed(i, Placement::kOffload)) {
      encode_jobs.push_back(i);
      continue;
    }
    if (placed(i, Placement::kCompute)) t += cost(i, plan[i].codec).encode_s;
    tt[i].encode_end_s = comm_ready[i] = t;
  }
  out->backward_end_s = t + (profile_.compute_end_s - prev_ready);

  // Link (FIFO in tensor order) and offload worker (FIFO in arrival order). The worker's next job
  // is the earliest-arrived of the two queue heads: a decode not queued yet comes from a tensor
  // still waiting for its own offloaded encode, which is at or behind the encode head, so it
  // cannot arrive before the job picked now.
  // decode_jobs: offloaded decodes in arrival (= link completion) order.
  int next_link = 0;
  double link_free = 0, worker_free = 0;
  for (;;) {
    while (next_link < n && comm_ready[next_link] != kUnknown) {
      const int i = next_link++;
      const Cost& c = cost(i, plan[i].codec);
      TensorTimes& x = tt[i];
      x.link_ready_s = comm_ready[i];
      x.link_start_s = std::max(comm_ready[i], link_free);
      if (placed(i, Placement::kLink)) {  // encode, transfer, decode back to back
        x.encode_start_s = x.link_start_s;
        x.encode_end_s = x.comm_start_s = x.encode_start_s + c.encode_s;
        x.comm_end_s = x.decode_start_s = x.comm_start_s + c.link_s;
        x.decode_end_s = x.decode_start_s + c.decode_s;
        x.link_end_s = link_free = x.decode_end_s;
        continue;
      }
      x.comm_start_s = x.link_start_s;
      x.comm_end_s = x.link_end_s = link_free = x.comm_start_s + c.link_s;
      x.decode_start_s = x.decode_end_s = x.comm_end_s;
      if (placed(i, Placement::kOffload)) decode_jobs.push_back(i);
    }
    const bool have_enc = encode_head < encode_jobs.size();
    const bool have_dec = decode_head < decode_jobs.size();
    if (!have_enc && !have_dec) break;
    const double enc_arrival = have_enc ? tt[encode_jobs[encode_head]].ready_s : kUnknown;
    const double dec_arrival = have_dec ? tt[decode_jobs[decode_head]].comm_end_s : kUnknown;
    if (have_enc && enc_arrival <= dec_arrival) {  // ties: feed the link first
      const int i = encode_jobs[encode_head++];
      tt[i].encode_start_s = std::max(worker_free, enc_arrival);
      tt[i].encode_end_s = worker_free = tt[i].encode_start_s + cost(i, plan[i].codec).encode_s;
      comm_ready[i] = worker_free;
    } else {
      const int i = decode_jobs[decode_head++];
      tt[i].decode_start_s = std::max(worker_free, dec_arrival);
      tt[i].decode_end_s = worker_free = tt[i].decode_start_s + cost(i, plan[i].codec).decode_s;
    }
  }

  // Compute-stream decodes: after backward, in link order.
  double compute_free = out->backward_end_s;
  double end = out->backward_end_s;
  for (int i = 0; i < n; ++i) {
    if (placed(i, Placement::kCompute)) {
      tt[i].decode_start_s = std::max(tt[i].comm_end_s, compute_free);
      tt[i].decode_end_s = compute_free = tt[i].decode_start_s + cost(i, plan[i].codec).decode_s;
    }
    end = std::max(end, tt[i].decode_end_s);
  }
  out->iteration_s = end;
}

}  // namespace loom::compress::planner
