// Status and Result<T>: how every loom module reports errors.
//
// A Status is a code (absl's canonical codes) plus a human-readable message that names what went
// wrong and where ("allreduce: rank 0 timed out after 100 ms waiting for rank 1"). Result<T> holds
// either a value or a non-OK Status, shaped like std::expected<T, Status>.
//
//   Result<Config> LoadConfig(const std::string& path);
//   LOOM_ASSIGN_OR_RETURN(Config cfg, LoadConfig(path));
//   LOOM_RETURN_IF_ERROR(comm.Barrier(opts));
//
// Thread-safety: value types; distinct objects may be used from different threads freely.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace loom {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly drops a status (for destructors and best-effort cleanup).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
// "INVALID_ARGUMENT: message" (for logs and test failure messages).
inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);

// Either a T or a non-OK Status. Constructing from an OK Status is a programming error and is
// turned into an kInternal status so that it cannot be mistaken for success.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : v_(value) {}             // NOLINT(runtime/explicit)
  Result(T&& value) : v_(std::move(value)) {}       // NOLINT(runtime/explicit)
  Result(const Status& status) : v_(status) { Fix(); }  // NOLINT(runtime/explicit)
  Result(Status&& status) : v_(std::move(status)) { Fix(); }  // NOLINT(runtime/explicit)
  template <typename U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, Result<T>> && !std::is_same_v<std::decay_t<U>, T>)
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT(runtime/explicit)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status() : std::get<Status>(std::move(v_)); }

  // Precondition: ok(). Checked: accessing the value of an error Result aborts.
  T& value() & { CheckOk(); return std::get<T>(v_); }
  const T& value() const& { CheckOk(); return std::get<T>(v_); }
  T&& value() && { CheckOk(); return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Fix() {
    if (std::get<Status>(v_).ok()) v_ = InternalError("Result constructed from an OK Status");
  }
  void CheckOk() const;
  std::variant<T, Status> v_;
};

[[noreturn]] void DieOnBadResultAccess(const Status& status);

template <typename T>
void Result<T>::CheckOk() const {
  if (!ok()) DieOnBadResultAccess(std::get<Status>(v_));
}

namespace internal {
inline Status AsStatus(const Status& s) { return s; }
inline Status AsStatus(Status&& s) { return std::move(s); }
template <typename T>
Status AsStatus(const Result<T>& r) { return r.status(); }
}  // namespace internal

}  // namespace loom

#define LOOM_STATUS_CONCAT_INNER_(a, b) a##b
#define LOOM_STATUS_CONCAT_(a, b) LOOM_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status or Result) is not OK.
#define LOOM_RETURN_IF_ERROR(expr)                                            \
  do {                                                                        \
    ::loom::Status loom_status_ = ::loom::internal::AsStatus((expr));         \
    if (!loom_status_.ok()) return loom_status_;                              \
  } while (0)

// `LOOM_ASSIGN_OR_RETURN(T x, ResultExpr)`: declares/assigns x or returns the error.
#define LOOM_ASSIGN_OR_RETURN(lhs, rexpr) \
  LOOM_ASSIGN_OR_RETURN_IMPL_(LOOM_STATUS_CONCAT_(loom_result_, __LINE__), lhs, rexpr)
#define LOOM_ASSIGN_OR_RETURN_IMPL_(result, lhs, rexpr) \
  auto result = (rexpr);                                \
  if (!result.ok()) return std::move(result).status();  \
  lhs = std::move(result).value()
