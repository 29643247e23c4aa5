// The configuration grid of `loom bench replay` (issue 6, "Measurement"): link rate (tc tbf) ×
// gradient bucket size × overlap on/off × gradient compression none/int4. Each configuration maps
// to (a) the `loom train` keys that run it for real and (b) the whatif::WhatIf that predicts it
// from the profiled base configuration.
//
//   std::vector<EvalConfig> grid = ReplayGrid(/*quick=*/false);   // grid[0] is the base
//   TrainKeys(grid[3]);  // {"dist.bucket_mb=4", "dist.overlap=false", "compress.grad=none"}
//   LOOM_ASSIGN_OR_RETURN(whatif::WhatIf w, ToWhatIf(grid[3], grid[0], bandwidth, {}));
//
// Bandwidth mapping: a shaped link's bandwidth is its tbf rate; "unshaped" is the veth pair's own
// capacity, which the base trace measures when the base is unshaped (the fitted β) and which
// BandwidthModel::unshaped_bits_per_s assumes otherwise. The what-if factor is
// target bandwidth / base bandwidth, applied to every fitted link of the base trace (α is kept),
// and a shaped target of another rate caps every link at its TCP goodput (rate × kTcpGoodput,
// WhatIf::bandwidth_cap_bytes_per_s): the fitted β holds the base link's tbf burst (256 KB refill
// in 10 ms at 200 Mbit), which at a slower rate refills too slowly to matter (measured: uncapped
// scaling predicted 10 Mbit 16 % fast). The cap is per link: with a factor capped once from the
// common β, a rank whose egress fitted slower than the common link (host wake-ups on a 2-vCPU VM)
// was predicted below the goodput (50 Mbit +15 %, 10 Mbit +12 % on the 14:32 quiet run).
//
// Compression: the grid's runs set `compress.min_elements=0` (every bucket compressed, as the
// configuration says) and the what-if uses the same threshold (WhatIf::compress_min_elements).
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::trace::evaluation {

// "unshaped" -> 0; "10mbit", "200mbit", "1gbit", "500kbit" (tc's decimal units) -> bits/s.
// kInvalidArgument naming the text otherwise.
Result<double> ParseLinkRate(const std::string& rate);

struct EvalConfig {
  std::string rate = "unshaped";  // tc tbf rate on both veth ends, or "unshaped"
  double bucket_mb = 4.0;         // dist.bucket_mb (MiB)
  bool overlap = true;            // dist.overlap
  std::string codec = "none";     // "none" or a whatif::DefaultCodec name ("int4", "int8", "fp16")

  // "200mbit/b0.25/ov/none" (ov = overlap on, seq = off).
  std::string Name() const;
  bool operator==(const EvalConfig& o) const = default;
};

// The loom trainer's codec spec for a whatif codec name: "int4" -> "int4:g128", "int8" ->
// "int8:g128", "fp16" -> "fp16", "none" -> "none". kInvalidArgument for other names.
Result<std::string> TrainCodecSpec(const std::string& codec);

// `loom train` keys of the configuration (the link rate is the testbed's, not a train key).
Result<std::vector<std::string>> TrainKeys(const EvalConfig& c);

// The grid, base first. Full: every bucket × overlap × codec combination at 200, 50 and
// 10 Mbit (24), and three each at 1 Gbit and unshaped: 30 configurations. Quick: the base and
// three others (a faster link, a slower link with one bucket and no overlap, int4).
EvalConfig BaseConfig();
std::vector<EvalConfig> ReplayGrid(bool quick);

// TCP payload per byte tbf counts: MSS 1448 (with timestamps) in a 1514-byte Ethernet frame.
inline constexpr double kTcpGoodput = 1448.0 / 1514.0;

// The `compress.min_elements` the grid's runs use (0: every bucket compressed).
inline constexpr int64_t kGridCompressMinElements = 0;

struct BandwidthModel {
  // The unshaped veth pair's payload rate when the base is shaped: measured by `loom bench
  // replay`'s link probe (link_probe.h), or assumed (--unshaped-gbit; 10 Gbit/s by default).
  double unshaped_bits_per_s = 10e9;
  // >= 0: the unshaped veth's per-segment latency (FitVethLink on a probe at two sizes), used for
  // unshaped targets instead of the profile's α, which belongs to the shaped base link; < 0: keep it.
  double unshaped_alpha_ns = -1;
  double base_fitted_bytes_per_s = 0;  // the base trace's fitted β (0: not identified)
  // > 0: the testbed's tbf burst (bytes on the wire; netns_2host.sh's 256 KiB). A shaped base
  // then predicts a target of another rate on links rebuilt from the testbed's description
  // (TargetLinkShape) instead of scaling its own fits.
  double tbf_burst_bytes = 0;
};

// target bandwidth / base bandwidth (see the header comment). kInvalidArgument for bad rates or
// an unshaped base whose β was not identified.
Result<double> BandwidthScale(const EvalConfig& target, const EvalConfig& base,
                              const BandwidthModel& bw);
// The goodput (bytes/s) that caps every link when a shaped base predicts a target of another
// rate: a shaped target's TCP goodput, no more than the unshaped rate; an unshaped target's
// rate (bw.unshaped_bits_per_s / 8, already payload). 0 (no cap) for an unshaped base or the
// base's own rate.
Result<double> BandwidthCap(const EvalConfig& target, const EvalConfig& base,
                            const BandwidthModel& bw);

// With bw.tbf_burst_bytes > 0, a shaped base and a target of another rate: the target's links as
// the testbed builds them. A shaped target is a token bucket (its rate's TCP goodput, the burst's
// payload, the unshaped veth rate as line rate; a plain link at the slower of the two when the
// veth is no faster than the tbf rate); an unshaped target a plain link at the unshaped rate
// (with bw.unshaped_alpha_ns as its latency when that is >= 0).
// nullopt otherwise (the base's own rate, an unshaped base, or no burst given).
Result<std::optional<whatif::LinkShape>> TargetLinkShape(const EvalConfig& target,
                                                         const EvalConfig& base,
                                                         const BandwidthModel& bw);

// The what-if predicting `target` from a profile of `base`: bandwidth ×k, bucket size when it
// differs, overlap when it differs, compression when target.codec != base.codec (codec costs
// from `codecs_json` — a `loom bench codecs --json` file — when given, else DefaultCodec).
// A base that is itself compressed is not supported (kUnimplemented).
Result<whatif::WhatIf> ToWhatIf(const EvalConfig& target, const EvalConfig& base,
                                const BandwidthModel& bw, const std::string& codecs_json = "");

}  // namespace loom::trace::evaluation
