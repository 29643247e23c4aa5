// TokenBucket: the state of one shaped link (Linux `tc tbf`, i.e. GCRA on bytes), shared by the
// replayer (which charges SENDs on such a link) and the link fit (which simulates a trace's
// transfers to choose rate and burst).
//
//   TokenBucket tb(/*ns_per_byte=*/40, /*burst_bytes=*/256 << 10, /*line_ns_per_byte=*/1);
//   TokenBucket::Transfer x = tb.Send(/*post_ns=*/t, /*bytes=*/96e3);  // x.drained_ns
//
// Model: tokens (bytes) refill at 1/ns_per_byte up to burst_bytes; the bucket starts full. A
// transfer posted at t starts when the link's earlier bytes have left (FIFO per link), then its
// bytes covered by tokens leave at line rate and the rest at the token rate:
//   start   = max(t, previous drained),  tokens += (start − last update) / ns_per_byte (≤ burst)
//   drained = start + max(bytes · line_ns_per_byte, (bytes − tokens) · ns_per_byte)
// and the tokens left are what refilled during the transfer minus what it used (≥ 0). A training
// loop repeats its iteration, so the replay and the fit start an iteration from the bucket state
// the previous identical iteration left (StartNextPeriod), not from a full bucket. With
// burst_bytes = 0 and line_ns_per_byte = 0 this is bytes · ns_per_byte behind a FIFO: the α-β
// link plus queueing on the sender's own earlier bytes.
//
// Thread-safety: a value type; not synchronized.
#pragma once

namespace loom::trace::dfg {

class TokenBucket {
 public:
  struct Transfer {
    double start_ns = 0;      // when the link began sending it (after earlier bytes left)
    double drained_ns = 0;    // when its last byte left the link
    double shaped_bytes = 0;  // bytes that waited for tokens (went at the token rate)
  };

  TokenBucket() = default;
  TokenBucket(double ns_per_byte, double burst_bytes, double line_ns_per_byte);

  // Posts `bytes` at `post_ns` (posts must come in time order for a FIFO link).
  Transfer Send(double post_ns, double bytes);
  // Full bucket and an idle link from `t_ns` on (the start of an iteration).
  void Reset(double t_ns);
  // Moves the bucket's clock back by `period_ns`: what this iteration left (tokens, bytes still
  // draining) becomes the state at the same instants of the next, identical iteration. Used to
  // find the periodic steady state of a training loop (replay and fit iterate until it repeats).
  void StartNextPeriod(double period_ns);

  double tokens() const { return tokens_; }  // at the end of the last transfer
  // Tokens at `t_ns` if nothing is sent before (the bucket's state compared across periods).
  double TokensAt(double t_ns) const;
  double drained_ns() const { return drained_ns_; }  // when the link's bytes have all left

 private:
  double ns_per_byte_ = 0;
  double burst_ = 0;
  double line_ = 0;
  double tokens_ = 0;
  double updated_ns_ = 0;  // tokens_ is the level at this time
  double drained_ns_ = -1e300;
};

}  // namespace loom::trace::dfg
