#include "s3/s3_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr uint64_t kMinPartSize = 5ull << 20;
constexpr uint64_t kMaxPartSize = 5ull << 30;
constexpr int kMaxParts = 10000;

// Same status with another code, keeping the message and the AWS details.
Status Recode(const Status& st, ErrorCode code) {
  Status out(code, st.message());
  if (st.aws()) out = out.WithAws(*st.aws());
  return out;
}

int HttpStatusOf(const Status& st) {
  return st.aws() ? st.aws()->http_status : 0;
}

bool IsKms(std::string_view sse) {
  return StartsWith(sse, "aws:kms");
}

bool LooksLikeMd5Hex(std::string_view etag) {
  return etag.size() == 32 &&
         std::all_of(etag.begin(), etag.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  s = Trim(s);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Bucket names with dots do not match the wildcard certificate of virtual
// hosts, so they always use path-style.
bool UsePathStyle(const S3ClientOptions& options, std::string_view bucket) {
  return options.path_style || bucket.find('.') != std::string_view::npos;
}

void AddPutHeaders(HttpHeaders& headers, const PutOptions& options) {
  if (!options.content_type.empty()) headers.emplace_back("Content-Type", options.content_type);
  if (!options.content_encoding.empty()) headers.emplace_back("Content-Encoding", options.content_encoding);
  if (!options.sse.empty()) headers.emplace_back("x-amz-server-side-encryption", options.sse);
  if (IsKms(options.sse) && !options.sse_kms_key_id.empty()) {
    headers.emplace_back("x-amz-server-side-encryption-aws-kms-key-id", options.sse_kms_key_id);
  }
  if (!options.storage_class.empty()) headers.emplace_back("x-amz-storage-class", options.storage_class);
  for (const auto& [name, value] : options.metadata) headers.emplace_back("x-amz-meta-" + ToLower(name), value);
}

// The ETag S3 gives a multipart object: MD5 of the concatenated part MD5s, "-", part count.
std::string MultipartEtag(const std::vector<Md5Digest>& part_digests) {
  std::string joined;
  joined.reserve(part_digests.size() * 16);
  for (const Md5Digest& d : part_digests) joined.append(reinterpret_cast<const char*>(d.data()), d.size());
  return fmt::format("{}-{}", Md5Hex(joined), part_digests.size());
}

}  // namespace

std::string S3Uri(std::string_view bucket, std::string_view key) {
  return key.empty() ? fmt::format("s3://{}", bucket) : fmt::format("s3://{}/{}", bucket, key);
}

Status S3ClientOptions::Validate() const {
  if (part_size < kMinPartSize || part_size > kMaxPartSize) {
    return InvalidArgument(
        fmt::format("s3 part_size {} must be between {} and {} bytes", part_size, kMinPartSize, kMaxPartSize));
  }
  if (multipart_threshold < part_size) {
    return InvalidArgument(
        fmt::format("s3 multipart_threshold {} must be at least part_size {}", multipart_threshold, part_size));
  }
  return Status::Ok();
}

S3Client::S3Client(AwsClient& client, S3ClientOptions options) : client_(client), options_(options) {
  if (auto url = ParseUrl(client_.endpoint().endpoint); url.ok()) endpoint_host_ = url->host;
}

AwsRequest S3Client::NewRequest(std::string operation, std::string method, const std::string& bucket,
                                const std::string& key) const {
  AwsRequest r;
  r.operation = std::move(operation);
  r.method = std::move(method);
  r.resource = S3Uri(bucket, key);
  std::string encoded_key = UriEncode(key, /*encode_slash=*/false);
  if (UsePathStyle(options_, bucket) || endpoint_host_.empty()) {
    r.path = "/" + UriEncode(bucket) + (key.empty() ? "" : "/" + encoded_key);
  } else {
    r.host_override = bucket + "." + endpoint_host_;
    r.path = "/" + encoded_key;
  }
  return r;
}

Result<HttpResponse> S3Client::Send(const AwsRequest& request, const std::string& bucket) {
  auto response = client_.Call(request);
  if (!response.ok() && (HttpStatusOf(response.status()) == 301 || HttpStatusOf(response.status()) == 307)) {
    // The message already names the bucket's region when S3 told it.
    return response.status().WithContext(fmt::format("bucket {} is not reachable at {} (region {})", bucket,
                                                     client_.endpoint().endpoint, client_.endpoint().region));
  }
  return response;
}

Result<std::string> S3Client::PutObject(const std::string& bucket, const std::string& key, std::string_view data,
                                        const PutOptions& options) {
  if (key.empty()) return InvalidArgument(fmt::format("PutObject {}: empty key", S3Uri(bucket, key)));
  if (data.size() > options_.multipart_threshold) return PutMultipart(bucket, key, data, options);
  return PutSingle(bucket, key, data, options);
}

Result<std::string> S3Client::PutSingle(const std::string& bucket, const std::string& key, std::string_view data,
                                        const PutOptions& options) {
  AwsRequest r = NewRequest("PutObject", "PUT", bucket, key);
  Md5Digest md5 = Md5(data);
  r.headers.emplace_back("Content-Length", std::to_string(data.size()));
  r.headers.emplace_back("Content-MD5", Base64Encode(md5));
  // The signature covers Content-MD5, not a SHA-256 of the body: S3 checks
  // the body against that MD5 (a changed body fails with BadDigest), and the
  // ETag is checked against it below. Hashing an 8 MiB object again cost
  // ~4% of a drain's CPU. The AWS SDKs do the same over HTTPS; over plain
  // HTTP (stand-ins, an on-premises endpoint) the signed MD5 binds the body
  // just as well.
  r.unsigned_payload = true;
  AddPutHeaders(r.headers, options);
  if (options.create_only) r.headers.emplace_back("If-None-Match", "*");
  r.body_view = data;  // alive until Send returns

  auto response = Send(r, bucket);
  if (!response.ok()) {
    const Status& st = response.status();
    Status out = st;
    if (options.create_only && HttpStatusOf(st) == 412 && st.code() != ErrorCode::kAlreadyExists) {
      out = Recode(st, ErrorCode::kAlreadyExists);
    }
    // A retried create-only PUT whose first attempt landed sees its own object.
    if (out.code() == ErrorCode::kAlreadyExists && options_.verify_etag && !IsKms(options.sse) &&
        AlreadyHolds(bucket, key, HexEncode(md5), data.size())) {
      return HexEncode(md5);
    }
    return out;
  }
  const std::string* etag_header = response->Header("ETag");
  if (etag_header == nullptr || UnquoteEtag(*etag_header).empty()) {
    return DataLoss(fmt::format("PutObject {}: response has no ETag, upload integrity not confirmed", r.resource));
  }
  std::string etag = UnquoteEtag(*etag_header);
  if (options_.verify_etag && !IsKms(options.sse) && !IEquals(etag, HexEncode(md5))) {
    return DataLoss(fmt::format("PutObject {}: ETag {} does not match the MD5 {} of the {} bytes sent", r.resource,
                                etag, HexEncode(md5), data.size()));
  }
  return etag;
}

Result<std::string> S3Client::PutMultipart(const std::string& bucket, const std::string& key, std::string_view data,
                                           const PutOptions& options) {
  const uint64_t part_size = std::max<uint64_t>(options_.part_size, 1);
  const uint64_t part_count = (data.size() + part_size - 1) / part_size;
  if (part_count > kMaxParts) {
    return InvalidArgument(fmt::format("PutObject {}: {} bytes need {} parts of {} bytes, more than S3's {}",
                                       S3Uri(bucket, key), data.size(), part_count, part_size, kMaxParts));
  }
  DLQ_ASSIGN_OR_RETURN(std::string upload_id, CreateMultipartUpload(bucket, key, options));
  const bool verify = options_.verify_etag && !IsKms(options.sse);

  auto abort_with = [&](Status st) -> Status {
    Status abort = AbortMultipartUpload(bucket, key, upload_id);
    if (!abort.ok()) {
      return st.WithContext(fmt::format("(abort of upload {} also failed, S3 lifecycle must clean it up: {})",
                                        upload_id, abort.ToString()));
    }
    return st;
  };

  std::vector<CompletedPart> parts;
  std::vector<Md5Digest> digests;
  parts.reserve(part_count);
  digests.reserve(part_count);
  for (uint64_t i = 0; i < part_count; ++i) {
    std::string_view chunk = data.substr(i * part_size, part_size);
    int number = static_cast<int>(i + 1);
    auto etag = UploadPart(bucket, key, upload_id, number, chunk, verify);
    if (!etag.ok()) return abort_with(etag.status());
    parts.push_back({number, *etag});
    digests.push_back(Md5(chunk));
  }
  auto done = CompleteMultipartUpload(bucket, key, upload_id, parts, options.create_only);
  const std::string expected = MultipartEtag(digests);
  if (!done.ok()) {
    // A retried Complete whose first attempt landed sees 412 or NoSuchUpload.
    const Status& st = done.status();
    bool maybe_ours = st.code() == ErrorCode::kAlreadyExists ||
                      (st.code() == ErrorCode::kNotFound && st.aws() && st.aws()->error_code == "NoSuchUpload");
    if (maybe_ours && verify && AlreadyHolds(bucket, key, expected, data.size())) return expected;
    return abort_with(st);
  }
  if (verify) {
    if (!IEquals(done->etag, expected)) {
      // The object exists but does not hold what we sent: report it, do not delete anything.
      return DataLoss(fmt::format("PutObject {}: multipart ETag {} does not match the expected {}", S3Uri(bucket, key),
                                  done->etag, expected));
    }
  }
  return done->etag;
}

bool S3Client::AlreadyHolds(const std::string& bucket, const std::string& key, const std::string& etag, uint64_t size) {
  auto meta = HeadObject(bucket, key);
  return meta.ok() && meta->size == size && IEquals(meta->etag, etag);
}

Result<std::string> S3Client::CreateMultipartUpload(const std::string& bucket, const std::string& key,
                                                    const PutOptions& options) {
  AwsRequest r = NewRequest("CreateMultipartUpload", "POST", bucket, key);
  r.query = "uploads";
  AddPutHeaders(r.headers, options);
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Send(r, bucket));
  auto id = ParseInitiateMultipartUpload(response.body);
  if (!id.ok()) return id.status().WithContext(fmt::format("CreateMultipartUpload {}", r.resource));
  return id;
}

Result<std::string> S3Client::UploadPart(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, int part_number, std::string_view data,
                                         bool verify_etag) {
  AwsRequest r = NewRequest("UploadPart", "PUT", bucket, key);
  r.query = fmt::format("partNumber={}&uploadId={}", part_number, UriEncode(upload_id));
  Md5Digest md5 = Md5(data);
  r.headers.emplace_back("Content-Length", std::to_string(data.size()));
  r.headers.emplace_back("Content-MD5", Base64Encode(md5));
  r.unsigned_payload = true;  // the signed Content-MD5 binds the body (PutSingle)
  r.body_view = data;         // alive until Send returns
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Send(r, bucket));
  const std::string* etag_header = response.Header("ETag");
  std::string etag = etag_header ? UnquoteEtag(*etag_header) : "";
  if (etag.empty()) {
    return DataLoss(fmt::format("UploadPart {} part {}: response has no ETag", r.resource, part_number));
  }
  if (verify_etag && !IEquals(etag, HexEncode(md5))) {
    return DataLoss(fmt::format("UploadPart {} part {}: ETag {} does not match the MD5 {} of the part", r.resource,
                                part_number, etag, HexEncode(md5)));
  }
  return etag;
}

Result<CompleteMultipartUploadResult> S3Client::CompleteMultipartUpload(const std::string& bucket,
                                                                        const std::string& key,
                                                                        const std::string& upload_id,
                                                                        const std::vector<CompletedPart>& parts,
                                                                        bool create_only) {
  AwsRequest r = NewRequest("CompleteMultipartUpload", "POST", bucket, key);
  r.query = "uploadId=" + UriEncode(upload_id);
  r.body = BuildCompleteMultipartUploadXml(parts);
  r.headers.emplace_back("Content-Type", "application/xml");
  if (create_only) r.headers.emplace_back("If-None-Match", "*");
  auto response = Send(r, bucket);
  if (!response.ok()) {
    const Status& st = response.status();
    if (create_only && HttpStatusOf(st) == 412 && st.code() != ErrorCode::kAlreadyExists) {
      return Recode(st, ErrorCode::kAlreadyExists);
    }
    return st;
  }
  auto result = ParseCompleteMultipartUpload(response->body);
  if (!result.ok()) return result.status().WithContext(fmt::format("CompleteMultipartUpload {}", r.resource));
  return result;
}

Status S3Client::AbortMultipartUpload(const std::string& bucket, const std::string& key, const std::string& upload_id) {
  AwsRequest r = NewRequest("AbortMultipartUpload", "DELETE", bucket, key);
  r.query = "uploadId=" + UriEncode(upload_id);
  auto response = Send(r, bucket);
  if (!response.ok() && response.status().code() == ErrorCode::kNotFound) return Status::Ok();  // already gone
  return response.status();
}

Result<std::string> S3Client::GetObject(const std::string& bucket, const std::string& key,
                                        std::optional<std::pair<uint64_t, uint64_t>> range) {
  AwsRequest r = NewRequest("GetObject", "GET", bucket, key);
  if (range) {
    if (range->first > range->second) {
      return InvalidArgument(
          fmt::format("GetObject {}: bad range bytes={}-{}", r.resource, range->first, range->second));
    }
    r.headers.emplace_back("Range", fmt::format("bytes={}-{}", range->first, range->second));
  }
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Send(r, bucket));
  if (range && response.status == 200) {
    // The server ignored the range: cut it out of the full body.
    if (range->first >= response.body.size()) {
      return InvalidArgument(fmt::format("GetObject {}: range start {} is past the object's {} bytes", r.resource,
                                         range->first, response.body.size()));
    }
    return response.body.substr(range->first, range->second - range->first + 1);
  }
  if (!range && options_.verify_etag) {
    const std::string* etag_header = response.Header("ETag");
    const std::string* sse = response.Header("x-amz-server-side-encryption");
    std::string etag = etag_header ? UnquoteEtag(*etag_header) : "";
    if (LooksLikeMd5Hex(etag) && !(sse && IsKms(*sse)) && !IEquals(etag, Md5Hex(response.body))) {
      return DataLoss(fmt::format("GetObject {}: body MD5 {} does not match ETag {} ({} bytes read)", r.resource,
                                  Md5Hex(response.body), etag, response.body.size()));
    }
  }
  return std::move(response.body);
}

Result<ObjectMetadata> S3Client::HeadObject(const std::string& bucket, const std::string& key) {
  AwsRequest r = NewRequest("HeadObject", "HEAD", bucket, key);
  auto response = Send(r, bucket);
  if (!response.ok()) {
    // HEAD responses have no body, so only the status code tells what went wrong.
    const Status& st = response.status();
    if (HttpStatusOf(st) == 404 && st.code() != ErrorCode::kNotFound) return Recode(st, ErrorCode::kNotFound);
    if (HttpStatusOf(st) == 403 && st.code() != ErrorCode::kPermissionDenied) {
      return Recode(st, ErrorCode::kPermissionDenied);
    }
    return st;
  }
  ObjectMetadata meta;
  if (const std::string* h = response->Header("Content-Length")) {
    auto size = ParseU64(*h);
    if (!size) return Internal(fmt::format("HeadObject {}: bad Content-Length '{}'", r.resource, *h));
    meta.size = *size;
  }
  if (const std::string* h = response->Header("ETag")) meta.etag = UnquoteEtag(*h);
  if (const std::string* h = response->Header("Last-Modified")) {
    auto t = ParseHttpDate(Trim(*h));
    if (!t) return Internal(fmt::format("HeadObject {}: bad Last-Modified '{}'", r.resource, *h));
    meta.last_modified = *t;
  }
  if (const std::string* h = response->Header("Content-Type")) meta.content_type = *h;
  if (const std::string* h = response->Header("Content-Encoding")) meta.content_encoding = *h;
  if (const std::string* h = response->Header("x-amz-server-side-encryption")) meta.sse = *h;
  for (const auto& [name, value] : response->headers) {
    std::string lower = ToLower(name);
    if (StartsWith(lower, "x-amz-meta-")) meta.metadata[lower.substr(11)] = value;
  }
  return meta;
}

Result<ListObjectsV2Result> S3Client::ListObjectsV2(const std::string& bucket, const ListObjectsV2Request& request) {
  AwsRequest r = NewRequest("ListObjectsV2", "GET", bucket, "");
  if (!request.prefix.empty()) r.resource = S3Uri(bucket, request.prefix);
  // Sorted by name, as the canonical query string is.
  std::vector<std::string> params;
  if (!request.continuation_token.empty())
    params.push_back("continuation-token=" + UriEncode(request.continuation_token));
  if (!request.delimiter.empty()) params.push_back("delimiter=" + UriEncode(request.delimiter));
  params.push_back("list-type=2");
  if (request.max_keys > 0) params.push_back(fmt::format("max-keys={}", request.max_keys));
  params.push_back("prefix=" + UriEncode(request.prefix));
  for (const std::string& p : params) r.query += (r.query.empty() ? "" : "&") + p;
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Send(r, bucket));
  auto page = ParseListObjectsV2(response.body);
  if (!page.ok()) return page.status().WithContext(fmt::format("ListObjectsV2 {}", r.resource));
  return page;
}

Status S3Client::DeleteObject(const std::string& bucket, const std::string& key) {
  if (key.empty()) return InvalidArgument(fmt::format("DeleteObject {}: empty key", S3Uri(bucket, key)));
  AwsRequest r = NewRequest("DeleteObject", "DELETE", bucket, key);
  return Send(r, bucket).status();
}

Status S3Client::CreateBucket(const std::string& bucket) {
  AwsRequest r = NewRequest("CreateBucket", "PUT", bucket, "");
  r.body = BuildCreateBucketConfigurationXml(client_.endpoint().region);
  if (!r.body.empty()) r.headers.emplace_back("Content-Type", "application/xml");
  auto response = Send(r, bucket);
  if (!response.ok()) {
    const Status& st = response.status();
    if (st.aws() && st.aws()->error_code == "BucketAlreadyOwnedByYou") return Status::Ok();
    return st;
  }
  return Status::Ok();
}

Status S3Client::HeadBucket(const std::string& bucket) {
  AwsRequest r = NewRequest("HeadBucket", "HEAD", bucket, "");
  auto response = Send(r, bucket);
  if (!response.ok()) {
    const Status& st = response.status();
    if (HttpStatusOf(st) == 404 && st.code() != ErrorCode::kNotFound) return Recode(st, ErrorCode::kNotFound);
    if (HttpStatusOf(st) == 403 && st.code() != ErrorCode::kPermissionDenied) {
      return Recode(st, ErrorCode::kPermissionDenied);
    }
    return st;
  }
  return Status::Ok();
}

}  // namespace dlq
