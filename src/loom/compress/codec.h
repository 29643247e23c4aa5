// Codec: compresses fp32 buffers for the wire, with one self-describing format.
//
//   LOOM_ASSIGN_OR_RETURN(auto codec, MakeCodec(*ParseCodecSpec("int4:g128:hadamard")));
//   std::vector<char> wire(codec->MaxEncodedBytes(n));
//   LOOM_ASSIGN_OR_RETURN(int64_t bytes, codec->Encode(grad, n, wire.data(), {seed, step, rank, chunk}));
//   LOOM_RETURN_IF_ERROR(codec->DecodeAdd(wire.data(), bytes, n, accumulator));
//
// Wire format (docs/compression_format.md): a 32-byte header {magic "LQC1", codec kind, bits,
// flags, group, element count, payload bytes} + payload + fp32 scales, in one buffer. Decoding
// checks the header against the decoding codec, so mismatched configurations across ranks fail at
// the first exchange with both specs named.
// Encode rejects NaN/Inf (naming the first bad index) instead of folding them into a scale.
// Stochastic rounding draws from Philox keyed by (seed, step, rank, chunk): reproducible, and
// independent across ranks and chunks.
// Thread-safety: codecs are immutable; Encode/Decode may run concurrently.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/base/status.h"
#include "loom/compress/codec_spec.h"

namespace loom::compress {

inline constexpr int64_t kHeaderBytes = 32;
inline constexpr uint32_t kWireMagic = 0x3143514C;  // "LQC1"

struct StepContext {
  uint64_t seed = 0;
  int64_t step = 0;
  int rank = 0;
  int64_t chunk = 0;
};

class Codec {
 public:
  explicit Codec(CodecSpec spec) : spec_(spec) {}
  virtual ~Codec() = default;
  const CodecSpec& spec() const { return spec_; }

  // Upper bound of Encode's output for n elements, header included.
  virtual int64_t MaxEncodedBytes(int64_t n) const = 0;
  // Writes header + payload (+ scales) for x[0, n) into `out`; returns the bytes written.
  virtual Result<int64_t> Encode(const float* x, int64_t n, char* out,
                                 const StepContext& ctx) const = 0;
  // y = decode(in) / acc += decode(in). `bytes` is what Encode returned.
  Status Decode(const char* in, int64_t bytes, int64_t n, float* y) const {
    return DecodeInto(in, bytes, n, y, /*add=*/false);
  }
  Status DecodeAdd(const char* in, int64_t bytes, int64_t n, float* acc) const {
    return DecodeInto(in, bytes, n, acc, /*add=*/true);
  }
  // Wire bits per element for n elements (header excluded).
  double BitsPerElement(int64_t n) const {
    return 8.0 * static_cast<double>(MaxEncodedBytes(n) - kHeaderBytes) / static_cast<double>(n);
  }
  // Whether encoded buffers can be summed without decoding (fp16/bf16/none: element-wise; int
  // codecs with per-group scales: no).
  bool Summable() const { return spec_.kind <= CodecKind::kBf16; }

 protected:
  virtual Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                            bool add) const = 0;
  // Header helpers shared by the codecs.
  void WriteHeader(char* out, int64_t n, int64_t payload_bytes) const;
  // Checks magic, codec, element count and size; returns the payload size.
  Result<int64_t> CheckHeader(const char* in, int64_t bytes, int64_t n) const;

 private:
  CodecSpec spec_;
};

Result<std::unique_ptr<Codec>> MakeCodec(const CodecSpec& spec);

// The Philox stream of a (step, rank, chunk): stochastic rounding and random-k draw from
// PhiloxStream(ctx.seed, StreamOf(ctx)).
uint64_t StreamOf(const StepContext& ctx);

// The first index of a non-finite value in x[0, n), or -1.
int64_t FirstNonFinite(const float* x, int64_t n);

}  // namespace loom::compress
