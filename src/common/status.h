// Errors as values. A Status carries a code that says whether a retry can
// help, a human message with context added at each layer, and the AWS error
// details (error code, HTTP status, request id) when the error came from AWS.
// Messages must never contain secrets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dlq {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,     // bad input or configuration; never retried
  kNotFound,            // queue, bucket, key, profile does not exist
  kAlreadyExists,       // create-only write hit an existing object
  kPermissionDenied,    // AccessDenied, KMS denied
  kUnauthenticated,     // bad or expired credentials, signature mismatch
  kThrottled,           // throttling/SlowDown/429: retryable with backoff
  kUnavailable,         // 5xx, connection failure, timeout: retryable
  kDeadlineExceeded,    // our own deadline ran out
  kFailedPrecondition,  // state does not allow the operation
  kDataLoss,            // integrity check failed (MD5 mismatch, corrupt data)
  kCancelled,           // stopped on request (signal)
  kInternal,            // bug or unexpected response
  kAborted,             // a guard stopped the run on purpose (guarded redrive: re-failures over the bound)
};

std::string_view ErrorCodeName(ErrorCode code);

// Details of an error returned by an AWS service.
struct AwsErrorInfo {
  std::string error_code;  // e.g. "AccessDenied", "QueueDoesNotExist"
  int http_status = 0;
  std::string request_id;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::optional<AwsErrorInfo>& aws() const { return aws_; }

  // True when the same call may succeed if retried later.
  bool retryable() const { return code_ == ErrorCode::kThrottled || code_ == ErrorCode::kUnavailable; }

  // Returns a copy whose message is "context: message".
  Status WithContext(std::string_view context) const;
  Status WithAws(AwsErrorInfo info) const;

  // "PermissionDenied: put s3://b/k: AccessDenied (HTTP 403, request id X): Access Denied"
  std::string ToString() const;

  void IgnoreError() const {}

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::optional<AwsErrorInfo> aws_;
};

inline Status InvalidArgument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {ErrorCode::kNotFound, std::move(m)};
}
inline Status AlreadyExists(std::string m) {
  return {ErrorCode::kAlreadyExists, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {ErrorCode::kPermissionDenied, std::move(m)};
}
inline Status Unauthenticated(std::string m) {
  return {ErrorCode::kUnauthenticated, std::move(m)};
}
inline Status Throttled(std::string m) {
  return {ErrorCode::kThrottled, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {ErrorCode::kUnavailable, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {ErrorCode::kDeadlineExceeded, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {ErrorCode::kFailedPrecondition, std::move(m)};
}
inline Status DataLoss(std::string m) {
  return {ErrorCode::kDataLoss, std::move(m)};
}
inline Status Cancelled(std::string m) {
  return {ErrorCode::kCancelled, std::move(m)};
}
inline Status Aborted(std::string m) {
  return {ErrorCode::kAborted, std::move(m)};
}
inline Status Internal(std::string m) {
  return {ErrorCode::kInternal, std::move(m)};
}

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace dlq

#define DLQ_CONCAT_INNER(a, b) a##b
#define DLQ_CONCAT(a, b) DLQ_CONCAT_INNER(a, b)

#define DLQ_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::dlq::Status dlq_status_ = (expr);        \
    if (!dlq_status_.ok()) return dlq_status_; \
  } while (0)

// NOLINTBEGIN(bugprone-macro-parentheses): lhs is a declaration, not an expression.
#define DLQ_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define DLQ_ASSIGN_OR_RETURN(lhs, expr) DLQ_ASSIGN_OR_RETURN_IMPL(DLQ_CONCAT(dlq_result_, __LINE__), lhs, expr)
// NOLINTEND(bugprone-macro-parentheses)
