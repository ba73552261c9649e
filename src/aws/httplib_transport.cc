#include "aws/httplib_transport.h"

#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>

#include "common/strings.h"

namespace dlq {
namespace {

std::string DescribeTarget(const HttpRequest& request, const Url& url) {
  return fmt::format("{} {}://{}{}", request.method, url.scheme, url.Authority(), url.path);
}

constexpr size_t kMaxIdlePerEndpoint = 16;  // kept-alive connections per scheme://host:port

// Whole seconds and microseconds of a duration, for httplib's setters.
std::pair<time_t, time_t> SecUsec(std::chrono::milliseconds d) {
  return {static_cast<time_t>(d.count() / 1000), static_cast<time_t>((d.count() % 1000) * 1000)};
}

}  // namespace

struct HttplibTransport::Connection {
  std::unique_ptr<httplib::Client> client;
};

Result<std::unique_ptr<HttplibTransport>> HttplibTransport::Create(const TransportSettings& settings) {
  if (settings.connect_timeout.count() <= 0 || settings.request_timeout.count() <= 0) {
    return InvalidArgument("HTTP timeouts must be positive");
  }
  if (!settings.ca_bundle.empty() && ::access(settings.ca_bundle.c_str(), R_OK) != 0) {
    return InvalidArgument(fmt::format("CA bundle {}: not a readable file", settings.ca_bundle));
  }
  return std::unique_ptr<HttplibTransport>(new HttplibTransport(settings));
}

HttplibTransport::HttplibTransport(TransportSettings settings) : settings_(std::move(settings)) {
  watcher_ = std::thread([this] { WatchCancellations(); });
}

HttplibTransport::~HttplibTransport() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    changed_.NotifyAll();
  }
  watcher_.join();
}

void HttplibTransport::WatchCancellations() {
  MutexLock lock(mu_);
  while (!stopping_) {
    if (cancellable_.empty()) {
      changed_.Wait(mu_);
      continue;
    }
    for (auto& [conn, cancel] : cancellable_) {
      if (cancel->load()) conn->client->stop();  // shuts the socket down: the send returns at once
    }
    (void)changed_.WaitFor(mu_, std::chrono::milliseconds(50));
  }
}

Result<HttpResponse> HttplibTransport::Send(const HttpRequest& request) {
  DLQ_ASSIGN_OR_RETURN(Url url, ParseUrl(request.url));
  if (url.scheme != "http" && url.scheme != "https") {
    return InvalidArgument(fmt::format("unsupported URL scheme in {}", DescribeTarget(request, url)));
  }
  static constexpr std::string_view kMethods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
  if (std::find(std::begin(kMethods), std::end(kMethods), request.method) == std::end(kMethods)) {
    return InvalidArgument(fmt::format("unsupported HTTP method in {}", DescribeTarget(request, url)));
  }
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return InvalidArgument(fmt::format("header {} has a line break or a bad name in {}", name.substr(0, 64),
                                         DescribeTarget(request, url)));
    }
  }
  const int port = url.port != 0 ? url.port : (url.scheme == "https" ? 443 : 80);
  const std::string key = fmt::format("{}://{}:{}", url.scheme, url.host, port);

  std::unique_ptr<Connection> conn;
  {
    MutexLock lock(mu_);
    auto it = idle_.find(key);
    if (it != idle_.end() && !it->second.empty()) {
      conn = std::move(it->second.back());
      it->second.pop_back();
    }
  }
  if (!conn) {
    conn = std::make_unique<Connection>();
    conn->client = std::make_unique<httplib::Client>(key);
    conn->client->set_keep_alive(true);
    conn->client->set_decompress(false);
    conn->client->set_follow_location(false);
    conn->client->set_url_encode(false);  // the URL is already encoded (and signed as it is)
    auto [cs, cu] = SecUsec(settings_.connect_timeout);
    conn->client->set_connection_timeout(cs, cu);
    if (url.scheme == "https") {
      conn->client->enable_server_certificate_verification(true);
      if (!settings_.ca_bundle.empty()) conn->client->set_ca_cert_path(settings_.ca_bundle);
    }
  }
  const auto timeout = request.timeout.count() > 0 ? request.timeout : settings_.request_timeout;
  auto [ts, tu] = SecUsec(timeout);
  conn->client->set_read_timeout(ts, tu);
  conn->client->set_write_timeout(ts, tu);

  httplib::Request req;
  req.method = request.method;
  req.path = url.path + (url.query.empty() ? "" : "?" + url.query);
  for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
  req.body = std::string(request.Body());  // httplib owns its body: one copy of a view

  if (request.cancel != nullptr) {
    if (request.cancel->load()) return Cancelled(DescribeTarget(request, url) + ": cancelled");
    MutexLock lock(mu_);
    cancellable_.emplace_back(conn.get(), request.cancel);
    changed_.NotifyAll();
  }
  httplib::Result res = conn->client->send(req);
  if (request.cancel != nullptr) {
    MutexLock lock(mu_);
    cancellable_.erase(
        std::remove_if(cancellable_.begin(), cancellable_.end(), [&](const auto& e) { return e.first == conn.get(); }),
        cancellable_.end());
  }
  if (request.cancel != nullptr && request.cancel->load()) {
    return Cancelled(DescribeTarget(request, url) + ": cancelled");  // the connection is dropped
  }
  if (!res) {
    return Unavailable(
        fmt::format("{}: {} (HTTP transport)", DescribeTarget(request, url), httplib::to_string(res.error())));
  }
  HttpResponse out;
  out.status = res->status;
  for (const auto& [name, value] : res->headers) out.headers.emplace_back(name, value);
  out.body = std::move(res->body);
  const bool close = IEquals(res->get_header_value("Connection"), "close");
  if (!close) {
    MutexLock lock(mu_);
    auto& idle = idle_[key];
    if (!stopping_ && idle.size() < kMaxIdlePerEndpoint) idle.push_back(std::move(conn));
  }
  return out;
}

}  // namespace dlq
