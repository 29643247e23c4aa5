// TimelineSimulator: predicts when one iteration's gradient communication ends for a given
// per-tensor compression strategy, from a profiled backward pass and a CostModel.
//
//   BackwardProfile prof{{{"h.3.mlp", 1 << 20, 0.004}, {"h.2.mlp", 1 << 20, 0.009}}, 0.012};
//   LOOM_ASSIGN_OR_RETURN(TimelineSimulator sim, TimelineSimulator::Create(prof, model));
//   std::vector<TensorStrategy> plan(2);                     // all "none" on the compute stream
//   plan[0] = {model.Find("int8:g128"), Placement::kOffload};
//   plan[1] = {model.Find("fp16"), Placement::kLink};        // encoded by the link thread
//   LOOM_ASSIGN_OR_RETURN(Timeline t, sim.Run(plan));         // t.iteration_s, t.tensors[i]
//
// Model (times in seconds from the start of backward; tensors in backward = ready order):
//  * Compute stream: backward is a chain of segments; tensor i becomes ready after the segment
//    ending at its profiled ready time. Encoding on the compute stream runs right there, so it
//    shifts every later ready time and the backward end by its duration. Decoding on the compute
//    stream runs after backward (the training thread decodes while it waits for the reduction),
//    in link order.
//  * Link (one per level; one level so far): FIFO in tensor order, because every rank must issue
//    its collectives in the same order. Tensor i starts when it is encoded (or ready, for "none"
//    and link placement) and tensor i-1 has left the link; it occupies the link for
//    CostModel::LinkSeconds, which includes the between-phase work of non-summable all-reduces
//    (done by the link thread).
//  * Link placement: the link's own thread encodes, exchanges and decodes the tensor back to back
//    (loom's GradReducer today: one communication thread, bucket after bucket). The tensor takes
//    the link when it is ready and tensor i-1 has left it, and holds it for encode + LinkSeconds
//    + final decode; it delays neither backward nor the offload worker.
//  * Offload worker: one thread, non-preemptive, serving jobs in arrival order: an offloaded
//    tensor's encode arrives when the tensor is ready, its decode when it leaves the link.
//  * iteration_s = max(backward end, the last tensor reduced and decoded).
// Not modelled yet: contention of the offload worker and the link thread for CPU cores, a second
// link level, chunk pipelining inside one tensor.
// Thread-safety: immutable after Create; Run may be called concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/compress/planner/cost_model.h"

namespace loom::compress::planner {

struct TensorInfo {
  std::string name;      // parameter or bucket name
  int64_t elements = 0;  // > 0
  double ready_s = 0;    // gradient ready, seconds from the start of backward (profiled)
};

struct BackwardProfile {
  std::vector<TensorInfo> tensors;  // in backward order; ready_s non-decreasing
  double compute_end_s = 0;         // end of backward compute, >= the last ready_s
};

enum class Placement : uint8_t {
  kCompute,  // encode/decode on the compute stream (Espresso's "GPU"): delays later backward work
  kOffload,  // on a separate worker thread (Espresso's "CPU"): competes only with other offloads
  kLink,     // on the communication thread, serialized with the tensor's own transfer: holds
             // the link for encode + transfer + decode, delays only later communications
};
const char* PlacementName(Placement p);  // "compute" / "offload" / "link" ("?" if out of range)

struct TensorStrategy {
  int codec = 0;                              // index into CostModel::codecs
  Placement placement = Placement::kCompute;  // ignored for "none" (planners write kCompute)
  bool operator==(const TensorStrategy&) const = default;
};

struct TensorTimes {
  double ready_s = 0;         // gradient ready (after earlier compute-stream encodes)
  double encode_start_s = 0;  // = encode_end_s = ready_s when there is no encode
  double encode_end_s = 0;
  double comm_start_s = 0;
  double comm_end_s = 0;
  double decode_start_s = 0;  // = decode_end_s = comm_end_s when there is no decode
  double decode_end_s = 0;
  // The link thread's view: when the tensor could take the link (encode_end_s; ready_s for link
  // placement), when it took it (comm_start_s; encode_start_s for link placement) and when it
  // left it (comm_end_s; decode_end_s for link placement). link_start_s > link_ready_s: it waited.
  double link_ready_s = 0;
  double link_start_s = 0;
  double link_end_s = 0;
};

struct Timeline {
  double backward_end_s = 0;  // compute end, shifted by compute-stream encodes
  double iteration_s = 0;     // max(backward end, last decode end)
  std::vector<TensorTimes> tensors;
};

class TimelineSimulator {
 public:
  // Validates both inputs (errors name the tensor) and tabulates every tensor's costs per codec.
  static Result<TimelineSimulator> Create(const BackwardProfile& profile, const CostModel& model);

  // `plan` has one strategy per tensor with a valid codec index.
  Result<Timeline> Run(std::span<const TensorStrategy> plan) const;
  // Run(plan)->iteration_s without the checks or the per-tensor output (the planners' inner loop).
  double IterationSeconds(std::span<const TensorStrategy> plan) const;

  int num_tensors() const { return static_cast<int>(profile_.tensors.size()); }
  const BackwardProfile& profile() const { return profile_; }
  const CostModel& model() const { return model_; }
  // Tensor i's encode, CostModel::LinkSeconds and final decode with codec c (for search bounds;
  // link placement holds the link for all three).
  double EncodeSeconds(int i, int c) const { return cost(i, c).encode_s; }
  double LinkSeconds(int i, int c) const { return cost(i, c).link_s; }
  double DecodeSeconds(int i, int c) const { return cost(i, c).decode_s; }

 private:
  struct Cost {
    double encode_s = 0, link_s = 0, decode_s = 0;
  };
  TimelineSimulator(BackwardProfile profile, CostModel model);
  const Cost& cost(int i, int c) const { return costs_[i * model_.codecs.size() + c]; }
  void Simulate(std::span<const TensorStrategy> plan, Timeline* out) const;

  BackwardProfile profile_;
  CostModel model_;
  std::vector<bool> is_none_;  // per codec
  std::vector<Cost> costs_;    // [tensor][codec]
};

}  // namespace loom::compress::planner
