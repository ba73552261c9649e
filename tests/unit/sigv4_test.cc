#include "aws/sigv4.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aws/sigv4_config.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;

// The number of case folders in the published suite (see its README.md).
constexpr size_t kSuiteCaseCount = 38;

fs::path SuiteDir() {
  return fs::path(DLQ_TESTDATA_DIR) / "aws-sigv4-test-suite" / "v4";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every folder under v4/ (at any depth) that holds a request.txt, as a path relative to v4/.
std::vector<std::string> DiscoverCases() {
  std::vector<std::string> cases;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(SuiteDir(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory() && fs::exists(it->path() / "request.txt")) {
      cases.push_back(fs::relative(it->path(), SuiteDir()).generic_string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

// A raw HTTP/1.1 request as the suite writes it: request line, headers
// (continuation lines start with whitespace and are kept with their line
// break), a blank line, the body.
struct RawRequest {
  std::string method;
  std::string target;  // path and query, exactly as written
  HttpHeaders headers;
  std::string body;
};

RawRequest ParseRawRequest(std::string_view text) {
  RawRequest raw;
  size_t pos = 0;
  bool first = true;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    if (first) {
      size_t sp = line.find(' ');
      size_t version = line.rfind(" HTTP/");
      raw.method = std::string(line.substr(0, sp));
      raw.target = std::string(line.substr(sp + 1, version - sp - 1));
      first = false;
    } else if (line.empty()) {
      if (pos <= text.size()) raw.body = std::string(text.substr(pos));
      break;
    } else if ((line.front() == ' ' || line.front() == '\t') && !raw.headers.empty()) {
      raw.headers.back().second += '\n';
      raw.headers.back().second += line;
    } else {
      size_t colon = line.find(':');
      raw.headers.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
    }
  }
  return raw;
}

struct SuiteContext {
  Credentials creds;
  SigningOptions options;
  SigV4Config config;
};

SuiteContext LoadContext(const fs::path& path) {
  SuiteContext ctx;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.load(path.string()).get(doc), simdjson::SUCCESS) << path;
  std::string_view text;
  EXPECT_EQ(doc["credentials"]["access_key_id"].get(text), simdjson::SUCCESS);
  ctx.creds.access_key_id = std::string(text);
  EXPECT_EQ(doc["credentials"]["secret_access_key"].get(text), simdjson::SUCCESS);
  ctx.creds.secret_access_key = std::string(text);
  if (doc["credentials"]["token"].get(text) == simdjson::SUCCESS) ctx.creds.session_token = std::string(text);
  EXPECT_EQ(doc["region"].get(text), simdjson::SUCCESS);
  ctx.options.region = std::string(text);
  EXPECT_EQ(doc["service"].get(text), simdjson::SUCCESS);
  ctx.options.service = std::string(text);
  EXPECT_EQ(doc["timestamp"].get(text), simdjson::SUCCESS);
  auto time = ParseIso8601(text);
  EXPECT_TRUE(time.has_value()) << text;
  ctx.options.time = time.value_or(SystemTime());
  int64_t expires = 0;
  EXPECT_EQ(doc["expiration_in_seconds"].get(expires), simdjson::SUCCESS);
  ctx.options.expires = std::chrono::seconds(expires);
  bool flag = false;
  EXPECT_EQ(doc["normalize"].get(flag), simdjson::SUCCESS);
  ctx.config.normalize_path = flag;
  ctx.config.double_encode_path = true;  // the suite always double-encodes
  EXPECT_EQ(doc["sign_body"].get(flag), simdjson::SUCCESS);
  ctx.config.content_sha256_header = flag;
  if (doc["omit_session_token"].get(flag) == simdjson::SUCCESS) ctx.config.omit_session_token = flag;
  return ctx;
}

std::string HostOf(const RawRequest& raw) {
  for (const auto& [name, value] : raw.headers) {
    if (IEquals(name, "host")) return value;
  }
  return "";
}

HttpRequest ToHttpRequest(const RawRequest& raw, std::string_view host) {
  HttpRequest request;
  request.method = raw.method;
  request.url = "https://" + std::string(host) + raw.target;
  request.headers = raw.headers;
  request.body = raw.body;
  return request;
}

// The public SigningOptions (s3 = false) say exactly what the suite's flags say.
bool PublicApiApplies(const SigV4Config& config, bool header_signing) {
  return config.normalize_path && !config.omit_session_token && (!header_signing || !config.content_sha256_header);
}

std::string WithoutParam(std::string url, std::string_view name) {
  std::string needle = "&" + std::string(name) + "=";
  size_t start = url.find(needle);
  if (start == std::string::npos) return url;
  size_t end = url.find('&', start + 1);
  url.erase(start, end == std::string::npos ? std::string::npos : end - start);
  return url;
}

class SigV4SuiteTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = SuiteDir() / GetParam();
    raw_ = ParseRawRequest(ReadFile(dir_ / "request.txt"));
    ctx_ = LoadContext(dir_ / "context.json");
    host_ = HostOf(raw_);
    ASSERT_FALSE(host_.empty()) << "request.txt has no Host header";
  }
  std::string Expected(const char* file) const { return ReadFile(dir_ / file); }

  fs::path dir_;
  RawRequest raw_;
  SuiteContext ctx_;
  std::string host_;
};

TEST_P(SigV4SuiteTest, HeaderSigningMatchesEveryStage) {
  RawRequest expected_signed = ParseRawRequest(Expected("header-signed-request.txt"));

  // Stages alone, on the request as it is sent minus its Authorization header.
  HttpRequest staged = ToHttpRequest(expected_signed, host_);
  std::erase_if(staged.headers, [](const auto& h) { return h.first == "Authorization"; });
  SigningStages stages = ComputeHeaderSignature(staged, ctx_.creds, ctx_.options, ctx_.config);
  EXPECT_EQ(stages.canonical_request, Expected("header-canonical-request.txt"));
  EXPECT_EQ(stages.string_to_sign, Expected("header-string-to-sign.txt"));
  EXPECT_EQ(stages.signature, Expected("header-signature.txt"));

  // The whole signer: the request line, body and every header as sent.
  HttpRequest request = ToHttpRequest(raw_, host_);
  SignRequest(request, ctx_.creds, ctx_.options, ctx_.config);
  EXPECT_EQ(request.method, expected_signed.method);
  EXPECT_EQ(request.url, "https://" + host_ + expected_signed.target);
  EXPECT_EQ(request.headers, expected_signed.headers);
  EXPECT_EQ(request.body, expected_signed.body);

  if (PublicApiApplies(ctx_.config, /*header_signing=*/true)) {
    EXPECT_EQ(ComputeHeaderSignature(staged, ctx_.creds, ctx_.options).signature, stages.signature);
    HttpRequest via_public = ToHttpRequest(raw_, host_);
    SignRequest(via_public, ctx_.creds, ctx_.options);
    EXPECT_EQ(via_public.headers, expected_signed.headers);
  }
}

TEST_P(SigV4SuiteTest, QuerySigningMatchesEveryStage) {
  RawRequest expected_signed = ParseRawRequest(Expected("query-signed-request.txt"));
  std::string expected_url = "https://" + host_ + expected_signed.target;

  // Stages alone: the presigned URL without its signature.
  HttpRequest staged = ToHttpRequest(expected_signed, host_);
  staged.url = WithoutParam(expected_url, "X-Amz-Signature");
  ASSERT_NE(staged.url, expected_url) << "query-signed-request.txt has no X-Amz-Signature";
  SigningStages stages = ComputeQuerySignature(staged, ctx_.creds, ctx_.options, ctx_.config);
  EXPECT_EQ(stages.canonical_request, Expected("query-canonical-request.txt"));
  EXPECT_EQ(stages.string_to_sign, Expected("query-string-to-sign.txt"));
  EXPECT_EQ(stages.signature, Expected("query-signature.txt"));

  // The whole presigner, from the unsigned request.
  HttpRequest request = ToHttpRequest(raw_, host_);
  EXPECT_EQ(PresignUrl(request, ctx_.creds, ctx_.options, ctx_.config), expected_url);
  EXPECT_EQ(request.headers, expected_signed.headers);  // presigning changes nothing but the URL

  if (PublicApiApplies(ctx_.config, /*header_signing=*/false)) {
    EXPECT_EQ(ComputeQuerySignature(staged, ctx_.creds, ctx_.options).signature, stages.signature);
    EXPECT_EQ(PresignUrl(request, ctx_.creds, ctx_.options), expected_url);
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Aws, SigV4SuiteTest, ::testing::ValuesIn(DiscoverCases()), CaseName);

TEST(SigV4Suite, DiscoversEveryCaseFolder) {
  std::vector<std::string> cases = DiscoverCases();
  EXPECT_EQ(cases.size(), kSuiteCaseCount);
  EXPECT_NE(std::find(cases.begin(), cases.end(), "get-vanilla"), cases.end());
  EXPECT_NE(std::find(cases.begin(), cases.end(), "post-sts-header-after"), cases.end());
}

TEST(SigV4Suite, ParsesMultiLineAndDuplicateHeaders) {
  RawRequest raw = ParseRawRequest("GET /a b/?x=1 HTTP/1.1\nHost:h\nMy:v1\n  v2\nMy:v3\n\nbody\n");
  EXPECT_EQ(raw.method, "GET");
  EXPECT_EQ(raw.target, "/a b/?x=1");
  ASSERT_EQ(raw.headers.size(), 3u);
  EXPECT_EQ(raw.headers[1].second, "v1\n  v2");
  EXPECT_EQ(raw.headers[2].second, "v3");
  EXPECT_EQ(raw.body, "body\n");
}

// ---- Focused behaviour of the public contract ----

Credentials TestCreds(std::string token = "") {
  Credentials creds;
  creds.access_key_id = "AKIDEXAMPLE";
  creds.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  creds.session_token = std::move(token);
  return creds;
}

SigningOptions Options(std::string service, bool s3 = false) {
  SigningOptions options;
  options.region = "eu-west-1";
  options.service = std::move(service);
  options.time = FromUnixMillis(1757507400000);  // 2025-09-10T12:30:00Z
  options.s3 = s3;
  return options;
}

std::string CanonicalUriLine(const std::string& canonical_request) {
  size_t first = canonical_request.find('\n');
  return canonical_request.substr(first + 1, canonical_request.find('\n', first + 1) - first - 1);
}

TEST(SigV4, DerivesTheDocumentedSigningKey) {
  // AWS General Reference, "Examples of how to derive a signing key for Signature Version 4".
  EXPECT_EQ(HexEncode(DeriveSigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

// Signing keys are cached per thread: a key derived for one secret, day,
// region or service must never sign for another, also after eviction.
TEST(SigV4, CachedSigningKeysMatchAFreshDerivationForEveryScope) {
  struct Scope {
    std::string secret, region, service;
    int64_t unix_ms;
  };
  const std::vector<Scope> scopes = {
      {"secret-one", "eu-west-1", "sqs", 1757507400000}, {"secret-one", "eu-west-1", "s3", 1757507400000},
      {"secret-one", "us-east-1", "sqs", 1757507400000}, {"secret-two", "eu-west-1", "sqs", 1757507400000},
      {"secret-one", "eu-west-1", "sqs", 1757593800000}, {"secret-two", "us-east-1", "monitoring", 1757593800000},
  };
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < scopes.size(); ++i) {
      const Scope& scope = scopes[(i * (round + 1)) % scopes.size()];
      Credentials creds;
      creds.access_key_id = "AKIDEXAMPLE";
      creds.secret_access_key = scope.secret;
      SigningOptions options;
      options.region = scope.region;
      options.service = scope.service;
      options.time = FromUnixMillis(scope.unix_ms);
      HttpRequest request;
      request.method = "POST";
      request.url = "https://sqs.eu-west-1.amazonaws.com/";
      request.headers = {{"Host", "sqs.eu-west-1.amazonaws.com"}, {"X-Amz-Date", FormatAmzDate(options.time)}};
      request.body = "{}";
      SigningStages stages = ComputeHeaderSignature(request, creds, options);
      std::string key = DeriveSigningKey(scope.secret, FormatAmzDay(options.time), scope.region, scope.service);
      EXPECT_EQ(stages.signature, HexEncode(HmacSha256(key, stages.string_to_sign)))
          << scope.secret << " " << scope.region << " " << scope.service << " round " << round;
    }
  }
}

TEST(SigV4, S3PathIsNeitherNormalizedNorDoubleEncoded) {
  HttpRequest request;
  request.method = "PUT";
  request.url = "https://bucket.s3.eu-west-1.amazonaws.com/dlq-archive//orders%20dlq/./x.json.gz";
  request.body = "archive bytes";

  SigningStages s3 = ComputeHeaderSignature(request, TestCreds(), Options("s3", /*s3=*/true));
  EXPECT_EQ(CanonicalUriLine(s3.canonical_request), "/dlq-archive//orders%20dlq/./x.json.gz");
  SigningStages other = ComputeHeaderSignature(request, TestCreds(), Options("sqs"));
  EXPECT_EQ(CanonicalUriLine(other.canonical_request), "/dlq-archive/orders%2520dlq/x.json.gz");
}

TEST(SigV4, S3SignsTheBodyHashInXAmzContentSha256) {
  HttpRequest request;
  request.method = "PUT";
  request.url = "https://bucket.s3.eu-west-1.amazonaws.com/k.json.gz";
  request.body = std::string(1000, 'x');
  SignRequest(request, TestCreds(), Options("s3", /*s3=*/true));

  const std::string* content_sha = FindHeader(request.headers, "x-amz-content-sha256");
  ASSERT_NE(content_sha, nullptr);
  EXPECT_EQ(*content_sha, Sha256Hex(request.body));
  const std::string* authorization = FindHeader(request.headers, "Authorization");
  ASSERT_NE(authorization, nullptr);
  EXPECT_NE(authorization->find("SignedHeaders=host;x-amz-content-sha256;x-amz-date,"), std::string::npos)
      << *authorization;
  // Non-S3 services get no such header.
  HttpRequest sqs;
  sqs.method = "POST";
  sqs.url = "https://sqs.eu-west-1.amazonaws.com/";
  SignRequest(sqs, TestCreds(), Options("sqs"));
  EXPECT_EQ(FindHeader(sqs.headers, "x-amz-content-sha256"), nullptr);
}

TEST(SigV4, UnsignedPayloadIsSignedLiterallyForS3Only) {
  HttpRequest request;
  request.method = "PUT";
  request.url = "https://bucket.s3.eu-west-1.amazonaws.com/k";
  request.body = "payload";
  SigningOptions options = Options("s3", /*s3=*/true);
  options.unsigned_payload = true;
  SignRequest(request, TestCreds(), options);
  ASSERT_NE(FindHeader(request.headers, "x-amz-content-sha256"), nullptr);
  EXPECT_EQ(*FindHeader(request.headers, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  SigningStages stages = ComputeHeaderSignature(request, TestCreds(), options);
  EXPECT_TRUE(stages.canonical_request.ends_with("\nUNSIGNED-PAYLOAD")) << stages.canonical_request;
  EXPECT_NE(FindHeader(request.headers, "Authorization")->find("Signature=" + stages.signature), std::string::npos);

  SigningOptions not_s3 = Options("sqs");
  not_s3.unsigned_payload = true;
  EXPECT_TRUE(ComputeHeaderSignature(request, TestCreds(), not_s3).canonical_request.ends_with(Sha256Hex("payload")));
}

TEST(SigV4, ResigningReplacesEarlierSignatureHeaders) {
  HttpRequest request;
  request.method = "POST";
  request.url = "https://sqs.eu-west-1.amazonaws.com/";
  request.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.ReceiveMessage"}};
  request.body = R"({"QueueUrl":"q"})";
  SignRequest(request, TestCreds("old-session-token"), Options("sqs"));

  SigningOptions later = Options("sqs");
  later.time += std::chrono::seconds(90);
  SignRequest(request, TestCreds(), later);  // retried with long-term keys

  auto count = [&](std::string_view name) {
    return std::count_if(request.headers.begin(), request.headers.end(),
                         [&](const auto& h) { return IEquals(h.first, name); });
  };
  EXPECT_EQ(count("Authorization"), 1);
  EXPECT_EQ(count("X-Amz-Date"), 1);
  EXPECT_EQ(count("Host"), 1);
  EXPECT_EQ(count("X-Amz-Security-Token"), 0);
  EXPECT_EQ(*FindHeader(request.headers, "X-Amz-Date"), "20250910T123130Z");

  HttpRequest unsigned_copy = request;
  std::erase_if(unsigned_copy.headers, [](const auto& h) { return h.first == "Authorization"; });
  SigningStages stages = ComputeHeaderSignature(unsigned_copy, TestCreds(), later);
  EXPECT_EQ(*FindHeader(request.headers, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250910/eu-west-1/sqs/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" +
                stages.signature);
}

TEST(SigV4, SessionTokenIsSentAndSigned) {
  HttpRequest request;
  request.url = "https://monitoring.eu-west-1.amazonaws.com/?Action=GetMetricData";
  SignRequest(request, TestCreds("FQoGZXIvYXdzEXAMPLE/token+="), Options("monitoring"));
  ASSERT_NE(FindHeader(request.headers, "X-Amz-Security-Token"), nullptr);
  EXPECT_EQ(*FindHeader(request.headers, "X-Amz-Security-Token"), "FQoGZXIvYXdzEXAMPLE/token+=");
  EXPECT_NE(FindHeader(request.headers, "Authorization")->find("SignedHeaders=host;x-amz-date;x-amz-security-token,"),
            std::string::npos);
}

TEST(SigV4, AddsHostWithNonDefaultPortFromTheUrl) {
  HttpRequest request;
  request.method = "POST";
  request.url = "http://localhost:4566/000000000000/orders-dlq";
  SignRequest(request, TestCreds(), Options("sqs"));
  ASSERT_NE(FindHeader(request.headers, "Host"), nullptr);
  EXPECT_EQ(*FindHeader(request.headers, "Host"), "localhost:4566");
}

TEST(SigV4, QueryParamsAreDecodedThenEncodedAndSorted) {
  HttpRequest request;
  request.url = "https://example.amazonaws.com/?b=2&a=%7e x&a=1&empty&c=a+b";
  SigningStages stages = ComputeHeaderSignature(request, TestCreds(), Options("service"));
  std::vector<std::string> lines;
  std::istringstream in(stages.canonical_request);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[2], "a=1&a=~%20x&b=2&c=a%2Bb&empty=");
}

TEST(SigV4, PresignedS3UrlSignsUnsignedPayloadAndCanBePresignedAgain) {
  HttpRequest request;
  request.url = "https://bucket.s3.eu-west-1.amazonaws.com/dlq-archive/k.json.gz?versionId=3";
  SigningOptions options = Options("s3", /*s3=*/true);
  options.expires = std::chrono::seconds(900);
  std::string url = PresignUrl(request, TestCreds("tok/en"), options);
  EXPECT_TRUE(
      url.starts_with("https://bucket.s3.eu-west-1.amazonaws.com/dlq-archive/k.json.gz?versionId=3&"
                      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20250910%2F"
                      "eu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20250910T123000Z&X-Amz-SignedHeaders=host&"
                      "X-Amz-Expires=900&X-Amz-Security-Token=tok%2Fen&X-Amz-Signature="))
      << url;

  HttpRequest presigned = request;
  presigned.url = url;
  EXPECT_TRUE(
      ComputeQuerySignature(presigned, TestCreds("tok/en"), options).canonical_request.ends_with("\nUNSIGNED-PAYLOAD"));
  EXPECT_EQ(PresignUrl(presigned, TestCreds("tok/en"), options), url);
}

}  // namespace
}  // namespace dlq
