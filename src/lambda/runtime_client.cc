#include "lambda/runtime_client.h"

#include <fmt/format.h>

#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// The /next call waits for as long as no invocation comes (the process is
// frozen in between); the transport treats zero as its default, so ask for a
// year instead.
constexpr std::chrono::milliseconds kNoTimeout = std::chrono::hours(24 * 366);
constexpr std::chrono::milliseconds kPostTimeout{30000};

}  // namespace

std::string RuntimeErrorJson(std::string_view error_type, std::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("errorMessage").String(message).Key("errorType").String(error_type);
  w.Key("stackTrace").BeginArray().EndArray().EndObject();
  return w.Take();
}

HttpRuntimeClient::HttpRuntimeClient(HttpTransport& transport, std::string api)
    : transport_(transport), base_(fmt::format("http://{}/2018-06-01", api)) {}

Result<Invocation> HttpRuntimeClient::Next() {
  HttpRequest req;
  req.method = "GET";
  req.url = base_ + "/runtime/invocation/next";
  req.timeout = kNoTimeout;
  auto resp = transport_.Send(req);
  if (!resp.ok()) return resp.status().WithContext("runtime API: next invocation");
  if (resp->status != 200) {
    return Unavailable(fmt::format("runtime API: next invocation returned HTTP {}", resp->status));
  }
  Invocation inv;
  const std::string* id = resp->Header("Lambda-Runtime-Aws-Request-Id");
  const std::string* deadline = resp->Header("Lambda-Runtime-Deadline-Ms");
  if (id == nullptr || id->empty()) return InvalidArgument("runtime API: next invocation without a request id");
  auto ms = deadline ? ParseInt64(Trim(*deadline)) : std::nullopt;
  if (!ms || *ms <= 0)
    return InvalidArgument("runtime API: next invocation without a valid Lambda-Runtime-Deadline-Ms");
  inv.request_id = *id;
  inv.deadline = FromUnixMillis(*ms);
  inv.body = std::move(resp->body);
  if (const std::string* arn = resp->Header("Lambda-Runtime-Invoked-Function-Arn")) inv.function_arn = *arn;
  if (const std::string* trace = resp->Header("Lambda-Runtime-Trace-Id")) inv.trace_id = *trace;
  return inv;
}

Status HttpRuntimeClient::Post(const std::string& path, std::string_view body, std::string_view error_type) {
  HttpRequest req;
  req.method = "POST";
  req.url = base_ + path;
  req.timeout = kPostTimeout;
  req.body = std::string(body);
  req.headers.emplace_back("Content-Type", "application/json");
  if (!error_type.empty()) req.headers.emplace_back("Lambda-Runtime-Function-Error-Type", std::string(error_type));
  auto resp = transport_.Send(req);
  if (!resp.ok()) return resp.status().WithContext("runtime API: POST " + path);
  if (resp->status != 202) {
    return Unavailable(fmt::format("runtime API: POST {} returned HTTP {}", path, resp->status));
  }
  return Status::Ok();
}

Status HttpRuntimeClient::Respond(const std::string& request_id, std::string_view body) {
  return Post(fmt::format("/runtime/invocation/{}/response", UriEncode(request_id)), body, "");
}

Status HttpRuntimeClient::ReportError(const std::string& request_id, std::string_view error_type,
                                      std::string_view message) {
  return Post(fmt::format("/runtime/invocation/{}/error", UriEncode(request_id)), RuntimeErrorJson(error_type, message),
              error_type);
}

Status HttpRuntimeClient::ReportInitError(std::string_view error_type, std::string_view message) {
  return Post("/runtime/init/error", RuntimeErrorJson(error_type, message), error_type);
}

}  // namespace dlq
