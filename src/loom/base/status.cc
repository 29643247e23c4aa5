#include "loom/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace loom {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN_CODE";
}

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
  if (code_ == StatusCode::kOk) message_.clear();
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

#define LOOM_DEFINE_ERROR_(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
LOOM_DEFINE_ERROR_(CancelledError, kCancelled)
LOOM_DEFINE_ERROR_(UnknownError, kUnknown)
LOOM_DEFINE_ERROR_(InvalidArgumentError, kInvalidArgument)
LOOM_DEFINE_ERROR_(DeadlineExceededError, kDeadlineExceeded)
LOOM_DEFINE_ERROR_(NotFoundError, kNotFound)
LOOM_DEFINE_ERROR_(AlreadyExistsError, kAlreadyExists)
LOOM_DEFINE_ERROR_(PermissionDeniedError, kPermissionDenied)
LOOM_DEFINE_ERROR_(ResourceExhaustedError, kResourceExhausted)
LOOM_DEFINE_ERROR_(FailedPreconditionError, kFailedPrecondition)
LOOM_DEFINE_ERROR_(AbortedError, kAborted)
LOOM_DEFINE_ERROR_(OutOfRangeError, kOutOfRange)
LOOM_DEFINE_ERROR_(UnimplementedError, kUnimplemented)
LOOM_DEFINE_ERROR_(InternalError, kInternal)
LOOM_DEFINE_ERROR_(UnavailableError, kUnavailable)
LOOM_DEFINE_ERROR_(DataLossError, kDataLoss)
#undef LOOM_DEFINE_ERROR_

void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "loom: FATAL: value() called on an error Result: %s\n",
               status.ToString().c_str());
  std::abort();
}

}  // namespace loom
