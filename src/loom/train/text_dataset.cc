#include "loom/train/text_dataset.h"

#include <sys/wait.h>

#include <cstdio>

#include "loom/base/file_util.h"
#include "loom/base/philox.h"

namespace loom::train {

Result<std::string> LoadBibleText() {
  const char* kInstall =
      "the King James Bible text is not installed: run `apt-get install bible-kjv` "
      "(scripts/setup does this), or train on another file with data.source=file "
      "data.path=FILE";
  if (!PathExists("/usr/bin/bible") && !PathExists("/usr/games/bible") &&
      std::system("command -v bible >/dev/null 2>&1") != 0) {
    return NotFoundError(std::string("data.source=bible: ") + kInstall);
  }
  FILE* p = ::popen("PATH=\"$PATH:/usr/games\" bible -f gen1:1-rev22:21 2>&1", "r");
  if (p == nullptr) return InternalError("cannot run the bible command");
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  int st = ::pclose(p);
  if (st != 0 || text.size() < 1000000) {
    return NotFoundError(std::string("data.source=bible: `bible -f gen1:1-rev22:21` failed (") +
                         text.substr(0, 200) + "); " + kInstall);
  }
  return text;
}

TextDataset TextDataset::FromText(std::string text, double val_fraction) {
  TextDataset d;
  size_t n_val = static_cast<size_t>(static_cast<double>(text.size()) * val_fraction);
  d.val_ = text.substr(text.size() - n_val);
  text.resize(text.size() - n_val);
  d.train_ = std::move(text);
  return d;
}

Result<TextDataset> TextDataset::Load(const std::string& source, const std::string& path,
                                      double val_fraction) {
  std::string text, desc;
  if (source == "bible") {
    LOOM_ASSIGN_OR_RETURN(text, LoadBibleText());
    desc = "King James Bible (bible-kjv)";
  } else {
    auto r = ReadFileToString(path);
    if (!r.ok()) return r.status().WithContext("data.path");
    text = std::move(r).value();
    desc = path;
  }
  TextDataset d = FromText(std::move(text), val_fraction);
  d.description_ = desc + ", " + std::to_string(d.train_size()) + " train / " +
                   std::to_string(d.val_size()) + " val bytes";
  return d;
}

TokenBatch TextDataset::TrainBatch(uint64_t seed, int64_t step, int rank, int world,
                                   int64_t accum, int64_t micro, int64_t batch,
                                   int64_t seq_len) const {
  TokenBatch b{batch, seq_len, std::vector<int64_t>(batch * seq_len),
               std::vector<int64_t>(batch * seq_len)};
  uint64_t stream = (static_cast<uint64_t>(step) * world + rank) * accum + micro;
  PhiloxStream rng(seed, stream);
  const uint64_t span = static_cast<uint64_t>(train_size() - seq_len);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t off = static_cast<int64_t>(rng.NextBelow(span));
    for (int64_t t = 0; t < seq_len; ++t) {
      b.tokens[i * seq_len + t] = static_cast<unsigned char>(train_[off + t]);
      b.targets[i * seq_len + t] = static_cast<unsigned char>(train_[off + t + 1]);
    }
  }
  return b;
}

TokenBatch TextDataset::ValBatch(int64_t index, int64_t count, int64_t batch,
                                 int64_t seq_len) const {
  TokenBatch b{batch, seq_len, std::vector<int64_t>(batch * seq_len),
               std::vector<int64_t>(batch * seq_len)};
  const int64_t windows = batch * count;
  const int64_t span = val_size() - seq_len - 1;
  for (int64_t i = 0; i < batch; ++i) {
    int64_t w = index * batch + i;
    int64_t off = span * w / windows;
    for (int64_t t = 0; t < seq_len; ++t) {
      b.tokens[i * seq_len + t] = static_cast<unsigned char>(val_[off + t]);
      b.targets[i * seq_len + t] = static_cast<unsigned char>(val_[off + t + 1]);
    }
  }
  return b;
}

}  // namespace loom::train
