#include "aws/aws_client.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <pugixml.hpp>
#include <string_view>
#include <vector>

#include "aws/sigv4.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr size_t kMaxMessageBytes = 512;
constexpr size_t kMaxCodeBytes = 128;
constexpr size_t kMaxSnippetBytes = 160;

template <size_t N>
bool OneOf(std::string_view code, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), code) != std::end(set);
}

constexpr std::string_view kThrottlingCodes[] = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "SlowDown",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "TransactionInProgressException",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
    "KMS.ThrottlingException",
    "KMSThrottlingException",
    "RequestLimitExceededException",
};
// Server-side trouble that a later attempt may not see.
constexpr std::string_view kTransientCodes[] = {
    "InternalError",  "InternalFailure",         "InternalServerError",   "ServiceUnavailable",
    "RequestTimeout", "RequestTimeoutException", "IDPCommunicationError", "InternalServerException",
};
constexpr std::string_view kPermissionCodes[] = {
    "AccessDenied",          "AccessDeniedException", "AuthorizationError", "Forbidden",     "AllAccessDisabled",
    "UnauthorizedOperation", "AccountProblem",        "OptInRequired",      "NotAuthorized", "InvalidPayer",
};
constexpr std::string_view kUnauthenticatedCodes[] = {
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "IncompleteSignature",
    "InvalidAccessKeyId",
    "UnrecognizedClientException",
    "MissingAuthenticationToken",
    "MissingAuthenticationTokenException",
    "InvalidSecurity",
    "ExpiredToken",
    "ExpiredTokenException",
    "TokenRefreshRequired",
    "RequestExpired",
    "RequestTimeTooSkewed",
    "RequestInTheFuture",
    "InvalidToken",
    "AuthFailure",
    "InvalidSignatureException",
    "MissingSecurityHeader",
    "InvalidIdentityToken",
    "IDPRejectedClaim",
};
constexpr std::string_view kNotFoundCodes[] = {
    "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue",
    "NoSuchBucket",      "NoSuchKey",
    "NotFound",          "ResourceNotFoundException",
    "NoSuchUpload",      "NoSuchEntity",
    "NoSuchVersion",     "NoSuchLifecycleConfiguration",
};
constexpr std::string_view kAlreadyExistsCodes[] = {
    "PreconditionFailed",
    "ConditionalRequestConflict",
    "QueueAlreadyExists",
    "QueueNameExists",
};
constexpr std::string_view kInvalidArgumentCodes[] = {
    "InvalidParameterValue",
    "InvalidParameterValueException",
    "InvalidParameterCombination",
    "InvalidParameterException",
    "ValidationError",
    "ValidationException",
    "MissingParameter",
    "MissingRequiredParameterException",
    "InvalidArgument",
    "InvalidAttributeName",
    "InvalidAttributeValue",
    "InvalidMessageContents",
    "MalformedXML",
    "MalformedPolicy",
    "InvalidRequest",
    "InvalidBatchEntryId",
    "AWS.SimpleQueueService.InvalidBatchEntryId",
    "BatchEntryIdsNotDistinct",
    "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
    "EmptyBatchRequest",
    "AWS.SimpleQueueService.EmptyBatchRequest",
    "TooManyEntriesInBatchRequest",
    "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
    "BatchRequestTooLong",
    "AWS.SimpleQueueService.BatchRequestTooLong",
    "InvalidIdFormat",
    "ReceiptHandleIsInvalid",
    "MessageTooLong",
    "InvalidQueryParameter",
    "MalformedQueryString",
    "InvalidAction",
    "InvalidDigest",
    "EntityTooLarge",
    "InvalidBucketName",
    "KeyTooLongError",
    "SerializationException",
    "InvalidAddress",
    "AuthorizationHeaderMalformed",
};
constexpr std::string_view kFailedPreconditionCodes[] = {
    "PermanentRedirect",
    "TemporaryRedirect",
    "NotImplemented",
    "InvalidObjectState",
    "OverLimit",
    "QueueDeletedRecently",
    "AWS.SimpleQueueService.QueueDeletedRecently",
    "BucketNotEmpty",
};

ErrorCode ClassifyAwsError(std::string_view code, int http_status) {
  if (OneOf(code, kThrottlingCodes) || code.find("Throttl") != std::string_view::npos) return ErrorCode::kThrottled;
  if (OneOf(code, kTransientCodes)) return ErrorCode::kUnavailable;
  if (OneOf(code, kPermissionCodes) || StartsWith(code, "KMS")) return ErrorCode::kPermissionDenied;
  if (OneOf(code, kUnauthenticatedCodes)) return ErrorCode::kUnauthenticated;
  if (OneOf(code, kNotFoundCodes)) return ErrorCode::kNotFound;
  if (OneOf(code, kAlreadyExistsCodes)) return ErrorCode::kAlreadyExists;
  if (OneOf(code, kInvalidArgumentCodes)) return ErrorCode::kInvalidArgument;
  if (OneOf(code, kFailedPreconditionCodes)) return ErrorCode::kFailedPrecondition;
  if (code == "BadDigest") return ErrorCode::kDataLoss;  // Content-MD5 did not match what arrived
  if (http_status >= 500 && http_status <= 599) return ErrorCode::kUnavailable;
  switch (http_status) {
    case 400:
    case 405:
    case 411:
    case 413:
    case 414:
    case 415:
    case 416: return ErrorCode::kInvalidArgument;
    case 401: return ErrorCode::kUnauthenticated;
    case 403: return ErrorCode::kPermissionDenied;
    case 404: return ErrorCode::kNotFound;
    case 408: return ErrorCode::kUnavailable;
    case 412: return ErrorCode::kAlreadyExists;
    case 429: return ErrorCode::kThrottled;
    default: break;
  }
  if (http_status >= 300 && http_status <= 499) return ErrorCode::kFailedPrecondition;
  return ErrorCode::kInternal;
}

// A code for a response whose body names none.
std::string_view CodeForStatus(int status) {
  switch (status) {
    case 301: return "PermanentRedirect";
    case 307: return "TemporaryRedirect";
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 408: return "RequestTimeout";
    case 409: return "Conflict";
    case 412: return "PreconditionFailed";
    case 413: return "EntityTooLarge";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 501: return "NotImplemented";
    case 502: return "BadGateway";
    case 503: return "ServiceUnavailable";
    case 504: return "GatewayTimeout";
    default: return "";
  }
}

// Keeps printable text only, collapses whitespace, and cuts at `limit` bytes
// on a UTF-8 character boundary.
std::string Clean(std::string_view text, size_t limit) {
  std::string out;
  bool space = false;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      space = !out.empty();
      continue;
    }
    if (c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (out.size() > limit) {
    size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

// "com.amazonaws.sqs#QueueDoesNotExist" -> "QueueDoesNotExist";
// "ValidationException:http://internal.amazon.com/..." -> "ValidationException".
std::string_view StripTypeDecorations(std::string_view type) {
  if (size_t hash = type.rfind('#'); hash != std::string_view::npos) type = type.substr(hash + 1);
  if (size_t colon = type.find(':'); colon != std::string_view::npos) type = type.substr(0, colon);
  return Trim(type);
}

struct ParsedError {
  std::string code;
  std::string message;
  std::string request_id;
  std::string endpoint;     // S3 PermanentRedirect
  std::string server_time;  // S3 RequestTimeTooSkewed
  bool recognized_body = false;
};

void ParseJsonError(std::string_view body, ParsedError& out) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return;
  out.recognized_body = true;
  const rapidjson::Document& cdoc = doc;  // const iterators: no C++20 reversed-operator ambiguity
  auto str = [&](const char* name) -> std::string_view {
    auto it = cdoc.FindMember(name);
    if (it == cdoc.MemberEnd() || !it->value.IsString()) return {};
    return {it->value.GetString(), it->value.GetStringLength()};
  };
  for (const char* name : {"__type", "code", "Code"}) {
    if (auto v = StripTypeDecorations(str(name)); !v.empty()) {
      out.code = std::string(v);
      break;
    }
  }
  for (const char* name : {"message", "Message", "errorMessage"}) {
    if (auto v = str(name); !v.empty()) {
      out.message = std::string(v);
      break;
    }
  }
}

void ParseXmlError(std::string_view body, ParsedError& out) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size(), pugi::parse_default)) return;
  pugi::xml_node root = doc.document_element();
  pugi::xml_node error;
  std::string_view root_name = root.name();
  if (root_name == "Error") {
    error = root;
  } else if (root_name == "ErrorResponse") {
    // Query protocols: <ErrorResponse><Error>; some servers (moto with auth
    // on) wrap it as <ErrorResponse><Errors><Error>.
    error = root.child("Error");
    if (!error) error = root.child("Errors").child("Error");
  } else if (root_name == "Response") {
    error = root.child("Errors").child("Error");
  }
  if (!error) return;
  out.recognized_body = true;
  out.code = std::string(Trim(error.child_value("Code")));
  out.message = error.child_value("Message");
  out.endpoint = error.child_value("Endpoint");
  out.server_time = error.child_value("ServerTime");
  for (pugi::xml_node n : {error, root}) {
    for (const char* name : {"RequestId", "RequestID"}) {
      if (std::string_view v = n.child_value(name); !v.empty() && out.request_id.empty()) out.request_id = v;
    }
  }
}

ParsedError ParseErrorResponse(const HttpResponse& response) {
  ParsedError parsed;
  std::string_view body = Trim(response.body);
  if (!body.empty() && body.front() == '{') {
    ParseJsonError(body, parsed);
  } else if (!body.empty() && body.front() == '<') {
    ParseXmlError(body, parsed);
  }
  if (parsed.code.empty()) {
    // AWS query compatible JSON services: "AWS.SimpleQueueService.NonExistentQueue;Sender".
    if (const std::string* h = response.Header("x-amzn-query-error")) {
      parsed.code = std::string(Trim(std::string_view(*h).substr(0, h->find(';'))));
    }
  }
  if (parsed.code.empty()) {
    if (const std::string* h = response.Header("x-amzn-ErrorType")) parsed.code = std::string(StripTypeDecorations(*h));
  }
  for (std::string_view name : {"x-amzn-RequestId", "x-amz-request-id", "x-amzn-request-id"}) {
    if (const std::string* h = response.Header(name); h != nullptr && !h->empty()) {
      parsed.request_id = *h;
      break;
    }
  }
  return parsed;
}

// Text that suggests a request (and its signature) was echoed back.
bool LooksLikeCredentials(std::string_view text) {
  std::string lower = ToLower(text);
  for (std::string_view marker :
       {"aws4-hmac", "x-amz-security-token", "x-amz-signature", "signature=", "credential="}) {
    if (lower.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string Target(std::string_view operation, std::string_view resource) {
  if (resource.empty()) return std::string(operation);
  if (operation.empty()) return std::string(resource);
  return fmt::format("{} {}", operation, resource);
}

void ReplaceAll(std::string& text, std::string_view secret) {
  if (secret.size() < 8) return;  // too short to be a secret; replacing would mangle text
  for (size_t p = text.find(secret); p != std::string::npos; p = text.find(secret, p)) {
    text.replace(p, secret.size(), "<redacted>");
    p += 10;
  }
}

// Removes the secret key, the session token and the request's signature from
// a Status, in case a server or proxy echoed them back.
Status Redact(const Status& status, const Credentials& creds, const HttpRequest& signed_request) {
  if (status.ok()) return status;
  std::vector<std::string_view> secrets = {creds.secret_access_key, creds.session_token};
  if (const std::string* auth = FindHeader(signed_request.headers, "Authorization")) {
    secrets.push_back(*auth);
    if (size_t p = auth->find("Signature="); p != std::string::npos) {
      secrets.push_back(std::string_view(*auth).substr(p + 10));
    }
  }
  auto scrub = [&](std::string text) {
    for (std::string_view secret : secrets) ReplaceAll(text, secret);
    return text;
  };
  Status out(status.code(), scrub(status.message()));
  if (status.aws()) {
    AwsErrorInfo info = *status.aws();
    info.error_code = scrub(std::move(info.error_code));
    info.request_id = scrub(std::move(info.request_id));
    out = out.WithAws(std::move(info));
  }
  return out;
}

bool IsSkewError(std::string_view code, std::string_view message) {
  if (code == "RequestTimeTooSkewed" || code == "RequestExpired" || code == "RequestInTheFuture") return true;
  std::string lower = ToLower(message);
  bool mentions_time = lower.find("signature expired") != std::string::npos || lower.find("skew") != std::string::npos;
  return mentions_time &&
         (code == "InvalidSignatureException" || code == "SignatureDoesNotMatch" || code == "AuthFailure");
}

bool IsExpiredToken(std::string_view code) {
  return code == "ExpiredToken" || code == "ExpiredTokenException" || code == "TokenRefreshRequired";
}

bool IsSuccess(int status) {
  return (status >= 200 && status <= 299) || status == 304;
}

// The server's clock, from the Date header or an S3 <ServerTime>.
std::optional<SystemTime> ServerTime(const HttpResponse& response) {
  if (const std::string* date = response.Header("Date")) {
    if (auto t = ParseHttpDate(*date)) return t;
  }
  ParsedError parsed = ParseErrorResponse(response);
  if (!parsed.server_time.empty()) return ParseIso8601(parsed.server_time);
  return std::nullopt;
}

Result<std::string> BuildUrl(const ServiceEndpoint& endpoint, const AwsRequest& request) {
  DLQ_ASSIGN_OR_RETURN(Url url, ParseUrl(endpoint.endpoint));
  std::string base = url.path;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string path = request.path.empty() ? "/" : request.path;
  if (path.front() != '/') path.insert(path.begin(), '/');
  url.path = base + path;
  url.query = request.query;
  if (!request.host_override.empty()) {
    if (request.host_override.find_first_of("/?#@: \t\r\n") != std::string::npos) {
      return InvalidArgument(fmt::format("host override '{}' is not a host name", Clean(request.host_override, 253)));
    }
    url.host = request.host_override;
  }
  return url.ToString();
}

}  // namespace

Status RetryOptions::Validate() const {
  if (max_attempts < 1 || max_attempts > 100) {
    return InvalidArgument(fmt::format("retry: max_attempts must be in [1, 100], got {}", max_attempts));
  }
  if (base_delay.count() < 0) return InvalidArgument("retry: base_delay must not be negative");
  if (max_delay < base_delay) return InvalidArgument("retry: max_delay must be at least base_delay");
  if (max_delay > std::chrono::minutes(10)) return InvalidArgument("retry: max_delay must be at most 10 minutes");
  return Status::Ok();
}

std::chrono::milliseconds BackoffDelay(const RetryOptions& options, int attempt, std::mt19937_64& rng) {
  const int64_t max = std::max<int64_t>(0, options.max_delay.count());
  int64_t cap = std::min<int64_t>(std::max<int64_t>(0, options.base_delay.count()), max);
  for (int i = 0; i < attempt && cap < max; ++i) cap = cap > max / 2 ? max : cap * 2;
  if (cap <= 0) return std::chrono::milliseconds(0);
  std::uniform_int_distribution<int64_t> dist(0, cap);
  return std::chrono::milliseconds(dist(rng));
}

namespace {

// One line for an HTML error page. A 500 page is not retried: AWS answers its
// own 500s with an error document, so this comes from something else (moto
// failing on a bad region, a wrong AWS_ENDPOINT_URL) that fails the same way
// every time. Gateway pages (502, 503, 504) and 408/429 stay retryable.
Status HtmlError(const HttpResponse& response, std::string_view operation, std::string_view resource,
                 const std::string& gist) {
  std::string code(CodeForStatus(response.status));
  std::string text = fmt::format("{}: the endpoint answered HTTP {} with an HTML page{}; is AWS_ENDPOINT_URL right?",
                                 Target(operation, resource), response.status,
                                 gist.empty() ? std::string() : fmt::format(" (\"{}\")", gist));
  ErrorCode ec = ClassifyAwsError("", response.status);
  if (response.status == 500 || response.status == 501) ec = ErrorCode::kInternal;
  AwsErrorInfo info;
  info.error_code = code.empty() ? fmt::format("HTTP{}", response.status) : code;
  info.http_status = response.status;
  return Status(ec, std::move(text)).WithAws(std::move(info));
}

// An HTML page where an AWS error document belongs: a stand-in that failed on
// the request, a proxy or a wrong host, never AWS itself. Sets `gist` to the
// page's <title>, else the start of its text without tags, cleaned ("" when
// it might echo the signed request).
bool IsHtmlPage(const HttpResponse& response, std::string& gist) {
  const std::string* type = response.Header("content-type");
  const std::string_view body = Trim(response.body).substr(0, 4096);
  const std::string head = ToLower(body);
  const bool html = (type != nullptr && ToLower(*type).find("text/html") != std::string::npos) ||
                    StartsWith(head, "<!doctype html") || StartsWith(head, "<html");
  if (!html || LooksLikeCredentials(response.body)) return html;
  const size_t open = head.find("<title>");
  const size_t close = open == std::string::npos ? std::string::npos : head.find("</title>", open);
  if (close != std::string::npos) {
    gist = Clean(body.substr(open + 7, close - open - 7), 120);
    if (!gist.empty()) return true;
  }
  std::string text;
  bool in_tag = false;
  for (char c : body) {
    if (c == '<') in_tag = true;
    if (!in_tag) text += c;
    if (c == '>') {
      in_tag = false;
      text += ' ';
    }
  }
  gist = std::string(Trim(Clean(text, 120)));
  return true;
}

}  // namespace

Status ErrorFromResponse(const HttpResponse& response, std::string_view operation, std::string_view resource) {
  if (response.status == 407) {
    // Only a proxy answers 407 (a plain-http endpoint through http_proxy).
    AwsErrorInfo info;
    info.error_code = "ProxyAuthenticationRequired";
    info.http_status = response.status;
    return ProxyRefused(Target(operation, resource), response.status).WithAws(std::move(info));
  }
  ParsedError parsed = ParseErrorResponse(response);
  if (std::string gist; parsed.code.empty() && IsHtmlPage(response, gist)) {
    return HtmlError(response, operation, resource, gist);
  }
  std::string code = Clean(parsed.code, kMaxCodeBytes);
  if (code.empty()) code = std::string(CodeForStatus(response.status));
  std::string message = Clean(parsed.message, kMaxMessageBytes);
  if (message.empty() && !parsed.recognized_body && !Trim(response.body).empty()) {
    // Not an AWS error document (a proxy's HTML page, say): show its start,
    // unless it looks like an echo of the signed request.
    message = LooksLikeCredentials(response.body)
                  ? fmt::format("{}-byte non-AWS response body", response.body.size())
                  : "unexpected response body: " + Clean(response.body, kMaxSnippetBytes);
  }

  // No AWS error code and none known for the status: say the status.
  std::string text =
      Target(operation, resource) + ": " + (code.empty() ? fmt::format("HTTP {}", response.status) : code);
  if (!message.empty()) text += ": " + message;
  if (!parsed.endpoint.empty()) text += fmt::format(" (use endpoint {})", Clean(parsed.endpoint, 253));
  if (const std::string* region = response.Header("x-amz-bucket-region")) {
    text += fmt::format(" (bucket region {})", Clean(*region, 64));
  }

  AwsErrorInfo info;
  info.error_code = code;
  info.http_status = response.status;
  info.request_id = Clean(parsed.request_id, kMaxCodeBytes);
  return Status(ClassifyAwsError(code, response.status), std::move(text)).WithAws(std::move(info));
}

AwsClient::AwsClient(ServiceEndpoint endpoint, HttpTransport& transport, CredentialsProvider& credentials, Clock& clock,
                     RetryOptions retry)
    : endpoint_(std::move(endpoint)),
      transport_(transport),
      credentials_(credentials),
      clock_(clock),
      retry_(retry),
      rng_(std::random_device{}()) {}

void AwsClient::SetObserver(CallObserver observer) {
  MutexLock lock(mu_);
  observer_ = std::move(observer);
}

namespace {

Status GaveUp(Status error, int attempts) {
  if (attempts <= 1) return error;
  Status gave_up(error.code(), fmt::format("{} (after {} attempts)", error.message(), attempts));
  if (error.aws()) gave_up = gave_up.WithAws(*error.aws());
  return gave_up;
}

}  // namespace

Result<HttpResponse> AwsClient::Call(const AwsRequest& request) {
  const SteadyTime start = clock_.SteadyNow();
  const std::string target = Target(request.operation, request.resource);
  CallRecord record;
  record.service = endpoint_.service;
  record.operation = request.operation;
  auto url = BuildUrl(endpoint_, request);
  if (!url.ok()) return Report(record, start, url.status().WithContext(target));

  // Skew and token corrections each get one extra attempt of their own.
  int budget = retry_.max_attempts;
  Corrections corrections;
  for (int attempt = 1;; ++attempt) {
    record.attempts = attempt;
    auto creds = credentials_.GetCredentials();
    if (!creds.ok()) return Report(record, start, creds.status().WithContext("get credentials").WithContext(target));
    HttpRequest http = Sign(request, *url, *creds);
    auto response = transport_.Send(http);
    Status error;
    if (!response.ok()) {
      record.http_status = 0;
      error = Redact(response.status(), *creds, http).WithContext(target);
    } else {
      record.http_status = response->status;
      if (IsSuccess(response->status)) return Report(record, start, std::move(response));
      error = Redact(ErrorFromResponse(*response, request.operation, request.resource), *creds, http);
      if (Correct(*response, error, corrections)) {
        ++budget;
        continue;
      }
    }
    const bool paced_by_caller = !request.retry_throttled && error.code() == ErrorCode::kThrottled;
    if (!error.retryable() || paced_by_caller || attempt >= budget) {
      return Report(record, start, GaveUp(std::move(error), attempt));
    }
    Backoff(attempt);
  }
}

HttpRequest AwsClient::Sign(const AwsRequest& request, const std::string& url, const Credentials& creds) const {
  HttpRequest http;
  http.method = request.method;
  http.url = url;
  http.headers = request.headers;
  if (request.body_view) {
    http.body_view = request.body_view;
  } else {
    http.body = request.body;
  }
  http.timeout = request.timeout;
  http.cancel = request.cancel;
  SigningOptions signing;
  signing.region = endpoint_.region;
  signing.service = endpoint_.service;
  signing.time = clock_.Now() + std::chrono::seconds(skew_seconds_.load());
  signing.s3 = endpoint_.s3;
  signing.unsigned_payload = request.unsigned_payload;
  SignRequest(http, creds, signing);
  return http;
}

bool AwsClient::Correct(const HttpResponse& response, const Status& error, Corrections& done) {
  std::string_view code = error.aws() ? std::string_view(error.aws()->error_code) : std::string_view();
  if (!done.skew && IsSkewError(code, error.message())) {
    done.skew = true;
    if (auto server_time = ServerTime(response)) {
      auto skew = std::chrono::round<std::chrono::seconds>(*server_time - clock_.Now());
      if (skew.count() != skew_seconds_.load()) {
        skew_seconds_.store(skew.count());
        return true;
      }
    }
  }
  if (!done.credentials && IsExpiredToken(code)) {
    done.credentials = true;
    credentials_.Invalidate();
    return true;
  }
  return false;
}

void AwsClient::Backoff(int attempt) {
  std::chrono::milliseconds delay;
  {
    MutexLock lock(mu_);
    delay = BackoffDelay(retry_, attempt - 1, rng_);
  }
  clock_.SleepFor(delay);
}

Result<HttpResponse> AwsClient::Report(CallRecord& record, SteadyTime start, Result<HttpResponse> result) {
  record.latency = std::chrono::duration_cast<std::chrono::microseconds>(clock_.SteadyNow() - start);
  record.code = result.ok() ? ErrorCode::kOk : result.status().code();
  if (!result.ok() && result.status().aws()) record.aws_error_code = result.status().aws()->error_code;
  CallObserver observer;
  {
    MutexLock lock(mu_);
    observer = observer_;
  }
  if (observer) observer(record);
  return result;
}

}  // namespace dlq
