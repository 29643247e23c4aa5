// LOOM_CHECK: invariants whose violation is a programming error (not bad input). On failure the
// process prints file:line, the condition and any streamed message, then aborts.
// Bad input is reported with Status instead. LOOM_DCHECK compiles away in NDEBUG builds.
#pragma once

#include "loom/base/logging.h"

#define LOOM_CHECK(cond)                                                            \
  (cond) ? (void)0                                                                  \
         : ::loom::internal::LogVoidify() &                                         \
               ::loom::internal::LogMessage(::loom::LogLevel::kFatal, "check", __FILE__, \
                                            __LINE__)                               \
                       .stream()                                                    \
                   << "Check failed: " #cond " "

#define LOOM_CHECK_OK(expr)                                                              \
  do {                                                                                   \
    ::loom::Status loom_check_status_ = ::loom::internal::AsStatus((expr));              \
    LOOM_CHECK(loom_check_status_.ok()) << loom_check_status_.ToString();                \
  } while (0)

#ifdef NDEBUG
#define LOOM_DCHECK(cond) \
  while (false) LOOM_CHECK(cond)
#else
#define LOOM_DCHECK(cond) LOOM_CHECK(cond)
#endif
