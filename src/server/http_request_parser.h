// ParseRequestHead: the HTTP/1.x request head (request line and header
// fields, RFC 9112) as the daemon's listener accepts it from untrusted clients.
//
// A pure function of the bytes received so far: it returns kIncomplete until
// the blank line that ends the head is in, kComplete with the parsed head, or
// kRefused with the status to answer and a one-line reason (the connection is
// then closed). It refuses, without reading further:
// - a head longer than max_head_bytes or with more than max_headers fields
//   (431), even before the blank line arrives;
// - anything ambiguous a proxy in front could read differently (400): a bare
//   CR, obs-fold, whitespace before a field's colon, a control character in a
//   field, two Content-Length fields, two Host fields, Content-Length with
//   Transfer-Encoding;
// - Transfer-Encoding (411: the body must come with a Content-Length), a body
//   over max_body_bytes (413), a version other than HTTP/1.0 and HTTP/1.1
//   (505), a request target that is not origin-form ("/path?query"), or whose
//   path has a bad or NUL percent-escape (400).
// Lines may end in CRLF or LF. Empty lines before the request line are
// skipped (RFC 9112 2.2).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "aws/http.h"

namespace dlq {

struct RequestHeadLimits {
  size_t max_head_bytes = size_t{16} << 10;  // request line + fields + blank line
  size_t max_headers = 64;
  size_t max_body_bytes = 1 << 20;
};

struct RequestHead {
  std::string method;  // as sent: a token ("GET", "POST", ...)
  std::string target;  // raw request target
  std::string path;    // percent-decoded path, without the query
  std::string query;   // raw, after '?', without it
  int minor_version = 1;
  HttpHeaders headers;        // names as sent, values trimmed
  size_t head_bytes = 0;      // bytes of the head, blank line included (the body starts here)
  size_t content_length = 0;  // 0 when absent
  bool keep_alive = true;     // HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive"
  bool expect_continue = false;
};

struct RequestHeadParse {
  enum class State { kIncomplete, kComplete, kRefused };
  State state = State::kIncomplete;
  RequestHead head;    // kComplete
  int status = 0;      // kRefused: 400, 411, 413, 431 or 505
  std::string reason;  // kRefused: one line, safe to echo (no raw input bytes)
};

RequestHeadParse ParseRequestHead(std::string_view received, const RequestHeadLimits& limits);

// "%41b" -> "Ab". False on a malformed escape or an escaped NUL.
bool PercentDecodePath(std::string_view in, std::string& out);

}  // namespace dlq
