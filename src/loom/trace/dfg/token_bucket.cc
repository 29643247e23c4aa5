#include "loom/trace/dfg/token_bucket.h"

#include <algorithm>

namespace loom::trace::dfg {

TokenBucket::TokenBucket(double ns_per_byte, double burst_bytes, double line_ns_per_byte)
    : ns_per_byte_(std::max(0.0, ns_per_byte)),
      burst_(std::max(0.0, burst_bytes)),
      line_(std::max(0.0, line_ns_per_byte)),
      tokens_(burst_) {}

void TokenBucket::Reset(double t_ns) {
  tokens_ = burst_;
  updated_ns_ = t_ns;
  drained_ns_ = t_ns;
}

double TokenBucket::TokensAt(double t_ns) const {
  if (!(ns_per_byte_ > 0)) return burst_;
  return std::min(burst_, tokens_ + std::max(0.0, t_ns - updated_ns_) / ns_per_byte_);
}

void TokenBucket::StartNextPeriod(double period_ns) {
  updated_ns_ -= period_ns;
  drained_ns_ -= period_ns;
}

TokenBucket::Transfer TokenBucket::Send(double post_ns, double bytes) {
  Transfer x;
  x.start_ns = std::max(post_ns, drained_ns_);
  if (ns_per_byte_ > 0 && x.start_ns > updated_ns_) {
    tokens_ = std::min(burst_, tokens_ + (x.start_ns - updated_ns_) / ns_per_byte_);
  }
  const double dur = std::max(bytes * line_, (bytes - tokens_) * ns_per_byte_);
  x.shaped_bytes = std::max(0.0, bytes - tokens_);
  const double refill = ns_per_byte_ > 0 ? dur / ns_per_byte_ : burst_;
  tokens_ = std::clamp(tokens_ + refill - bytes, 0.0, burst_);
  x.drained_ns = x.start_ns + std::max(0.0, dur);
  updated_ns_ = x.drained_ns;
  drained_ns_ = x.drained_ns;
  return x;
}

}  // namespace loom::trace::dfg
