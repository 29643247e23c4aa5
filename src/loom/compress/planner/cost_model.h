// CostModel: what the compression planner knows about the machine, as plain data.
//
//   CostModel m;
//   m.world_size = 4;
//   m.links = {LinkModel{"dp", /*alpha_s=*/150e-6, /*beta_s_per_byte=*/1e-9}};
//   m.codecs.push_back(*CodecCostFor("none", {}, {}));
//   LOOM_ASSIGN_OR_RETURN(LinearCost enc, FitLinear(samples));   // (elements, seconds) pairs
//   LOOM_ASSIGN_OR_RETURN(CodecCost int8, CodecCostFor("int8:g128", enc, dec));
//   m.codecs.push_back(int8);
//   LOOM_RETURN_IF_ERROR(m.Validate());
//   double s = m.LinkSeconds(int8, /*n=*/1 << 20);               // one tensor on the link
//
// Collective model (P = world_size, B = wire bytes of n elements = n * bits / 8 + header):
//   all-reduce, summable codec (none/fp16/bf16/PowerSGD factors): ring reduce-scatter + all-gather,
//     link = 2 alpha + beta * 2(P-1)/P * B; final decode of n elements.
//   all-reduce, other codecs: all-to-all + all-gather of encoded chunks (compress/collectives),
//     link = 2 alpha + beta * 2(P-1)/P * B, plus the owner's work between the phases, which runs
//     on the communication thread: decode-add of P-1 chunks of n/P and re-encode of n/P elements;
//     final decode of n elements.
//   reduce-scatter (ZeRO-1 gradients): one all-to-all phase, link = alpha + beta * (P-1)/P * B;
//     final decode = (P-1) decode-adds of n/P (non-summable) or one decode of n/P (summable).
// `links` holds one LinkModel per level; only one level (the data-parallel link) is simulated so
// far, a second (intra-node) level is accepted by the struct and refused by Validate().
// The JSON form (SaveCostModelJson/LoadCostModelJson) is documented in cost_model_json.cc.
// Thread-safety: value types; functions are reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/base/status.h"

namespace loom::compress::planner {

// Seconds = a_s + b_s * elements.
struct LinearCost {
  double a_s = 0;  // fixed cost per call (launch, header), seconds; default 0
  double b_s = 0;  // seconds per element; default 0
  double Seconds(double elements) const { return a_s + b_s * elements; }
};

// Least-squares fit of seconds = a + b * n over (n, seconds) samples. Needs two distinct n. A
// negative intercept (noise on small sizes) is refitted through the origin and a negative slope
// is refitted as a constant, so the fitted cost is never negative.
Result<LinearCost> FitLinear(std::span<const std::pair<double, double>> samples);

// One level of the network: alpha + beta * bytes per collective phase.
struct LinkModel {
  std::string name = "dp";     // "dp" (data-parallel), later "intra" / "inter"; default "dp"
  double alpha_s = 0;          // latency per collective phase, seconds; default 0
  double beta_s_per_byte = 0;  // seconds per byte on the wire (1 / bandwidth); default 0
  double Seconds(double bytes) const { return alpha_s + beta_s_per_byte * bytes; }
};

// One candidate codec: its compute costs and its size on the wire.
struct CodecCost {
  std::string spec = "none";     // compress::ParseCodecSpec syntax, e.g. "int4:g128:hadamard"
  LinearCost encode;             // fp32 -> wire (error feedback included when it is used)
  LinearCost decode;             // wire -> fp32 (decode or decode-add)
  double bits_per_element = 32;  // on the wire, header excluded; default 32 (none)
  int64_t header_bytes = 0;      // per encoded message; default 0
  bool summable = true;          // reducible without decoding (ring all-reduce); default true
  bool error_feedback = false;   // needs an error-feedback residual; default false
  bool is_none() const;          // spec parses to kind none (no encode/decode step)
  double EncodeSeconds(double n) const { return encode.Seconds(n); }
  double DecodeSeconds(double n) const { return decode.Seconds(n); }
  double WireBytes(double n) const { return n * bits_per_element / 8 + header_bytes; }
};

// A CodecCost for `spec` with bits per element, header, summability and error feedback taken
// from the codec itself (compress::MakeCodec at 2^20 elements). PowerSGD is not an element codec:
// pass its bits per element (2 r (rows + cols) * 32 / (rows * cols) for one matrix) explicitly.
Result<CodecCost> CodecCostFor(std::string_view spec, LinearCost encode, LinearCost decode,
                               double powersgd_bits_per_element = 0);

enum class GradCollective {
  kAllReduce,      // every rank ends with the full sum (DDP)
  kReduceScatter,  // every rank ends with its shard of the sum (ZeRO-1)
};

struct CostModel {
  int world_size = 2;                                      // data-parallel ranks; default 2
  GradCollective collective = GradCollective::kAllReduce;  // default all-reduce
  std::vector<LinkModel> links = {LinkModel{}};            // one per level; default one "dp" link
  std::vector<CodecCost> codecs;                           // candidates; must include "none"

  // Every field in range, specs parse, "none" present, specs unique, exactly one link level.
  Status Validate() const;
  // Index of `spec` in codecs, or -1.
  int Find(std::string_view spec) const;
  // Time the tensor occupies the link thread (transfer plus between-phase work) and the final
  // decode, for n elements with codec c (see the collective model above). Zero for P = 1.
  double LinkSeconds(const CodecCost& c, double n) const;
  double FinalDecodeSeconds(const CodecCost& c, double n) const;
};

// JSON (de)serialisation; errors name the field (and the codec) that is wrong.
std::string SaveCostModelJson(const CostModel& m);
Result<CostModel> LoadCostModelJson(std::string_view text, std::string_view source);

}  // namespace loom::compress::planner
