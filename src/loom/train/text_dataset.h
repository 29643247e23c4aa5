// TextDataset: a byte-level corpus split into train/validation, and the deterministic batch
// sampler every rank and every peer implementation shares.
//
// Sampling rule (also implemented by bench/ddp_peer.py, so both sides see identical batches):
// for optimizer step s, rank r, micro-batch m, the stream id is (s * world + r) * accum + m;
// PhiloxStream(seed, stream) draws one start offset per sequence with NextBelow(n_train - T),
// and the sequence is train[off, off + T) with targets train[off + 1, off + T + 1).
// Validation batch i takes evenly spaced windows of the validation split.
//
// Thread-safety: immutable after Load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::train {

struct TokenBatch {
  int64_t batch = 0;
  int64_t seq_len = 0;
  std::vector<int64_t> tokens;   // [batch, seq_len]
  std::vector<int64_t> targets;  // [batch, seq_len]
};

class TextDataset {
 public:
  // source "bible": the King James Bible text from Debian's bible-kjv (`bible -f ...`);
  // source "file": the bytes of `path`.
  static Result<TextDataset> Load(const std::string& source, const std::string& path,
                                  double val_fraction);
  static TextDataset FromText(std::string text, double val_fraction);

  int64_t train_size() const { return static_cast<int64_t>(train_.size()); }
  int64_t val_size() const { return static_cast<int64_t>(val_.size()); }
  const std::string& description() const { return description_; }

  TokenBatch TrainBatch(uint64_t seed, int64_t step, int rank, int world, int64_t accum,
                        int64_t micro, int64_t batch, int64_t seq_len) const;
  // Validation batch `index` of `count`, shared by all ranks.
  TokenBatch ValBatch(int64_t index, int64_t count, int64_t batch, int64_t seq_len) const;

 private:
  std::string train_;
  std::string val_;
  std::string description_;
};

// Runs `bible -f gen1:1-rev22:21`; kNotFound with the install command when it is missing.
Result<std::string> LoadBibleText();

}  // namespace loom::train
