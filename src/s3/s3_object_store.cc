#include "s3/s3_object_store.h"

#include <fmt/format.h>

namespace dlq {

Status S3ObjectStore::Put(const std::string& key, std::string_view data, const PutOptions& options) {
  return client_.PutObject(bucket_, key, data, options).status();
}

Result<std::string> S3ObjectStore::Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) {
  return client_.GetObject(bucket_, key, range);
}

Result<ObjectInfo> S3ObjectStore::Head(const std::string& key) {
  DLQ_ASSIGN_OR_RETURN(ObjectMetadata meta, client_.HeadObject(bucket_, key));
  ObjectInfo info;
  info.key = key;
  info.size = meta.size;
  info.etag = std::move(meta.etag);
  info.last_modified = meta.last_modified;
  return info;
}

Result<ListPage> S3ObjectStore::List(const std::string& prefix, const std::string& delimiter,
                                     const std::string& token) {
  ListObjectsV2Request request;
  request.prefix = prefix;
  request.delimiter = delimiter;
  request.continuation_token = token;
  request.max_keys = page_size_;
  DLQ_ASSIGN_OR_RETURN(ListObjectsV2Result result, client_.ListObjectsV2(bucket_, request));
  ListPage page;
  page.objects = std::move(result.objects);
  page.common_prefixes = std::move(result.common_prefixes);
  if (result.is_truncated) page.next_token = std::move(result.next_continuation_token);
  return page;
}

Status S3ObjectStore::Delete(const std::string& key) {
  return client_.DeleteObject(bucket_, key);
}

Result<DestinationCheck> S3ObjectStore::CheckWritable() {
  Status st = client_.HeadBucket(bucket_);
  if (st.ok()) return DestinationCheck{};
  if (st.code() == ErrorCode::kNotFound) {
    return NotFound(
        fmt::format("bucket s3://{} does not exist (NoSuchBucket): check the name and the region", bucket_));
  }
  if (st.code() == ErrorCode::kPermissionDenied) {
    // HeadBucket needs s3:ListBucket, which writing does not: an archiver
    // allowed only s3:PutObject cannot tell more before its first upload.
    return DestinationCheck{.confirmed = false,
                            .note = fmt::format("HeadBucket on s3://{} was denied (403), so the bucket could not be "
                                                "checked before receiving; grant s3:ListBucket for an up-front check",
                                                bucket_)};
  }
  return st.WithContext(fmt::format("check bucket s3://{}", bucket_));
}

}  // namespace dlq
