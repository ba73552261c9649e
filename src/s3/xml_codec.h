// S3 REST XML bodies: parsers for the responses the S3 client reads and
// builders for the request bodies it sends. Pure functions, thread-safe.
// Parsers never throw; malformed or unexpected input yields kInternal (or the
// parsed S3 error for an <Error> document), so they can be fuzzed directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "s3/object_store.h"

namespace dlq {

// <Error><Code>..</Code><Message>..</Message><RequestId>..</RequestId></Error>
struct S3XmlError {
  std::string code;
  std::string message;
  std::string request_id;
  std::string region;  // <Region> on redirects, when present
};

// Returns the error when `xml` is an S3 <Error> document, nullopt otherwise
// (including for malformed XML).
std::optional<S3XmlError> ParseS3Error(std::string_view xml);

// ListObjectsV2 (<ListBucketResult>). Keys, prefixes and the start-after are
// URL-decoded when the body says <EncodingType>url</EncodingType>.
struct ListObjectsV2Result {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> common_prefixes;
  bool is_truncated = false;
  std::string next_continuation_token;
};
Result<ListObjectsV2Result> ParseListObjectsV2(std::string_view xml);

// CreateMultipartUpload (<InitiateMultipartUploadResult>): the upload id.
Result<std::string> ParseInitiateMultipartUpload(std::string_view xml);

// CompleteMultipartUpload (<CompleteMultipartUploadResult>). S3 can answer
// 200 with an <Error> body: that yields a non-OK Status (kUnavailable for
// InternalError/ServiceUnavailable/SlowDown, kInternal otherwise) carrying
// the S3 error code and request id.
struct CompleteMultipartUploadResult {
  std::string etag;  // without quotes
  std::string location;
};
Result<CompleteMultipartUploadResult> ParseCompleteMultipartUpload(std::string_view xml);

struct CompletedPart {
  int part_number = 0;
  std::string etag;  // without quotes
};
// <CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"..."</ETag></Part>...
std::string BuildCompleteMultipartUploadXml(const std::vector<CompletedPart>& parts);
// <CreateBucketConfiguration><LocationConstraint>region</...>; empty for us-east-1.
std::string BuildCreateBucketConfigurationXml(std::string_view region);

// Escapes &, <, >, " and ' for XML text and attribute values.
std::string XmlEscape(std::string_view text);
// Removes surrounding double quotes (and a W/ prefix) from an ETag.
std::string UnquoteEtag(std::string_view etag);

}  // namespace dlq
