#include "server/http_request_reader.h"

#include <string>
#include <utility>

namespace dlq {
namespace {

// The request as handlers see it, from the connection's parsed head and
// `headers` (its body is added once it has arrived).
HttpServerRequest RequestOf(const HttpConnection& c, HttpHeaders headers) {
  HttpServerRequest request;
  request.method = c.head->method;
  request.path = c.head->path;
  request.query = c.head->query;
  request.headers = std::move(headers);
  request.remote_addr = c.remote_addr;
  request.cancelled = c.cancelled.get();
  return request;
}

}  // namespace

HttpRequestReader::HttpRequestReader(const HttpRouter& router, const HttpServerOptions& options)
    : router_(router),
      options_(options),
      limits_{.max_head_bytes = options.max_head_bytes,
              .max_headers = options.max_headers,
              .max_body_bytes = options.max_body_bytes},
      host_policy_{.listen_host = options.host, .allowed_hosts = options.allowed_hosts} {}

HttpRequestReader::Step HttpRequestReader::Next(HttpConnection& c) const {
  using Kind = Step::Kind;
  if (c.phase != HttpConnectionPhase::kReading) return Step{};
  if (!c.head) {
    if (c.in.empty() || !c.WorthParsing(options_.max_head_bytes, options_.max_headers)) return Step{};
    RequestHeadParse parsed = ParseRequestHead(c.in, limits_);
    if (parsed.state == RequestHeadParse::State::kRefused) {
      return Step{.kind = Kind::kRefused, .refusal = JsonError(parsed.status, parsed.reason), .head_only = false};
    }
    if (parsed.state == RequestHeadParse::State::kIncomplete) return Step{};
    c.head = std::move(parsed.head);
    if (std::optional<HttpServerResponse> refused = Admit(c)) {
      // Answered before its body is read; the body is never held.
      const bool head_only = c.head->method == "HEAD";
      c.head.reset();
      c.in.clear();
      c.in.shrink_to_fit();
      return Step{.kind = Kind::kRefused, .refusal = std::move(*refused), .head_only = head_only};
    }
    const bool body_pending = c.in.size() < c.head->head_bytes + c.head->content_length;
    if (c.head->expect_continue && body_pending) {
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      if (!c.Flush()) return Step{.kind = Kind::kFailed};
    }
  }
  const size_t need = c.head->head_bytes + c.head->content_length;
  if (c.in.size() < need) return Step{};
  Step step{.kind = Kind::kRequest};
  step.request = RequestOf(c, std::move(c.head->headers));
  step.request.body = c.in.substr(c.head->head_bytes, c.head->content_length);
  step.keep_alive = c.head->keep_alive && !c.peer_closed && c.served + 1 < options_.max_requests_per_connection;
  c.in.erase(0, need);
  c.scanned = 0;
  c.newlines = 0;
  c.head.reset();
  return step;
}

// Refuses a request from its head alone (body unread): a body on GET or
// HEAD, a Host this server does not serve, a body for no route, or a head
// the head check refuses. Probes pass (they get no Host check).
std::optional<HttpServerResponse> HttpRequestReader::Admit(const HttpConnection& c) const {
  const RequestHead& head = *c.head;
  const bool get = head.method == "GET" || head.method == "HEAD";
  if (get && head.content_length > 0) return JsonError(400, "a GET or HEAD request carries no body");
  if (get && router_.Probe(head.path)) return std::nullopt;
  if (!host_policy_.Allows(FindHeader(head.headers, "Host"))) {
    return JsonError(
        421, options_.host_refused_hint.empty()
                 ? std::string("this server does not serve the host named in the Host header")
                 : "this server does not serve the host named in the Host header; " + options_.host_refused_hint);
  }
  const HttpServerRequest request = RequestOf(c, head.headers);
  if (head.content_length > 0) {
    HttpServerResponse refusal;
    if (!router_.Resolve(request, &refusal)) return refusal;
  }
  return router_.CheckHead(request);
}

}  // namespace dlq
