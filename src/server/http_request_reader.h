// HttpRequestReader: what the bytes a connection of HttpServer has received
// amount to: not a request yet, a request refused from its head alone, or a
// complete request with its body.
//
// A head is parsed (ParseRequestHead) once it may be whole, then judged
// before its body is read: a body on GET or HEAD (400), a Host this server
// does not serve (421, HostPolicy), a body for no route, or a head the
// router's head check refuses. Probe routes skip the Host check. A refused
// request's bytes are dropped unread; an admitted one that expects it is sent
// "100 Continue".
//
// Thread-safety: Next is const and may run on several threads, each with its
// own connection; the router and options must outlive the reader.
#pragma once

#include <optional>

#include "server/host_policy.h"
#include "server/http_connection.h"
#include "server/http_message.h"
#include "server/http_request_parser.h"
#include "server/http_router.h"
#include "server/http_server.h"

namespace dlq {

class HttpRequestReader {
 public:
  struct Step {
    enum class Kind {
      kWait,     // more bytes are needed (or the connection is not reading)
      kRefused,  // answer `refusal` and close; the request's bytes are dropped
      kRequest,  // `request` is complete and taken out of the connection's input
      kFailed,   // sending "100 Continue" failed: close the connection
    };
    Kind kind = Kind::kWait;
    HttpServerResponse refusal;
    bool head_only = false;  // kRefused: a HEAD request (the refusal without its body)
    HttpServerRequest request;
    bool keep_alive = false;  // kRequest: the connection may serve another one after it
  };

  HttpRequestReader(const HttpRouter& router, const HttpServerOptions& options);

  // The next step for `c` from what it has received: reads its head and body
  // out of c.in, keeping the parse state in `c` between calls.
  Step Next(HttpConnection& c) const;

 private:
  std::optional<HttpServerResponse> Admit(const HttpConnection& c) const;

  const HttpRouter& router_;
  const HttpServerOptions& options_;
  const RequestHeadLimits limits_;
  const HostPolicy host_policy_;
};

}  // namespace dlq
