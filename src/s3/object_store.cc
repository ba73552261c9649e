#include "s3/object_store.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {

PutFailureAdvice ObjectStore::AdvisePutFailure(const Status& failure) const {
  PutFailureAdvice advice{"s3:PutObject", ""};
  const std::string code = failure.aws() ? failure.aws()->error_code : "";
  if (code == "NoSuchBucket") {
    advice.hint = "the bucket does not exist: check the name and the region";
  } else if (StartsWith(code, "KMS.") || code == "KMSKeyNotAccessibleFault" ||
             failure.message().find("KMS") != std::string::npos) {
    advice.hint =
        "the KMS key is disabled or not usable: check the key's state, its key policy and kms:GenerateDataKey";
  } else if (failure.code() == ErrorCode::kPermissionDenied) {
    advice.hint = "check the role's policy (s3:PutObject) and the bucket policy";
  } else if (failure.code() == ErrorCode::kUnauthenticated) {
    advice.hint = "check the credentials (doctor explains them)";
  } else if (failure.retryable()) {
    advice.hint = "S3 kept failing after every retry: check S3's health and the network, then run again";
  } else {
    advice.hint = "run doctor --bucket to check access";
  }
  return advice;
}

Result<std::string> GetAtMost(ObjectStore& store, const std::string& key, uint64_t max_bytes, std::string_view what) {
  auto too_large = [&](uint64_t size, std::string_view at_least) {
    return FailedPrecondition(fmt::format("{} {}/{} is {}{} bytes, more than the {} bytes one may take; not read", what,
                                          store.Describe(), key, at_least, size, max_bytes));
  };
  auto info = store.Head(key);
  if (!info.ok()) return info.status();
  if (info->size > max_bytes) return too_large(info->size, "");
  if (info->size == 0) return std::string();
  auto data = store.Get(key, std::pair<uint64_t, uint64_t>{0, max_bytes});
  if (data.ok() && data->size() > max_bytes) return too_large(data->size(), "at least ");
  return data;
}

}  // namespace dlq
