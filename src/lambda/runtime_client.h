// The Lambda Runtime API (2018-06-01) a custom runtime talks to: the next
// invocation, its response or error, and an init error. HttpRuntimeClient
// speaks it over an HttpTransport to AWS_LAMBDA_RUNTIME_API (host:port,
// plain HTTP); tests use a fake. Not thread-safe: one runtime loop owns it.
#pragma once

#include <string>
#include <string_view>

#include "aws/http.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct Invocation {
  std::string request_id;  // Lambda-Runtime-Aws-Request-Id
  std::string body;        // the event
  SystemTime deadline;     // Lambda-Runtime-Deadline-Ms
  std::string function_arn;
  std::string trace_id;
};

class RuntimeClient {
 public:
  virtual ~RuntimeClient() = default;
  // Blocks until an invocation arrives (no timeout: Lambda freezes the
  // process meanwhile). kInvalidArgument when the reply lacks the request id
  // or the deadline; kUnavailable when the API cannot be reached.
  virtual Result<Invocation> Next() = 0;
  virtual Status Respond(const std::string& request_id, std::string_view body) = 0;
  // error_type is a short category ("DlqArchive.InvalidEvent"); the message
  // must not contain secrets.
  virtual Status ReportError(const std::string& request_id, std::string_view error_type, std::string_view message) = 0;
  virtual Status ReportInitError(std::string_view error_type, std::string_view message) = 0;
};

// The error document the Runtime API takes:
// {"errorMessage":...,"errorType":...,"stackTrace":[]}.
std::string RuntimeErrorJson(std::string_view error_type, std::string_view message);

class HttpRuntimeClient final : public RuntimeClient {
 public:
  // `api` is AWS_LAMBDA_RUNTIME_API ("127.0.0.1:9001"). The transport must
  // outlive the client.
  HttpRuntimeClient(HttpTransport& transport, std::string api);

  Result<Invocation> Next() override;
  Status Respond(const std::string& request_id, std::string_view body) override;
  Status ReportError(const std::string& request_id, std::string_view error_type, std::string_view message) override;
  Status ReportInitError(std::string_view error_type, std::string_view message) override;

 private:
  Status Post(const std::string& path, std::string_view body, std::string_view error_type);

  HttpTransport& transport_;
  std::string base_;  // "http://host:port/2018-06-01"
};

}  // namespace dlq
