#include "s3/s3_object_store.h"

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
  DLQ_ASSIGN_OR_RETURN(ListObjectsV2Result result, client_.ListObjectsV2(bucket_, request));
  ListPage page;
  page.objects = std::move(result.objects);
  page.common_prefixes = std::move(result.common_prefixes);
  if (result.is_truncated) page.next_token = std::move(result.next_continuation_token);
  return page;
}

Status S3ObjectStore::Delete(const std::string& key) { return client_.DeleteObject(bucket_, key); }

}  // namespace dlq
