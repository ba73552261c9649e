#include "s3/s3_client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "aws/credentials.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "s3/s3_object_store.h"
#include "s3/xml_codec.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Credentials TestCredentials() {
  Credentials c;
  c.access_key_id = "AKIDEXAMPLE";
  c.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  return c;
}

std::string Quoted(const std::string& s) {
  return "\"" + s + "\"";
}

const std::string* Header(const HttpRequest& r, std::string_view name) {
  return FindHeader(r.headers, name);
}

std::string HeaderOr(const HttpRequest& r, std::string_view name) {
  const std::string* h = Header(r, name);
  return h ? *h : "<missing>";
}

Url UrlOf(const HttpRequest& r) {
  auto url = ParseUrl(r.url);
  EXPECT_TRUE(url.ok()) << r.url;
  return url.ok() ? *url : Url{};
}

HttpResponse S3Error(int status, std::string_view code, std::string_view message = "msg") {
  return MakeResponse(
      status,
      fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>{}</Message>"
                  "<RequestId>REQ123</RequestId></Error>",
                  code, message),
      {{"x-amz-request-id", "REQ123"}});
}

class S3ClientTest : public ::testing::Test {
 protected:
  explicit S3ClientTest(std::string region = "us-east-1")
      : creds_(TestCredentials()),
        aws_(ServiceEndpoint{"s3", region, "https://s3." + region + ".amazonaws.com", true}, http_, creds_, clock_,
             RetryOptions{.max_attempts = 2}) {}

  S3Client PathStyle(S3ClientOptions o = {}) {
    o.path_style = true;
    return S3Client(aws_, o);
  }

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
};

// Answers PutObject like S3 does: ETag = MD5 of the body.
Result<HttpResponse> EchoMd5(const HttpRequest& r) {
  return MakeResponse(200, "", {{"ETag", Quoted(Md5Hex(r.body))}});
}

TEST_F(S3ClientTest, PutObjectSendsPathStyleRequestWithIntegrityAndCreateOnlyHeaders) {
  http_.SetHandler(EchoMd5);
  S3Client s3 = PathStyle();
  PutOptions o;
  o.content_encoding = "gzip";
  o.sse = "AES256";
  o.storage_class = "STANDARD_IA";
  o.metadata = {{"Queue", "orders-dlq"}};
  auto etag = s3.PutObject("my-bucket", "dlq-archive/orders-dlq/a.json.gz", "hello world", o);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, Md5Hex("hello world"));

  ASSERT_EQ(http_.calls(), 1);
  HttpRequest r = http_.requests()[0];
  EXPECT_EQ(r.method, "PUT");
  Url url = UrlOf(r);
  EXPECT_EQ(url.host, "s3.us-east-1.amazonaws.com");
  EXPECT_EQ(url.path, "/my-bucket/dlq-archive/orders-dlq/a.json.gz");
  EXPECT_EQ(url.query, "");
  EXPECT_EQ(r.body, "hello world");
  EXPECT_EQ(HeaderOr(r, "Content-MD5"), Base64Encode(Md5("hello world")));
  EXPECT_EQ(HeaderOr(r, "Content-MD5"), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(HeaderOr(r, "Content-Length"), "11");
  EXPECT_EQ(HeaderOr(r, "Content-Type"), "application/x-ndjson");
  EXPECT_EQ(HeaderOr(r, "Content-Encoding"), "gzip");
  EXPECT_EQ(HeaderOr(r, "x-amz-server-side-encryption"), "AES256");
  EXPECT_EQ(Header(r, "x-amz-server-side-encryption-aws-kms-key-id"), nullptr);
  EXPECT_EQ(HeaderOr(r, "x-amz-storage-class"), "STANDARD_IA");
  EXPECT_EQ(HeaderOr(r, "x-amz-meta-queue"), "orders-dlq");
  EXPECT_EQ(HeaderOr(r, "If-None-Match"), "*");
  EXPECT_THAT(HeaderOr(r, "Authorization"), HasSubstr("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
  // As the AWS SDKs do over HTTPS: the signed Content-MD5 stands for the body, which is not hashed again.
  EXPECT_EQ(HeaderOr(r, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_THAT(HeaderOr(r, "Authorization"), HasSubstr("content-md5;"));
}

// Over plain HTTP too the signature covers Content-MD5, which S3 checks the
// body against, not a second hash of the body.
TEST(S3ClientOverHttp, UploadsSignTheContentMd5RatherThanHashTheBodyAgain) {
  FakeHttpTransport http;
  StaticCredentialsProvider creds(TestCredentials());
  FakeClock clock;
  AwsClient aws(ServiceEndpoint{"s3", "us-east-1", "http://127.0.0.1:9000", true}, http, creds, clock,
                RetryOptions{.max_attempts = 1});
  http.SetHandler(EchoMd5);
  S3Client s3(aws, S3ClientOptions{.path_style = true});
  ASSERT_TRUE(s3.PutObject("b", "k", "hello world", PutOptions{}).ok());
  ASSERT_EQ(http.calls(), 1);
  EXPECT_EQ(HeaderOr(http.requests()[0], "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(HeaderOr(http.requests()[0], "Content-MD5"), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_THAT(HeaderOr(http.requests()[0], "Authorization"), HasSubstr("content-md5;"));
}

TEST_F(S3ClientTest, PutObjectWithoutCreateOnlyOmitsIfNoneMatch) {
  http_.SetHandler(EchoMd5);
  S3Client s3 = PathStyle();
  PutOptions o;
  o.create_only = false;
  ASSERT_TRUE(s3.PutObject("b", "k", "x", o).ok());
  EXPECT_EQ(Header(http_.requests()[0], "If-None-Match"), nullptr);
}

TEST_F(S3ClientTest, VirtualHostedStylePutsBucketInHost) {
  http_.SetHandler(EchoMd5);
  S3Client s3(aws_);  // path_style defaults to false
  ASSERT_TRUE(s3.PutObject("my-bucket", "a/b.json.gz", "data", {}).ok());
  HttpRequest r = http_.requests()[0];
  Url url = UrlOf(r);
  EXPECT_EQ(url.host, "my-bucket.s3.us-east-1.amazonaws.com");
  EXPECT_EQ(url.path, "/a/b.json.gz");
  EXPECT_EQ(HeaderOr(r, "Host"), "my-bucket.s3.us-east-1.amazonaws.com");
}

TEST_F(S3ClientTest, BucketsWithDotsFallBackToPathStyle) {
  http_.SetHandler(EchoMd5);
  S3Client s3(aws_);
  ASSERT_TRUE(s3.PutObject("my.dotted.bucket", "k", "data", {}).ok());
  Url url = UrlOf(http_.requests()[0]);
  EXPECT_EQ(url.host, "s3.us-east-1.amazonaws.com");
  EXPECT_EQ(url.path, "/my.dotted.bucket/k");
}

TEST_F(S3ClientTest, KeysAreUriEncodedPerSegmentKeepingSlashes) {
  http_.SetHandler(EchoMd5);
  S3Client s3 = PathStyle();
  ASSERT_TRUE(s3.PutObject("b", "queue=a b/dt=2025-09-10/c+d\xc3\xa9~.json", "x", {}).ok());
  EXPECT_EQ(UrlOf(http_.requests()[0]).path, "/b/queue%3Da%20b/dt%3D2025-09-10/c%2Bd%C3%A9~.json");
}

TEST_F(S3ClientTest, PutObjectFailsWithDataLossWhenEtagIsNotTheMd5) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "", {{"ETag", "\"0123456789abcdef0123456789abcdef\""}});
  });
  S3Client s3 = PathStyle();
  auto etag = s3.PutObject("b", "k", "payload", {});
  ASSERT_FALSE(etag.ok());
  EXPECT_EQ(etag.status().code(), ErrorCode::kDataLoss);
  EXPECT_THAT(etag.status().message(), HasSubstr("s3://b/k"));
}

TEST_F(S3ClientTest, PutObjectFailsWithDataLossWhenEtagIsMissing) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, ""); });
  S3Client s3 = PathStyle();
  auto etag = s3.PutObject("b", "k", "payload", {});
  EXPECT_EQ(etag.status().code(), ErrorCode::kDataLoss);
}

TEST_F(S3ClientTest, PutObjectWithSseKmsAcceptsNonMd5EtagAndSendsKeyId) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "", {{"ETag", "\"a1b2c3d4e5f60718293a4b5c6d7e8f90\""}});
  });
  S3Client s3 = PathStyle();
  PutOptions o;
  o.sse = "aws:kms";
  o.sse_kms_key_id = "arn:aws:kms:us-east-1:111122223333:key/abc";
  auto etag = s3.PutObject("b", "k", "payload", o);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, "a1b2c3d4e5f60718293a4b5c6d7e8f90");
  HttpRequest r = http_.requests()[0];
  EXPECT_EQ(HeaderOr(r, "x-amz-server-side-encryption"), "aws:kms");
  EXPECT_EQ(HeaderOr(r, "x-amz-server-side-encryption-aws-kms-key-id"), "arn:aws:kms:us-east-1:111122223333:key/abc");
  EXPECT_EQ(HeaderOr(r, "Content-MD5"), Base64Encode(Md5("payload")));
}

// PUT answers 412; HEAD describes an object holding `existing`.
FakeHttpTransport::Handler ExistingObject(std::string existing) {
  return [existing](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.method == "HEAD") {
      return MakeResponse(200, "",
                          {{"Content-Length", std::to_string(existing.size())}, {"ETag", Quoted(Md5Hex(existing))}});
    }
    return S3Error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
  };
}

TEST_F(S3ClientTest, CreateOnlyPutOnExistingKeyIsAlreadyExists) {
  http_.SetHandler(ExistingObject("other content"));
  S3Client s3 = PathStyle();
  auto etag = s3.PutObject("b", "k", "payload", {});
  ASSERT_FALSE(etag.ok());
  EXPECT_EQ(etag.status().code(), ErrorCode::kAlreadyExists);
  ASSERT_TRUE(etag.status().aws().has_value());
  EXPECT_EQ(etag.status().aws()->http_status, 412);
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);  // the PUT (not retried) and a HEAD to compare contents
  EXPECT_EQ(reqs[1].method, "HEAD");
}

TEST_F(S3ClientTest, RetriedCreateOnlyPutThatAlreadyLandedSucceeds) {
  http_.SetHandler(ExistingObject("payload"));
  http_.FailCall(1, MakeResponse(500, "<Error><Code>InternalError</Code></Error>"));
  S3Client s3 = PathStyle();
  auto etag = s3.PutObject("b", "k", "payload", {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, Md5Hex("payload"));
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 3u);  // PUT (500), PUT (412), HEAD
  EXPECT_EQ(reqs[1].method, "PUT");
  EXPECT_EQ(reqs[2].method, "HEAD");
}

TEST_F(S3ClientTest, NoSuchBucketIsNotFoundWithRequestId) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return S3Error(404, "NoSuchBucket", "The specified bucket does not exist");
  });
  S3Client s3 = PathStyle();
  auto etag = s3.PutObject("missing-bucket", "k", "payload", {});
  ASSERT_FALSE(etag.ok());
  EXPECT_EQ(etag.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(etag.status().aws()->error_code, "NoSuchBucket");
  EXPECT_EQ(etag.status().aws()->request_id, "REQ123");
  EXPECT_THAT(etag.status().ToString(), HasSubstr("missing-bucket"));
}

TEST_F(S3ClientTest, AccessDeniedAndKmsErrorsArePermissionDenied) {
  S3Client s3 = PathStyle();
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return S3Error(403, "AccessDenied"); });
  EXPECT_EQ(s3.PutObject("b", "k", "x", {}).status().code(), ErrorCode::kPermissionDenied);
  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return S3Error(400, "KMS.DisabledException", "key off"); });
  PutOptions o;
  o.sse = "aws:kms";
  EXPECT_EQ(s3.PutObject("b", "k", "x", o).status().code(), ErrorCode::kPermissionDenied);
}

// A scripted S3 for multipart uploads.
class MultipartServer {
 public:
  std::string upload_id = "upload~id/1";
  int fail_part = 0;  // this part number answers 403
  std::string complete_body_override;
  int complete_status = 200;
  bool head_matches = true;  // HEAD describes the uploaded parts (else other content)

  Result<HttpResponse> operator()(const HttpRequest& r) {
    std::lock_guard lock(mu_);
    Url url = *ParseUrl(r.url);
    if (r.method == "POST" && url.query == "uploads") {
      return MakeResponse(200, "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>" + upload_id +
                                   "</UploadId></InitiateMultipartUploadResult>");
    }
    if (r.method == "PUT" && StartsWith(url.query, "partNumber=")) {
      int part = std::stoi(url.query.substr(11));
      if (part == fail_part) return S3Error(403, "AccessDenied");
      parts_[part] = r.body;
      return MakeResponse(200, "", {{"ETag", Quoted(Md5Hex(r.body))}});
    }
    if (r.method == "HEAD") {
      size_t size = 0;
      for (auto& [n, body] : parts_) size += body.size();
      return MakeResponse(
          200, "", {{"Content-Length", std::to_string(size)}, {"ETag", Quoted(head_matches ? Etag() : "other-1")}});
    }
    if (r.method == "POST" && StartsWith(url.query, "uploadId=")) {
      if (complete_status == 404) return S3Error(404, "NoSuchUpload");
      if (complete_status != 200) return S3Error(complete_status, "PreconditionFailed");
      if (!complete_body_override.empty()) return MakeResponse(200, complete_body_override);
      std::string etag = Etag();
      return MakeResponse(200,
                          "<CompleteMultipartUploadResult><Location>http://x</Location><Bucket>b</Bucket>"
                          "<Key>k</Key><ETag>&quot;" +
                              etag + "&quot;</ETag></CompleteMultipartUploadResult>");
    }
    if (r.method == "DELETE" && StartsWith(url.query, "uploadId=")) return MakeResponse(204, "");
    return MakeResponse(400, "<Error><Code>InvalidRequest</Code></Error>");
  }

 private:
  std::string Etag() const {
    std::string joined;
    for (auto& [n, body] : parts_) {
      Md5Digest d = Md5(body);
      joined.append(reinterpret_cast<const char*>(d.data()), d.size());
    }
    return fmt::format("{}-{}", Md5Hex(joined), parts_.size());
  }

  std::mutex mu_;
  std::map<int, std::string> parts_;
};

struct Sent {
  std::string method;
  std::string query;
};

std::vector<Sent> SentCalls(const FakeHttpTransport& http) {
  std::vector<Sent> out;
  for (const HttpRequest& r : http.requests()) out.push_back({r.method, UrlOf(r).query});
  return out;
}

S3ClientOptions SmallParts() {
  S3ClientOptions o;
  o.path_style = true;
  o.multipart_threshold = 8;
  o.part_size = 4;
  return o;
}

TEST_F(S3ClientTest, MultipartUploadSendsThreePartsAndCompletesCreateOnly) {
  auto server = std::make_shared<MultipartServer>();
  http_.SetHandler([server](const HttpRequest& r) { return (*server)(r); });
  S3Client s3(aws_, SmallParts());
  PutOptions o;
  o.content_encoding = "gzip";
  auto etag = s3.PutObject("b", "dir/k.gz", "0123456789AB", o);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_THAT(*etag, testing::EndsWith("-3"));

  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(UrlOf(reqs[0]).path, "/b/dir/k.gz");
  EXPECT_EQ(UrlOf(reqs[0]).query, "uploads");
  EXPECT_EQ(HeaderOr(reqs[0], "Content-Encoding"), "gzip");
  EXPECT_EQ(Header(reqs[0], "If-None-Match"), nullptr);
  const std::string encoded_id = UriEncode(server->upload_id);
  const char* chunks[] = {"0123", "4567", "89AB"};
  for (int i = 0; i < 3; ++i) {
    const HttpRequest& part = reqs[1 + i];
    EXPECT_EQ(part.method, "PUT");
    EXPECT_EQ(UrlOf(part).query, fmt::format("partNumber={}&uploadId={}", i + 1, encoded_id));
    EXPECT_EQ(part.body, chunks[i]);
    EXPECT_EQ(HeaderOr(part, "Content-MD5"), Base64Encode(Md5(chunks[i])));
    EXPECT_EQ(Header(part, "If-None-Match"), nullptr);
  }
  const HttpRequest& complete = reqs[4];
  EXPECT_EQ(complete.method, "POST");
  EXPECT_EQ(UrlOf(complete).query, "uploadId=" + encoded_id);
  EXPECT_EQ(HeaderOr(complete, "If-None-Match"), "*");
  EXPECT_THAT(complete.body,
              HasSubstr("<Part><PartNumber>1</PartNumber><ETag>&quot;" + Md5Hex("0123") + "&quot;</ETag></Part>"));
  EXPECT_THAT(complete.body, HasSubstr("<PartNumber>3</PartNumber>"));
}

TEST_F(S3ClientTest, MultipartUploadAbortsAndNeverCompletesWhenAPartFails) {
  auto server = std::make_shared<MultipartServer>();
  server->fail_part = 2;
  http_.SetHandler([server](const HttpRequest& r) { return (*server)(r); });
  S3Client s3(aws_, SmallParts());
  auto etag = s3.PutObject("b", "k", "0123456789AB", {});
  ASSERT_FALSE(etag.ok());
  EXPECT_EQ(etag.status().code(), ErrorCode::kPermissionDenied);

  auto sent = SentCalls(http_);
  ASSERT_EQ(sent.size(), 4u);  // create, part 1, part 2 (403), abort
  EXPECT_EQ(sent[3].method, "DELETE");
  EXPECT_EQ(sent[3].query, "uploadId=" + UriEncode(server->upload_id));
  for (const Sent& s : sent) EXPECT_FALSE(s.method == "POST" && StartsWith(s.query, "uploadId=")) << "Complete sent";
}

TEST_F(S3ClientTest, CompleteReturning200WithErrorBodyFailsAndAborts) {
  auto server = std::make_shared<MultipartServer>();
  server->complete_body_override =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code><Message>We encountered an "
      "internal error. Please try again.</Message><RequestId>656c76696e6727732072657175657374</RequestId></Error>";
  http_.SetHandler([server](const HttpRequest& r) { return (*server)(r); });
  S3Client s3(aws_, SmallParts());
  auto etag = s3.PutObject("b", "k", "0123456789AB", {});
  ASSERT_FALSE(etag.ok());
  EXPECT_EQ(etag.status().code(), ErrorCode::kUnavailable);
  ASSERT_TRUE(etag.status().aws().has_value());
  EXPECT_EQ(etag.status().aws()->error_code, "InternalError");
  auto sent = SentCalls(http_);
  ASSERT_EQ(sent.size(), 6u);
  EXPECT_EQ(sent.back().method, "DELETE");
}

TEST_F(S3ClientTest, MultipartCompleteOnExistingKeyIsAlreadyExistsAndAborts) {
  auto server = std::make_shared<MultipartServer>();
  server->complete_status = 412;
  server->head_matches = false;
  http_.SetHandler([server](const HttpRequest& r) { return (*server)(r); });
  S3Client s3(aws_, SmallParts());
  auto etag = s3.PutObject("b", "k", "0123456789AB", {});
  EXPECT_EQ(etag.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(SentCalls(http_).back().method, "DELETE");
}

TEST_F(S3ClientTest, MultipartCompleteRetriedAfterLandingIsConfirmedByHead) {
  auto server = std::make_shared<MultipartServer>();
  server->complete_status = 404;  // NoSuchUpload: an earlier attempt completed it
  http_.SetHandler([server](const HttpRequest& r) { return (*server)(r); });
  S3Client s3(aws_, SmallParts());
  auto etag = s3.PutObject("b", "k", "0123456789AB", {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_THAT(*etag, testing::EndsWith("-3"));
  EXPECT_EQ(SentCalls(http_).back().method, "HEAD");
}

TEST_F(S3ClientTest, PutAtThresholdUsesSinglePut) {
  http_.SetHandler(EchoMd5);
  S3Client s3(aws_, SmallParts());
  ASSERT_TRUE(s3.PutObject("b", "k", "01234567", {}).ok());
  ASSERT_EQ(http_.calls(), 1);
  EXPECT_EQ(http_.requests()[0].method, "PUT");
}

TEST_F(S3ClientTest, ListObjectsV2FollowsContinuationTokensThroughObjectStore) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    Url url = *ParseUrl(r.url);
    if (url.query.find("continuation-token=") == std::string::npos) {
      return MakeResponse(200, R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>dlq-archive/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>dlq-archive/a &amp; b.json.gz</Key><LastModified>2025-09-10T12:30:00.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>1234</Size><StorageClass>STANDARD</StorageClass></Contents>
  <CommonPrefixes><Prefix>dlq-archive/orders-dlq/</Prefix></CommonPrefixes>
</ListBucketResult>)");
    }
    return MakeResponse(200, R"(<ListBucketResult><IsTruncated>false</IsTruncated>
  <Contents><Key>dlq-archive/z.json.gz</Key><Size>7</Size><ETag>"abc"</ETag></Contents></ListBucketResult>)");
  });
  S3Client s3 = PathStyle();
  S3ObjectStore store(s3, "b");
  EXPECT_EQ(store.Describe(), "s3://b");

  auto page1 = store.List("dlq-archive/", "/", "");
  ASSERT_TRUE(page1.ok()) << page1.status().ToString();
  ASSERT_EQ(page1->objects.size(), 1u);
  EXPECT_EQ(page1->objects[0].key, "dlq-archive/a & b.json.gz");
  EXPECT_EQ(page1->objects[0].size, 1234u);
  EXPECT_EQ(page1->objects[0].etag, "9b2cf535f27731c974343645a3985328");
  EXPECT_EQ(page1->objects[0].last_modified, *ParseIso8601("2025-09-10T12:30:00Z"));
  EXPECT_THAT(page1->common_prefixes, ElementsAre("dlq-archive/orders-dlq/"));
  EXPECT_EQ(page1->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

  auto page2 = store.List("dlq-archive/", "/", page1->next_token);
  ASSERT_TRUE(page2.ok()) << page2.status().ToString();
  ASSERT_EQ(page2->objects.size(), 1u);
  EXPECT_EQ(page2->objects[0].key, "dlq-archive/z.json.gz");
  EXPECT_EQ(page2->next_token, "");

  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(UrlOf(reqs[0]).path, "/b");
  EXPECT_EQ(UrlOf(reqs[0]).query, "delimiter=%2F&list-type=2&prefix=dlq-archive%2F");
  EXPECT_EQ(UrlOf(reqs[1]).query,
            "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&delimiter=%2F&list-type=2&"
            "prefix=dlq-archive%2F");
}

TEST_F(S3ClientTest, ListObjectsV2VirtualHostedUsesRootPath) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  });
  S3Client s3(aws_);
  auto page = s3.ListObjectsV2("b", {.prefix = "p", .max_keys = 10});
  ASSERT_TRUE(page.ok());
  Url url = UrlOf(http_.requests()[0]);
  EXPECT_EQ(url.host, "b.s3.us-east-1.amazonaws.com");
  EXPECT_EQ(url.path, "/");
  EXPECT_EQ(url.query, "list-type=2&max-keys=10&prefix=p");
}

TEST_F(S3ClientTest, GetObjectSendsRangeHeader) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(206, "2345"); });
  S3Client s3 = PathStyle();
  auto body = s3.GetObject("b", "k", std::make_pair<uint64_t, uint64_t>(2, 5));
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "2345");
  HttpRequest r = http_.requests()[0];
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(HeaderOr(r, "Range"), "bytes=2-5");
}

TEST_F(S3ClientTest, GetObjectDetectsBodyThatDoesNotMatchEtag) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "corrupted", {{"ETag", Quoted(Md5Hex("original"))}});
  });
  S3Client s3 = PathStyle();
  EXPECT_EQ(s3.GetObject("b", "k").status().code(), ErrorCode::kDataLoss);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "original", {{"ETag", Quoted(Md5Hex("original"))}});
  });
  auto ok = s3.GetObject("b", "k");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "original");
}

TEST_F(S3ClientTest, HeadObjectParsesMetadataHeaders) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "",
                        {{"Content-Length", "4096"},
                         {"ETag", "\"d41d8cd98f00b204e9800998ecf8427e\""},
                         {"Last-Modified", "Wed, 10 Sep 2025 12:30:00 GMT"},
                         {"Content-Encoding", "gzip"},
                         {"Content-Type", "application/x-ndjson"},
                         {"x-amz-meta-queue", "orders-dlq"}});
  });
  S3Client s3 = PathStyle();
  S3ObjectStore store(s3, "b");
  auto meta = s3.HeadObject("b", "k");
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(meta->size, 4096u);
  EXPECT_EQ(meta->etag, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(meta->last_modified, *ParseIso8601("2025-09-10T12:30:00Z"));
  EXPECT_EQ(meta->content_encoding, "gzip");
  EXPECT_EQ(meta->metadata.at("queue"), "orders-dlq");
  EXPECT_EQ(http_.requests()[0].method, "HEAD");

  auto info = store.Head("k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->key, "k");
  EXPECT_EQ(info->size, 4096u);
}

TEST_F(S3ClientTest, HeadObjectOnMissingKeyIsNotFound) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(404, ""); });
  S3Client s3 = PathStyle();
  EXPECT_EQ(s3.HeadObject("b", "missing").status().code(), ErrorCode::kNotFound);
}

TEST_F(S3ClientTest, DeleteObjectSendsDelete) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(204, ""); });
  S3Client s3 = PathStyle();
  S3ObjectStore store(s3, "b");
  ASSERT_TRUE(store.Delete("a/b").ok());
  EXPECT_EQ(http_.requests()[0].method, "DELETE");
  EXPECT_EQ(UrlOf(http_.requests()[0]).path, "/b/a/b");
}

TEST_F(S3ClientTest, CreateBucketInUsEast1SendsNoLocationConstraint) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, ""); });
  S3Client s3 = PathStyle();
  ASSERT_TRUE(s3.CreateBucket("new-bucket").ok());
  HttpRequest r = http_.requests()[0];
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(UrlOf(r).path, "/new-bucket");
  EXPECT_EQ(r.body, "");
}

TEST_F(S3ClientTest, CreateBucketAlreadyOwnedSucceeds) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return S3Error(409, "BucketAlreadyOwnedByYou"); });
  S3Client s3 = PathStyle();
  EXPECT_TRUE(s3.CreateBucket("mine").ok());
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return S3Error(409, "BucketAlreadyExists"); });
  EXPECT_FALSE(s3.CreateBucket("theirs").ok());
}

class S3ClientEuTest : public S3ClientTest {
 protected:
  S3ClientEuTest() : S3ClientTest("eu-west-1") {}
};

TEST_F(S3ClientEuTest, CreateBucketOutsideUsEast1SendsLocationConstraint) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, ""); });
  S3Client s3(aws_);
  ASSERT_TRUE(s3.CreateBucket("new-bucket").ok());
  HttpRequest r = http_.requests()[0];
  EXPECT_EQ(UrlOf(r).host, "new-bucket.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(UrlOf(r).path, "/");
  EXPECT_THAT(r.body, HasSubstr("<LocationConstraint>eu-west-1</LocationConstraint>"));
}

TEST_F(S3ClientTest, HeadBucketMapsStatusCodes) {
  S3Client s3 = PathStyle();
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, ""); });
  EXPECT_TRUE(s3.HeadBucket("b").ok());
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(404, ""); });
  EXPECT_EQ(s3.HeadBucket("b").code(), ErrorCode::kNotFound);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(403, ""); });
  EXPECT_EQ(s3.HeadBucket("b").code(), ErrorCode::kPermissionDenied);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(301, "", {{"x-amz-bucket-region", "eu-central-1"}});
  });
  Status wrong_region = s3.HeadBucket("b");
  EXPECT_EQ(wrong_region.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(wrong_region.ToString(), HasSubstr("eu-central-1"));
}

TEST(S3OptionsTest, ValidateRejectsPartsBelowS3Minimum) {
  S3ClientOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.part_size = 1 << 20;
  EXPECT_EQ(o.Validate().code(), ErrorCode::kInvalidArgument);
  o.part_size = 8 << 20;
  o.multipart_threshold = 1 << 20;
  EXPECT_EQ(o.Validate().code(), ErrorCode::kInvalidArgument);
}

TEST(S3XmlCodecTest, ListDecodesUrlEncodedKeysOnlyWhenDeclared) {
  auto encoded = ParseListObjectsV2(
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a%2Fb+c%C3%A9</Key><Size>1</Size></Contents>"
      "<CommonPrefixes><Prefix>p%20q/</Prefix></CommonPrefixes></ListBucketResult>");
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_EQ(encoded->objects[0].key, "a/b c\xc3\xa9");
  EXPECT_EQ(encoded->common_prefixes[0], "p q/");

  auto raw = ParseListObjectsV2(
      "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a%2Fb+c</Key><Size>1</Size></Contents>"
      "</ListBucketResult>");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->objects[0].key, "a%2Fb+c");
}

TEST(S3XmlCodecTest, ParsersRejectMalformedInput) {
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><Contents>").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>")
                .status()
                .code(),
            ErrorCode::kInternal);
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>").status().code(),
            ErrorCode::kInternal);
  EXPECT_EQ(ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(ParseInitiateMultipartUpload("").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(ParseCompleteMultipartUpload("<Other/>").status().code(), ErrorCode::kInternal);
  EXPECT_FALSE(ParseS3Error("not xml").has_value());
  EXPECT_FALSE(ParseS3Error("<ListBucketResult/>").has_value());
}

TEST(S3XmlCodecTest, ParsesErrorDocuments) {
  auto e = ParseS3Error(
      "<Error><Code>PermanentRedirect</Code><Message>m</Message><Region>eu-west-1</Region>"
      "<RequestId>R1</RequestId></Error>");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "PermanentRedirect");
  EXPECT_EQ(e->region, "eu-west-1");
  EXPECT_EQ(e->request_id, "R1");
  auto nonretryable = ParseCompleteMultipartUpload("<Error><Code>InvalidPart</Code></Error>");
  EXPECT_EQ(nonretryable.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(nonretryable.status().aws()->error_code, "InvalidPart");
}

TEST(S3XmlCodecTest, BuildsEscapedCompleteBody) {
  std::string xml = BuildCompleteMultipartUploadXml({{1, "a&b"}, {2, "c"}});
  EXPECT_THAT(xml, HasSubstr("<Part><PartNumber>1</PartNumber><ETag>&quot;a&amp;b&quot;</ETag></Part>"));
  EXPECT_THAT(xml, HasSubstr("<Part><PartNumber>2</PartNumber>"));
  EXPECT_EQ(BuildCreateBucketConfigurationXml("us-east-1"), "");
  EXPECT_EQ(UnquoteEtag("W/\"abc\""), "abc");
}

}  // namespace
}  // namespace dlq
