#include "common/status.h"

#include <fmt/format.h>

namespace dlq {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kAlreadyExists: return "AlreadyExists";
    case ErrorCode::kPermissionDenied: return "PermissionDenied";
    case ErrorCode::kUnauthenticated: return "Unauthenticated";
    case ErrorCode::kThrottled: return "Throttled";
    case ErrorCode::kUnavailable: return "Unavailable";
    case ErrorCode::kDeadlineExceeded: return "DeadlineExceeded";
    case ErrorCode::kFailedPrecondition: return "FailedPrecondition";
    case ErrorCode::kDataLoss: return "DataLoss";
    case ErrorCode::kCancelled: return "Cancelled";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kAborted: return "Aborted";
  }
  return "Unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  Status s = *this;
  s.message_ = fmt::format("{}: {}", context, message_);
  return s;
}

Status Status::WithAws(AwsErrorInfo info) const {
  Status s = *this;
  s.aws_ = std::move(info);
  return s;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = fmt::format("{}: {}", ErrorCodeName(code_), message_);
  if (aws_) {
    out += fmt::format(" [aws error {}, HTTP {}", aws_->error_code.empty() ? "-" : aws_->error_code, aws_->http_status);
    if (!aws_->request_id.empty()) out += fmt::format(", request id {}", aws_->request_id);
    out += "]";
  }
  return out;
}

}  // namespace dlq
