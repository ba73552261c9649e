#include "aws/curl_transport.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <type_traits>

#include "common/strings.h"

namespace dlq {
namespace {

constexpr long kReceiveBufferBytes = 64L * 1024;  // curl's default is 16 KiB

// The libcurl functions the transport calls, looked up in the library
// ProbeLibcurl loaded.
struct CurlApi {
  CURLcode (*global_init)(long);  // NOLINT(google-runtime-int): libcurl's type
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  CURLcode (*easy_perform)(CURL*);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  CURLSH* (*share_init)();
  CURLSHcode (*share_setopt)(CURLSH*, CURLSHoption, ...);
  CURLSHcode (*share_cleanup)(CURLSH*);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Fills `api` from `soname`; the error says what to do about it.
Status LoadCurlApi(const char* soname, CurlApi& api) {
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    return FailedPrecondition(fmt::format(
        "libcurl ({}) could not be loaded: {}. It is needed only to go through a proxy (a proxy variable such as "
        "https_proxy is set, or DLQ_HTTP_CLIENT=curl): install libcurl (Debian: libcurl4), or unset the proxy "
        "variables to use the built-in HTTP client",
        soname, why != nullptr ? why : "unknown error"));
  }
  std::string missing;  // the first function not found
  auto find = [&](auto& fn, const char* name) {
    void* sym = ::dlsym(lib, name);
    if (sym == nullptr && missing.empty()) missing = name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  find(api.global_init, "curl_global_init");
  find(api.easy_init, "curl_easy_init");
  find(api.easy_setopt, "curl_easy_setopt");
  find(api.easy_getinfo, "curl_easy_getinfo");
  find(api.easy_perform, "curl_easy_perform");
  find(api.easy_cleanup, "curl_easy_cleanup");
  find(api.easy_strerror, "curl_easy_strerror");
  find(api.share_init, "curl_share_init");
  find(api.share_setopt, "curl_share_setopt");
  find(api.share_cleanup, "curl_share_cleanup");
  find(api.slist_append, "curl_slist_append");
  find(api.slist_free_all, "curl_slist_free_all");
  if (!missing.empty()) {
    ::dlclose(lib);
    return FailedPrecondition(
        fmt::format("libcurl ({}) lacks {}: install libcurl 7.85 or later (Debian: libcurl4)", soname, missing));
  }
  return Status::Ok();
}

struct LoadedCurl {
  Status status;
  CurlApi api{};
};

// libcurl.so.4, loaded once on first use.
const LoadedCurl& DefaultCurl() {
  static const LoadedCurl kLoaded = [] {
    LoadedCurl l;
    l.status = LoadCurlApi(kLibcurlSoname, l.api);
    return l;
  }();
  return kLoaded;
}

// Only called once Create has seen DefaultCurl() load.
const CurlApi& Curl() {
  return DefaultCurl().api;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { Curl().global_init(CURL_GLOBAL_DEFAULT); });
}

// Names the target of a request without its query string (which can carry
// presigned credentials) or userinfo.
std::string DescribeTarget(const HttpRequest& request) {
  auto url = ParseUrl(request.url);
  if (!url.ok()) return request.method + " <malformed URL>";
  return fmt::format("{} {}://{}{}", request.method, url->scheme, url->Authority(), url->path);
}

bool IsSensitiveHeader(std::string_view name) {
  return IEquals(name, "authorization") || IEquals(name, "x-amz-security-token") ||
         IEquals(name, "x-amz-sso_bearer_token") || IEquals(name, "proxy-authorization") || IEquals(name, "cookie");
}

// CURLOPT_DEBUGFUNCTION for verbose mode: prints info text and headers, with
// credential-bearing header values replaced.
int DebugCallback(CURL*, curl_infotype type, char* data, size_t size, void*) {
  const char* prefix = nullptr;
  switch (type) {
    case CURLINFO_TEXT: prefix = "* "; break;
    case CURLINFO_HEADER_IN: prefix = "< "; break;
    case CURLINFO_HEADER_OUT: prefix = "> "; break;
    default: return 0;  // bodies and TLS data are not printed
  }
  std::string_view text(data, size);
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (type != CURLINFO_TEXT && colon != std::string_view::npos && IsSensitiveHeader(Trim(line.substr(0, colon)))) {
      std::fprintf(stderr, "%s%.*s: <redacted>\n", prefix, static_cast<int>(colon), line.data());
      continue;
    }
    std::fprintf(stderr, "%s%.*s\n", prefix, static_cast<int>(line.size()), line.data());
  }
  return 0;
}

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<HttpHeaders*>(user);
  std::string_view line = Trim(std::string_view(data, size * n));
  if (StartsWith(line, "HTTP/")) {
    headers->clear();  // a new response block (after 100 Continue, say)
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    headers->emplace_back(std::string(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1))));
  }
  return size * n;
}

// Progress callback: a non-zero return makes curl abandon the transfer.
int AbortWhenCancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

ErrorCode MapCurlError(CURLcode code) {
  switch (code) {
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_BAD_FUNCTION_ARGUMENT: return ErrorCode::kInvalidArgument;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return ErrorCode::kFailedPrecondition;  // a configuration problem; retrying will not help
    case CURLE_OUT_OF_MEMORY:
    case CURLE_FAILED_INIT: return ErrorCode::kInternal;
    default:
      // Timeouts, refused/reset connections, DNS, send/recv and TLS handshake
      // failures: the next attempt may well succeed.
      return ErrorCode::kUnavailable;
  }
}

// Failures a proxy on the way can cause: it cannot be resolved, reached or
// kept talking. (A proxy that answers with a refusal is ProxyRefused.)
bool ConnectionLevel(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PROXY: return true;
    default: return false;
  }
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { Curl().slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

bool Append(Slist& list, const std::string& line) {
  curl_slist* next = Curl().slist_append(list.get(), line.c_str());
  if (next == nullptr) return false;
  static_cast<void>(list.release());  // `next` now owns the whole list
  list.reset(next);
  return true;
}

// Checks what the transport can send: the method and the URL's scheme.
Status CheckRequest(const HttpRequest& request) {
  const std::string& method = request.method;
  if (method != "GET" && method != "HEAD" && method != "PUT" && method != "POST" && method != "DELETE") {
    return InvalidArgument(fmt::format("curl transport: unsupported HTTP method '{}'", method));
  }
  if (!StartsWith(request.url, "http://") && !StartsWith(request.url, "https://")) {
    return InvalidArgument(
        fmt::format("curl transport: {}: URL must start with http:// or https://", DescribeTarget(request)));
  }
  return Status::Ok();
}

// The header list curl sends: the request's headers, and an empty "Name:"
// (which stops curl from adding its own default) for each of Expect, Accept
// and Content-Type the request does not set.
Status BuildHeaders(const HttpRequest& request, Slist& headers) {
  bool has_expect = false, has_accept = false, has_content_type = false;
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || name.find_first_of(":\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return InvalidArgument(
          fmt::format("curl transport: {}: malformed header name or value", DescribeTarget(request)));
    }
    has_expect |= IEquals(name, "expect");
    has_accept |= IEquals(name, "accept");
    has_content_type |= IEquals(name, "content-type");
    // "Name;" is curl's way to send a header with an empty value.
    std::string line = name;
    line += value.empty() ? ";" : ": ";
    line += value;
    if (!Append(headers, line)) return Internal("curl transport: out of memory");
  }
  if (!has_expect && !Append(headers, "Expect:")) return Internal("curl transport: out of memory");
  if (!has_accept && !Append(headers, "Accept:")) return Internal("curl transport: out of memory");
  if (!has_content_type && !Append(headers, "Content-Type:")) return Internal("curl transport: out of memory");
  return Status::Ok();
}

// Sets every option that differs between requests, each time: the handle
// may come from the pool with an earlier request's options.
void SetRequestOptions(CURL* curl, const HttpRequest& request, long timeout_ms, curl_slist* headers,
                       HttpResponse& response, char* errbuf) {
  const std::string& method = request.method;
  Curl().easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  Curl().easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  Curl().easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  Curl().easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  Curl().easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  Curl().easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  // HTTPGET resets the method, the upload flag and NOBODY left by an
  // earlier request on this handle.
  Curl().easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  Curl().easy_setopt(curl, CURLOPT_CUSTOMREQUEST, nullptr);
  if (method == "HEAD") {
    Curl().easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    // PUT, POST and DELETE: the body is sent from memory with an exact
    // Content-Length (no chunked encoding), under the requested method.
    Curl().easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    std::string_view body = request.Body();
    if (method != "DELETE" || !body.empty()) {
      Curl().easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      Curl().easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    }
  }
  Curl().easy_setopt(curl, CURLOPT_NOPROGRESS, request.cancel != nullptr ? 0L : 1L);
  Curl().easy_setopt(curl, CURLOPT_XFERINFODATA, request.cancel);
}

// Drops per-request pointers before the handle goes back to the pool.
void ClearRequestOptions(CURL* curl) {
  Curl().easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  Curl().easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  Curl().easy_setopt(curl, CURLOPT_POSTFIELDS, nullptr);
  Curl().easy_setopt(curl, CURLOPT_WRITEDATA, nullptr);
  Curl().easy_setopt(curl, CURLOPT_HEADERDATA, nullptr);
  Curl().easy_setopt(curl, CURLOPT_XFERINFODATA, nullptr);
}

// The error of a transfer that did not complete (rc != CURLE_OK):
// abandoned on request, refused by the proxy, or curl's error, which names
// the proxy variable in force when the connection itself failed.
Status TransferError(const HttpRequest& request, CURLcode rc, long connect_status, const char* errbuf,
                     const std::string& proxy_variable) {
  if (rc == CURLE_ABORTED_BY_CALLBACK && request.cancel != nullptr && request.cancel->load()) {
    return Cancelled(fmt::format("{}: abandoned on request", DescribeTarget(request)));
  }
  if (connect_status >= 400) {
    // The proxy refused the tunnel: the same answer comes on every attempt.
    return ProxyRefused(DescribeTarget(request), static_cast<int>(connect_status));
  }
  std::string detail = errbuf[0] != '\0' ? std::string(Trim(errbuf)) : Curl().easy_strerror(rc);
  std::string message = fmt::format("{}: {} (curl error {})", DescribeTarget(request), detail, static_cast<int>(rc));
  if (!proxy_variable.empty() && ConnectionLevel(rc)) {
    // curl's text names the proxy's host when the proxy was the one it
    // could not reach, which reads like the endpoint: say a proxy was set.
    message += fmt::format(
        "; libcurl sends this through the proxy in {} unless NO_PROXY exempts the host: check that proxy, or set "
        "DLQ_HTTP_CLIENT=builtin to connect directly",
        proxy_variable);
  }
  return Status(MapCurlError(rc), std::move(message));
}

}  // namespace

struct CurlTransport::Shared {
  CURLSH* share = nullptr;
  std::array<Mutex, CURL_LOCK_DATA_LAST> locks;

  // curl takes a lock in one callback and releases it in the other, which
  // the analysis cannot follow.
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) DLQ_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Shared*>(user)->locks[static_cast<size_t>(data)].Lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) DLQ_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Shared*>(user)->locks[static_cast<size_t>(data)].Unlock();
  }
};

Status CurlTransportOptions::Validate() const {
  if (connect_timeout.count() <= 0) return InvalidArgument("curl transport: connect_timeout must be positive");
  if (request_timeout.count() <= 0) return InvalidArgument("curl transport: request_timeout must be positive");
  if (connect_timeout > request_timeout) {
    return InvalidArgument("curl transport: connect_timeout must not exceed request_timeout");
  }
  if (max_connections < 1 || max_connections > 10000) {
    return InvalidArgument(
        fmt::format("curl transport: max_connections must be in [1, 10000], got {}", max_connections));
  }
  if (!ca_bundle.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(ca_bundle, ec)) {
      return InvalidArgument(fmt::format("curl transport: CA bundle '{}' is not a readable file", ca_bundle));
    }
  }
  return Status::Ok();
}

Status ProbeLibcurl(const char* soname) {
  if (std::string_view(soname) == kLibcurlSoname) return DefaultCurl().status;
  CurlApi api;
  return LoadCurlApi(soname, api);
}

Result<std::unique_ptr<CurlTransport>> CurlTransport::Create(CurlTransportOptions options) {
  DLQ_RETURN_IF_ERROR(options.Validate());
  DLQ_RETURN_IF_ERROR(ProbeLibcurl());
  return std::unique_ptr<CurlTransport>(new CurlTransport(std::move(options)));
}

CurlTransport::CurlTransport(CurlTransportOptions options)
    : options_(std::move(options)), shared_(std::make_unique<Shared>()) {
  GlobalInit();
  shared_->share = Curl().share_init();
  if (shared_->share != nullptr) {
    Curl().share_setopt(shared_->share, CURLSHOPT_LOCKFUNC, &Shared::Lock);
    Curl().share_setopt(shared_->share, CURLSHOPT_UNLOCKFUNC, &Shared::Unlock);
    Curl().share_setopt(shared_->share, CURLSHOPT_USERDATA, shared_.get());
    // DNS and TLS sessions are shared. The connection cache is deliberately
    // not (CURL_LOCK_DATA_CONNECT): curl documents sharing it between
    // concurrent threads as unsupported (known bug 11.11, curl#4915). Each
    // pooled easy handle keeps its own live connections instead.
    Curl().share_setopt(shared_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    Curl().share_setopt(shared_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
}

CurlTransport::~CurlTransport() {
  // Easy handles first: they reference the share.
  for (void* h : idle_) Curl().easy_cleanup(static_cast<CURL*>(h));
  idle_.clear();
  if (shared_->share != nullptr) Curl().share_cleanup(shared_->share);
}

void* CurlTransport::AcquireHandle() {
  MutexLock lock(mu_);
  slot_free_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return in_flight_ < options_.max_connections; });
  ++in_flight_;
  if (!idle_.empty()) {
    void* h = idle_.back();
    idle_.pop_back();
    return h;
  }
  lock.Unlock();
  CURL* h = Curl().easy_init();
  if (h == nullptr) {
    lock.Lock();
    --in_flight_;
    slot_free_.NotifyOne();
    return nullptr;
  }
  ConfigureHandle(h);
  return h;
}

void CurlTransport::ConfigureHandle(void* handle) const {
  // Options that are the same for every request are set once per handle:
  // curl keeps options between transfers, and Send sets every option that
  // varies (so the handle is never curl_easy_reset).
  CURL* curl = static_cast<CURL*>(handle);
  if (shared_->share != nullptr) Curl().easy_setopt(curl, CURLOPT_SHARE, shared_->share);
  Curl().easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  // The path goes out as signed: without this curl removes "/./" and "/../"
  // segments, and a request signed for one key would write another.
  Curl().easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  Curl().easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  Curl().easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  Curl().easy_setopt(curl, CURLOPT_MAXCONNECTS, static_cast<long>(options_.max_connections));
  // One recv (and one round of curl's poll loop) per kReceiveBufferBytes of
  // response: a ReceiveMessage reply of 10 messages fits in one.
  Curl().easy_setopt(curl, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
  Curl().easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  Curl().easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_bundle.empty()) Curl().easy_setopt(curl, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  Curl().easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  Curl().easy_setopt(curl, CURLOPT_WRITEFUNCTION, &WriteBody);
  Curl().easy_setopt(curl, CURLOPT_HEADERFUNCTION, &WriteHeader);
  Curl().easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &AbortWhenCancelled);
  if (options_.verbose) {
    Curl().easy_setopt(curl, CURLOPT_VERBOSE, 1L);
    Curl().easy_setopt(curl, CURLOPT_DEBUGFUNCTION, &DebugCallback);
  }
}

void CurlTransport::ReleaseHandle(void* handle) {
  MutexLock lock(mu_);
  --in_flight_;
  if (static_cast<int>(idle_.size()) < options_.max_connections) {
    idle_.push_back(handle);
  } else {
    Curl().easy_cleanup(static_cast<CURL*>(handle));
  }
  slot_free_.NotifyOne();
}

Result<HttpResponse> CurlTransport::Send(const HttpRequest& request) {
  if (Status st = CheckRequest(request); !st.ok()) return st;
  Slist headers;
  if (Status st = BuildHeaders(request, headers); !st.ok()) return st;

  CURL* curl = static_cast<CURL*>(AcquireHandle());
  if (curl == nullptr) return Internal("curl transport: curl_easy_init failed");

  HttpResponse response;
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  auto timeout = request.timeout.count() > 0 ? request.timeout : options_.request_timeout;
  SetRequestOptions(curl, request, static_cast<long>(timeout.count()), headers.get(), response, errbuf.data());
  CURLcode rc = Curl().easy_perform(curl);
  long status = 0;
  long connect_status = 0;  // a proxy's answer to CONNECT (https through a proxy)
  Curl().easy_getinfo(curl, rc == CURLE_OK ? CURLINFO_RESPONSE_CODE : CURLINFO_HTTP_CONNECTCODE,
                      rc == CURLE_OK ? &status : &connect_status);
  ClearRequestOptions(curl);
  ReleaseHandle(curl);

  if (rc != CURLE_OK) {
    return TransferError(
        request, rc, connect_status, errbuf.data(),
        StartsWith(request.url, "https://") ? options_.proxy_variable_https : options_.proxy_variable_http);
  }
  response.status = static_cast<int>(status);
  return response;
}

}  // namespace dlq
