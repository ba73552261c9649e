#include "sts/sts_client.h"

#include <fmt/format.h>

#include <pugixml.hpp>
#include <random>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr std::string_view kContentType = "application/x-www-form-urlencoded; charset=utf-8";

class FormBody {
 public:
  explicit FormBody(std::string_view action) { body_ = fmt::format("Action={}&Version=2011-06-15", action); }
  void Add(std::string_view name, std::string_view value) {
    body_ += '&';
    body_ += name;
    body_ += '=';
    body_ += UriEncode(value);
  }
  const std::string& str() const { return body_; }

 private:
  std::string body_;
};

// Parses `xml` into `doc` and returns its <OperationResult> node, which lives as long as `doc`.
Result<pugi::xml_node> ResultNode(pugi::xml_document& doc, std::string_view xml, std::string_view operation) {
  pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed) return Internal(fmt::format("{}: STS response is not valid XML ({})", operation, parsed.description()));
  std::string response_name = fmt::format("{}Response", operation);
  std::string result_name = fmt::format("{}Result", operation);
  pugi::xml_node result = doc.child(response_name.c_str()).child(result_name.c_str());
  if (!result) return Internal(fmt::format("{}: STS response has no {} element", operation, result_name));
  return result;
}

std::string ChildText(const pugi::xml_node& node, const char* name) {
  return node.child(name).text().as_string();
}

Result<Credentials> CredentialsFromResult(const pugi::xml_node& result, std::string_view operation) {
  pugi::xml_node c = result.child("Credentials");
  if (!c) return Internal(fmt::format("{}: STS response has no Credentials element", operation));
  Credentials creds;
  creds.access_key_id = ChildText(c, "AccessKeyId");
  creds.secret_access_key = ChildText(c, "SecretAccessKey");
  creds.session_token = ChildText(c, "SessionToken");
  if (creds.empty()) return Internal(fmt::format("{}: STS response lacks AccessKeyId or SecretAccessKey", operation));
  std::string expiration = ChildText(c, "Expiration");
  auto t = ParseIso8601(Trim(expiration));
  if (!t) return Internal(fmt::format("{}: STS response has an unreadable Expiration '{}'", operation, expiration));
  creds.expiration = *t;
  return creds;
}

}  // namespace

Result<Credentials> ParseStsCredentials(std::string_view xml, std::string_view operation) {
  pugi::xml_document doc;
  DLQ_ASSIGN_OR_RETURN(pugi::xml_node result, ResultNode(doc, xml, operation));
  return CredentialsFromResult(result, operation);
}

StsClient::StsClient(ServiceEndpoint endpoint, HttpTransport& transport, CredentialsProvider& credentials, Clock& clock,
                     RetryOptions retry)
    : client_(std::move(endpoint), transport, credentials, clock, retry),
      transport_(transport),
      clock_(clock),
      retry_(retry) {}

Result<CallerIdentity> StsClient::GetCallerIdentity() {
  constexpr std::string_view kOp = "GetCallerIdentity";
  AwsRequest req;
  req.operation = std::string(kOp);
  req.resource = "sts";
  req.method = "POST";
  req.headers.emplace_back("Content-Type", std::string(kContentType));
  req.body = FormBody(kOp).str();
  DLQ_ASSIGN_OR_RETURN(HttpResponse resp, client_.Call(req));
  pugi::xml_document doc;
  DLQ_ASSIGN_OR_RETURN(pugi::xml_node result, ResultNode(doc, resp.body, kOp));
  CallerIdentity id;
  id.account = ChildText(result, "Account");
  id.arn = ChildText(result, "Arn");
  id.user_id = ChildText(result, "UserId");
  if (id.arn.empty()) return Internal("GetCallerIdentity: STS response has no Arn");
  return id;
}

Result<Credentials> StsClient::AssumeRole(const AssumeRoleRequest& request) {
  constexpr std::string_view kOp = "AssumeRole";
  FormBody body(kOp);
  body.Add("RoleArn", request.role_arn);
  body.Add("RoleSessionName", request.session_name);
  if (request.external_id) body.Add("ExternalId", *request.external_id);
  if (request.duration) body.Add("DurationSeconds", std::to_string(request.duration->count()));
  AwsRequest req;
  req.operation = std::string(kOp);
  req.resource = request.role_arn;
  req.method = "POST";
  req.headers.emplace_back("Content-Type", std::string(kContentType));
  req.body = body.str();
  DLQ_ASSIGN_OR_RETURN(HttpResponse resp, client_.Call(req));
  auto creds = ParseStsCredentials(resp.body, kOp);
  if (!creds.ok()) return creds.status().WithContext(request.role_arn);
  return creds;
}

Result<Credentials> StsClient::AssumeRoleWithWebIdentity(const AssumeRoleWithWebIdentityRequest& request) {
  return dlq::AssumeRoleWithWebIdentity(client_.endpoint(), transport_, clock_, request, retry_);
}

Result<Credentials> AssumeRoleWithWebIdentity(const ServiceEndpoint& endpoint, HttpTransport& transport, Clock& clock,
                                              const AssumeRoleWithWebIdentityRequest& request,
                                              const RetryOptions& retry) {
  constexpr std::string_view kOp = "AssumeRoleWithWebIdentity";
  FormBody body(kOp);
  body.Add("RoleArn", request.role_arn);
  body.Add("RoleSessionName", request.session_name);
  body.Add("WebIdentityToken", request.token);
  if (request.duration) body.Add("DurationSeconds", std::to_string(request.duration->count()));
  HttpRequest http;
  http.method = "POST";
  http.url = endpoint.endpoint + "/";
  http.headers.emplace_back("Content-Type", std::string(kContentType));
  http.headers.emplace_back("Accept", "text/xml");
  http.body = body.str();

  std::mt19937_64 rng{std::random_device{}()};
  int attempts = std::max(1, retry.max_attempts);
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) clock.SleepFor(BackoffDelay(retry, attempt - 1, rng));
    auto resp = transport.Send(http);
    if (!resp.ok()) {
      last = resp.status().WithContext(fmt::format("{} {}", kOp, request.role_arn));
      if (last.retryable()) continue;
      return last;
    }
    if (resp->status >= 200 && resp->status < 300) {
      auto creds = ParseStsCredentials(resp->body, kOp);
      if (!creds.ok()) return creds.status().WithContext(request.role_arn);
      return creds;
    }
    last = ErrorFromResponse(*resp, kOp, request.role_arn);
    bool idp_hiccup = last.aws() && last.aws()->error_code == "IDPCommunicationError";
    if (!last.retryable() && !idp_hiccup) return last;
  }
  return last;
}

}  // namespace dlq
