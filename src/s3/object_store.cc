#include "s3/object_store.h"

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

}  // namespace dlq
