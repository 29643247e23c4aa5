#include "loom/compress/decorators/error_feedback.h"

#include "loom/base/check.h"

namespace loom::compress {

Result<int64_t> ErrorFeedback::EncodeRange(const float* x, int64_t begin, int64_t n, char* out,
                                           const StepContext& ctx, float* decoded) {
  LOOM_DCHECK(begin >= 0 && n >= 0 && begin + n <= static_cast<int64_t>(residual_.size()));
  float* res = residual_.data() + begin;
  float* work = work_.data() + begin;
  // Four passes (sum, encode, decode, difference) instead of six (sum, encode, copy, zero,
  // decode-add, subtract); the arithmetic, (x + r) - decode(encode(x + r)), is the same.
  for (int64_t i = 0; i < n; ++i) work[i] = x[i] + res[i];
  // A failure returns before the residual is touched, so a skipped step (e.g. an fp16 overflow)
  // does not poison the next ones.
  LOOM_ASSIGN_OR_RETURN(int64_t bytes, codec_->Encode(work, n, out, ctx));
  float* y = decoded != nullptr ? decoded : res;
  LOOM_RETURN_IF_ERROR(codec_->Decode(out, bytes, n, y));
  for (int64_t i = 0; i < n; ++i) res[i] = work[i] - y[i];
  return bytes;
}

}  // namespace loom::compress
