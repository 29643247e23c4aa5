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
#include <vector>

#include "loom/cli/bench_arm.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"

namespace loom::cli {

inline constexpr uint64_t kBenchInputSeed = 0x5EED1005;

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
  // kAllReduce and kReduceScatter.
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
  const compress::CollectiveStats& stats() const { return qc_.stats(); }
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
  int64_t step_ = 0;
};

}  // namespace loom::cli
