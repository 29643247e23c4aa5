#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {

Result<int64_t> ErrorFeedback::Encode(const float* x, char* out, const StepContext& ctx) {
  const int64_t n = static_cast<int64_t>(residual_.size());
  for (int64_t i = 0; i < n; ++i) work_[i] = x[i] + residual_[i];
  LOOM_ASSIGN_OR_RETURN(int64_t bytes, codec_->Encode(work_.data(), n, out, ctx));
  // residual = (x + residual) - decode(encode(x + residual))
  for (int64_t i = 0; i < n; ++i) residual_[i] = work_[i];
  for (int64_t i = 0; i < n; ++i) work_[i] = 0.f;
  LOOM_RETURN_IF_ERROR(codec_->DecodeAdd(out, bytes, n, work_.data()));
  for (int64_t i = 0; i < n; ++i) residual_[i] -= work_[i];
  return bytes;
}

}  // namespace loom::compress
