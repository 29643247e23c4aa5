// Compressed arms of `loom bench collectives` (--compress SPEC,...): QuantizedCollectives'
// all-reduce (server-side error feedback) and reduce-scatter with one codec, plus what fp32 arms
// do not need — the error against an fp64 reference and the bytes on the wire.
//
//   GaussianWorkload w(op, rank, world, count);          // shared by the compressed arms of a size
//   CompressedArm arm(&comm, op, "int4:g128:hadamard", codec.get(), &w, in, out, count);
//   LOOM_ASSIGN_OR_RETURN(double rel_err, arm.MeasureError());  // one kSum call on fresh inputs
//   arm.Fill();  ... arm.Run() timed ...
//   arm.WireBytesPerCall(), arm.Fp32WireBytesPerCall()
//
// Inputs: rank r's buffer is N(0, 1) from PhiloxStream(kBenchInputSeed, r), so any rank can
// regenerate any rank's input; the reference is the fp64 sum over ranks of this rank's part of
// the result (all of it for all-reduce, block r for reduce-scatter). The relative error is
// ||out - ref||_2 / ||ref||_2 over all ranks' parts (one AllReduce of two doubles).
// Timed all-reduce calls average (kAvg) rather than sum: repeated in-place calls would otherwise
// double the values each call and eventually reach Inf, which codecs reject. The extra cost is one
// multiply per element of this rank's block.
// Thread-safety: one thread, like the Communicator it uses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/cli/bench_arm.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/push_pull.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/collectives/ring_allreduce_ablation.h"
#include "loom/compress/collectives/summable_allreduce.h"
#include "loom/compress/collectives/two_level_collectives.h"

namespace loom::cli {

inline constexpr uint64_t kBenchInputSeed = 0x5EED1005;

// --compress items "ps:<codec spec>": the codec through compress::PushPull (parameter-server
// shards on their own threads) instead of QuantizedCollectives; all-reduce only.
inline constexpr std::string_view kPushPullPrefix = "ps:";
inline bool IsPushPullSpec(std::string_view spec) { return spec.starts_with(kPushPullPrefix); }
// More routes by prefix: "tl:<codec>" two-level (compress::TwoLevelCollectives: int8:g128 inside
// nodes of 2 consecutive ranks, <codec> across them; world a multiple of 2), "ring:<codec>" the
// naive requantizing ring (compress::RequantizingRingAllReduce, the ablation; all-reduce only),
// "sum:<codec>" the summable all-reduce (compress::SummableAllReduce: fp16/bf16/none; all-reduce
// only). No prefix: QuantizedCollectives.
inline constexpr std::string_view kTwoLevelPrefix = "tl:";
inline constexpr std::string_view kRingPrefix = "ring:";
inline constexpr std::string_view kSummablePrefix = "sum:";
inline constexpr int kBenchNodeSize = 2;
// The codec part of a --compress item (after its route prefix).
std::string_view CodecPartOf(std::string_view spec);
// Whether the item's route only implements all-reduce.
bool AllReduceOnlySpec(std::string_view spec);

class GaussianWorkload {
 public:
  // `count` elements in the all-reduce buffer / the reduce-scatter input (a multiple of world).
  GaussianWorkload(BenchOp op, int rank, int world, size_t count);

  // This rank's input (count floats).
  const std::vector<float>& input() const { return input_; }
  // Sum over this rank's part of the result of (out - ref)^2 and of ref^2; `out` is the whole
  // all-reduce buffer or this rank's reduce-scatter block.
  void ErrorTerms(const float* out, double* err_sq, double* ref_sq) const;

 private:
  std::vector<float> input_;
  std::vector<double> reference_;  // fp64 sum over ranks, this rank's part
};

// The `n` normals of rank `stream`'s input starting at element `first`.
void GaussianInput(uint64_t stream, size_t first, size_t n, float* out);

class CompressedArm final : public BenchArm {
 public:
  // Named "loom_" + `spec` (as the user wrote it). `in` / `out` as for loom's fp32 arm
  // (all-reduce works in place on `out`); `codec` and `workload` outlive the arm. Only
  // kAllReduce and kReduceScatter; a "ps:" spec (IsPushPullSpec) only kAllReduce.
  CompressedArm(comm::Communicator* c, BenchOp op, const std::string& spec,
                const compress::Codec* codec, const GaussianWorkload* workload, float* in,
                float* out, size_t count);

  // Copies the Gaussian input into the buffer the next Run() reads.
  void Fill();
  Status Run() override;
  // Fill(), one kSum call, the relative L2 error against the fp64 reference (same on all ranks).
  Result<double> MeasureError();

  // Encoded bytes this rank handed to the transport per call, and what the same call sends in
  // fp32 (2 (P-1)/P x bytes for all-reduce, (P-1)/P x bytes for reduce-scatter).
  double WireBytesPerCall() const;
  double Fp32WireBytesPerCall() const;
  // Totals over every call so far (encode/decode/comm seconds), and the number of calls.
  compress::CollectiveStats stats() const;
  int64_t calls() const { return step_; }

 private:
  Status Call(comm::ReduceOp op);

  comm::Communicator* c_;
  BenchOp op_;
  const GaussianWorkload* workload_;
  float* in_;
  float* out_;
  size_t count_;
  compress::QuantizedCollectives qc_;
  std::unique_ptr<compress::PushPull> ps_;  // "ps:" arms
  std::unique_ptr<compress::Codec> intra_;  // "tl:" arms: int8:g128 inside the node
  std::unique_ptr<compress::TwoLevelCollectives> tl_;
  std::unique_ptr<compress::RequantizingRingAllReduce> ring_;
  std::unique_ptr<compress::SummableAllReduce> sum_;
  Status setup_;  // why a route could not be built (e.g. node size vs world); Run returns it
  int64_t step_ = 0;
};

}  // namespace loom::cli
