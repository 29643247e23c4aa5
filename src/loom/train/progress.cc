#include "loom/train/progress.h"

#include <cmath>
#include <cstdio>

namespace loom::train {

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  } else if (t >= 60) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lds", t);
  }
  return buf;
}

std::string FormatThousands(double v) {
  std::string digits = std::to_string(std::llround(std::fabs(v)));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string Progress::Line(const MetricRow& row) const {
  const int width = static_cast<int>(std::to_string(total_).size());
  double done = static_cast<double>(row.step - start_);
  double eta = done > 0 ? clock_.Seconds() / done * static_cast<double>(total_ - row.step) : 0;
  char buf[256];
  int n = std::snprintf(buf, sizeof(buf), "step %*lld/%lld | loss %.4f", width,
                        static_cast<long long>(row.step), static_cast<long long>(total_), row.loss);
  std::string s(buf, n);
  if (row.eval_loss) {
    std::snprintf(buf, sizeof(buf), " | eval %.4f", *row.eval_loss);
    s += buf;
  }
  std::snprintf(buf, sizeof(buf), " | %s tok/s | MFU %.1f%% | lr %.1e | ETA %s\n",
                FormatThousands(row.tokens_per_s).c_str(), 100 * row.mfu, row.lr,
                FormatDuration(eta).c_str());
  return s + buf;
}

}  // namespace loom::train
