// CurlTransport: the production HttpTransport, over libcurl.
//
// Thread-safe: any number of threads may call Send concurrently. Easy handles
// are pooled and each keeps its keep-alive connections open, so repeated
// calls to one endpoint reuse warm connections; DNS results and TLS sessions
// are shared by all handles. At most `max_connections` requests are in flight
// at once; further callers wait.
// TLS peer and host verification is always on for https.
// The transport must outlive every Send call in progress.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "aws/http.h"
#include "common/mutex.h"
#include "common/status.h"

namespace dlq {

struct CurlTransportOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // Whole-request default, used when HttpRequest::timeout is zero. Longer
  // than SQS's 20 s long poll plus margin.
  std::chrono::milliseconds request_timeout{70000};
  int max_connections = 64;  // in-flight requests and pooled handles
  // Debug output to stderr; Authorization and security token values are
  // redacted.
  bool verbose = false;
  std::string ca_bundle;  // PEM file; empty means the system default
  // The environment variables whose proxy libcurl uses for http and https
  // URLs (ProxyVariableFor); a connection error then names the variable,
  // never its value (which may hold credentials). "" for none.
  std::string proxy_variable_http;
  std::string proxy_variable_https;
  Status Validate() const;
};

// libcurl is loaded (dlopen) when the first CurlTransport is made, not when
// the program starts: only runs through a proxy use it, and loading it with
// its ~30 dependencies cost ~18 ms of CPU in every process
// (bench/drain/README.md, "three small cuts", measured 2026-11-24).
inline constexpr const char* kLibcurlSoname = "libcurl.so.4";

// Loads `soname` and looks up every libcurl function the transport calls:
// OK, or the error CurlTransport::Create returns for kLibcurlSoname (naming
// the library, why it did not load, and what to install or unset). The
// library stays loaded.
Status ProbeLibcurl(const char* soname = kLibcurlSoname);

class CurlTransport final : public HttpTransport {
 public:
  // Validates the options and loads libcurl (kFailedPrecondition when it
  // cannot be loaded) first.
  static Result<std::unique_ptr<CurlTransport>> Create(CurlTransportOptions options = {});
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  // Connection failures and timeouts are kUnavailable; the message names the
  // method, scheme, host and path, never the query string or headers.
  Result<HttpResponse> Send(const HttpRequest& request) override;

 private:
  // Precondition: options.Validate() and ProbeLibcurl() are OK.
  explicit CurlTransport(CurlTransportOptions options);

  struct Shared;  // the CURLSH and its locks
  void* AcquireHandle() DLQ_EXCLUDES(mu_);
  void ReleaseHandle(void* handle) DLQ_EXCLUDES(mu_);
  // Sets the options every request shares on a new easy handle.
  void ConfigureHandle(void* handle) const;

  CurlTransportOptions options_;
  std::unique_ptr<Shared> shared_;
  Mutex mu_;
  CondVar slot_free_;
  int in_flight_ DLQ_GUARDED_BY(mu_) = 0;
  std::vector<void*> idle_ DLQ_GUARDED_BY(mu_);  // CURL* easy handles
};

}  // namespace dlq
