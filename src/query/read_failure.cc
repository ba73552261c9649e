#include "query/read_failure.h"

#include <fmt/format.h>

namespace dlq {

std::string ReadFailure(const Status& st, const Destination& from, std::string_view named_by) {
  const std::string code = st.aws() ? st.aws()->error_code : "";
  std::string hint;
  if (from.scheme == "s3") {
    const std::string prefix = from.prefix.empty() ? "" : from.prefix + "/";
    if (code == "NoSuchBucket") {
      hint = fmt::format("bucket {} does not exist: check the name in {} and the region", from.bucket, named_by);
    } else if (st.code() == ErrorCode::kPermissionDenied) {
      hint = fmt::format(
          "reading the archive needs s3:ListBucket on arn:aws:s3:::{0} and s3:GetObject on arn:aws:s3:::{0}/{1}*: "
          "check the identity's policy and the bucket policy (dlq-archive doctor --bucket {0} shows who you are)",
          from.bucket, prefix);
    } else if (st.code() == ErrorCode::kUnauthenticated) {
      hint = "the credentials were refused: dlq-archive doctor explains which ones are used";
    }
  } else if (st.code() == ErrorCode::kPermissionDenied) {
    hint = fmt::format("check that this user may read {} and every directory under it", from.root);
  } else if (st.code() == ErrorCode::kNotFound) {
    hint = fmt::format("{} does not exist: check the path in {}", from.root, named_by);
  }
  return hint.empty() ? st.ToString() : fmt::format("{}; {}", st.ToString(), hint);
}

}  // namespace dlq
