// S3Client: the S3 REST calls the archive needs, over AwsClient. Thread-safe
// (stateless apart from its options); the AwsClient must outlive it and be
// built with ServiceEndpoint{.service = "s3", .s3 = true}.
//
// Every failure is a Status naming the operation and s3://bucket/key, with the
// S3 error code and request id. PutObject returns only once S3 confirmed the
// upload: Content-MD5 is always sent and the returned ETag is checked against
// the MD5 (except with SSE-KMS, whose ETags are not MD5s); a mismatch is
// kDataLoss. A multipart upload that fails at any step is aborted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "aws/aws_client.h"
#include "common/status.h"
#include "s3/object_store.h"
#include "s3/xml_codec.h"

namespace dlq {

struct S3ClientOptions {
  // Path-style (endpoint/bucket/key) instead of virtual-hosted (bucket.host/key).
  // Local S3 stand-ins usually need path-style.
  bool path_style = false;
  // Objects larger than this are uploaded in parts of part_size bytes.
  uint64_t multipart_threshold = 16ull << 20;
  uint64_t part_size = 8ull << 20;  // >= 5 MiB (S3's minimum), <= 5 GiB
  // Check returned ETags against the MD5 of what was sent (skipped for SSE-KMS).
  bool verify_etag = true;
  Status Validate() const;
};

struct ObjectMetadata {
  uint64_t size = 0;
  std::string etag;  // without quotes
  SystemTime last_modified;
  std::string content_type;
  std::string content_encoding;
  std::string sse;                              // x-amz-server-side-encryption
  std::map<std::string, std::string> metadata;  // x-amz-meta-* (names lower-cased, prefix removed)
};

struct ListObjectsV2Request {
  std::string prefix;
  std::string delimiter;
  std::string continuation_token;
  int max_keys = 0;  // 0: S3's default (1000)
};

class S3Client {
 public:
  explicit S3Client(AwsClient& client, S3ClientOptions options = {});

  // Returns the ETag (without quotes). create_only: kAlreadyExists when the key
  // holds other content; when it already holds exactly these bytes (a retried
  // request whose first attempt landed) the put succeeds, as nothing is lost.
  Result<std::string> PutObject(const std::string& bucket, const std::string& key, std::string_view data,
                                const PutOptions& options);
  // `range` is inclusive [first, last]. A full read of a non-multipart,
  // non-KMS object is checked against its ETag (kDataLoss on mismatch).
  Result<std::string> GetObject(const std::string& bucket, const std::string& key,
                                std::optional<std::pair<uint64_t, uint64_t>> range = std::nullopt);
  Result<ObjectMetadata> HeadObject(const std::string& bucket, const std::string& key);
  // One page; follow next_continuation_token while is_truncated.
  Result<ListObjectsV2Result> ListObjectsV2(const std::string& bucket, const ListObjectsV2Request& request);
  Status DeleteObject(const std::string& bucket, const std::string& key);
  // Creates the bucket in the client's region; succeeds when it is already ours.
  Status CreateBucket(const std::string& bucket);
  // OK when the bucket exists and is reachable with these credentials;
  // kNotFound, kPermissionDenied, or kFailedPrecondition for another region.
  Status HeadBucket(const std::string& bucket);

  // Multipart steps, public for tests and for callers that stream.
  Result<std::string> CreateMultipartUpload(const std::string& bucket, const std::string& key,
                                            const PutOptions& options);
  Result<std::string> UploadPart(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                 int part_number, std::string_view data, bool verify_etag);
  Result<CompleteMultipartUploadResult> CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                                                const std::string& upload_id,
                                                                const std::vector<CompletedPart>& parts,
                                                                bool create_only);
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key, const std::string& upload_id);

  const S3ClientOptions& options() const { return options_; }

 private:
  AwsRequest NewRequest(std::string operation, std::string method, const std::string& bucket,
                        const std::string& key) const;
  Result<HttpResponse> Send(const AwsRequest& request, const std::string& bucket);
  Result<std::string> PutSingle(const std::string& bucket, const std::string& key, std::string_view data,
                                const PutOptions& options);
  Result<std::string> PutMultipart(const std::string& bucket, const std::string& key, std::string_view data,
                                   const PutOptions& options);
  // True when the object exists with this ETag and size (our own earlier attempt).
  bool AlreadyHolds(const std::string& bucket, const std::string& key, const std::string& etag, uint64_t size);

  AwsClient& client_;
  S3ClientOptions options_;
  std::string endpoint_host_;  // host[:port] of the endpoint, for virtual-hosted style
};

// "s3://bucket/key" (or "s3://bucket" when key is empty), for messages.
std::string S3Uri(std::string_view bucket, std::string_view key);

}  // namespace dlq
