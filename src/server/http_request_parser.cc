#include "server/http_request_parser.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {
namespace {

using State = RequestHeadParse::State;

RequestHeadParse Refuse(int status, std::string reason) {
  RequestHeadParse out;
  out.state = State::kRefused;
  out.status = status;
  out.reason = std::move(reason);
  return out;
}

// RFC 9110 5.6.2 tchar.
bool IsTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits `text` into lines ending in LF (a CR before it is dropped). Returns
// false on a CR not followed by LF.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  // The next complete line into `line`; false when no complete line is left
  // (`*bad` set when a bare CR was met).
  bool Next(std::string_view& line, bool* bad) {
    size_t lf = text_.find('\n', pos_);
    std::string_view rest = text_.substr(pos_, lf == std::string_view::npos ? std::string_view::npos : lf - pos_);
    size_t cr = rest.find('\r');
    if (cr != std::string_view::npos && cr + 1 != rest.size()) {
      *bad = true;
      return false;
    }
    if (lf == std::string_view::npos) return false;
    line = cr == std::string_view::npos ? rest : rest.substr(0, cr);
    pos_ = lf + 1;
    return true;
  }
  size_t consumed() const { return pos_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// Parses "METHOD SP TARGET SP HTTP/1.x" into `head`; empty on success.
RequestHeadParse ParseRequestLine(std::string_view line, RequestHead& head) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Refuse(400, "malformed request line (expected METHOD SP TARGET SP HTTP/1.1)");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Refuse(400, "malformed request method");
  if (version == "HTTP/1.1") {
    head.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    head.minor_version = 0;
  } else if (version.starts_with("HTTP/")) {
    return Refuse(505, "HTTP version not supported (HTTP/1.0 and HTTP/1.1 only)");
  } else {
    return Refuse(400, "malformed HTTP version");
  }
  if (target.empty() || target[0] != '/') return Refuse(400, "request target must be a path starting with '/'");
  for (unsigned char c : target) {
    if (c <= 0x20 || c >= 0x7f) return Refuse(400, "request target holds a control, space or non-ASCII byte");
  }
  head.method = std::string(method);
  head.target = std::string(target);
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (q != std::string_view::npos) head.query = std::string(target.substr(q + 1));
  if (!PercentDecodePath(raw_path, head.path)) return Refuse(400, "request path holds a malformed or NUL %-escape");
  return {};
}

// Applies the framing fields (Content-Length, Transfer-Encoding, Connection,
// Expect) of a complete head; empty on success.
RequestHeadParse CheckFraming(RequestHead& head, const RequestHeadLimits& limits) {
  const std::string* length = nullptr;
  bool transfer_encoding = false;
  bool close = head.minor_version == 0;
  bool host = false;
  for (const auto& [name, value] : head.headers) {
    if (IEquals(name, "Host")) {
      // RFC 9112 3.2: which one a proxy in front used is anyone's guess.
      if (host) return Refuse(400, "more than one Host field");
      host = true;
    } else if (IEquals(name, "Content-Length")) {
      if (length != nullptr) return Refuse(400, "more than one Content-Length field");
      length = &value;
    } else if (IEquals(name, "Transfer-Encoding")) {
      transfer_encoding = true;
    } else if (IEquals(name, "Connection")) {
      std::string v = ToLower(value);
      if (v.find("close") != std::string::npos) close = true;
      if (head.minor_version == 0 && v.find("keep-alive") != std::string::npos) close = false;
    } else if (IEquals(name, "Expect")) {
      if (!IEquals(value, "100-continue")) return Refuse(417, "only 'Expect: 100-continue' is understood");
      head.expect_continue = true;
    }
  }
  if (transfer_encoding && length != nullptr) return Refuse(400, "both Content-Length and Transfer-Encoding");
  if (transfer_encoding) return Refuse(411, "Transfer-Encoding is not accepted; send the body with a Content-Length");
  if (length != nullptr) {
    if (length->empty() || length->size() > 12) return Refuse(400, "malformed Content-Length");
    size_t n = 0;
    for (char c : *length) {
      if (c < '0' || c > '9') return Refuse(400, "malformed Content-Length");
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n > limits.max_body_bytes) {
      return Refuse(413, fmt::format("request body of {} bytes is over the limit of {}", n, limits.max_body_bytes));
    }
    head.content_length = n;
  }
  head.keep_alive = !close;
  return {};
}

}  // namespace

bool PercentDecodePath(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = HexValue(in[i + 1]);
    int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return false;
    out += c;
    i += 2;
  }
  return true;
}

RequestHeadParse ParseRequestHead(std::string_view received, const RequestHeadLimits& limits) {
  // Empty lines before the request line.
  size_t start = 0;
  while (start < received.size() && start < 64 && (received[start] == '\r' || received[start] == '\n')) ++start;
  std::string_view text = received.substr(start);
  const size_t window = std::min(text.size(), limits.max_head_bytes);
  LineReader lines(text.substr(0, window));
  RequestHeadParse out;
  std::string_view line;
  bool bad = false;
  bool have_request_line = false;
  while (lines.Next(line, &bad)) {
    if (!have_request_line) {
      RequestHeadParse r = ParseRequestLine(line, out.head);
      if (r.state == State::kRefused) return r;
      have_request_line = true;
      continue;
    }
    if (line.empty()) {
      RequestHeadParse r = CheckFraming(out.head, limits);
      if (r.state == State::kRefused) return r;
      out.state = State::kComplete;
      out.head.head_bytes = start + lines.consumed();
      return out;
    }
    if (line[0] == ' ' || line[0] == '\t') return Refuse(400, "obsolete line folding in a header field");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Refuse(400, "header field without ':'");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return Refuse(400, "malformed header field name");
    std::string_view value = Trim(line.substr(colon + 1));
    for (unsigned char c : value) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) return Refuse(400, "control character in a header field value");
    }
    if (out.head.headers.size() >= limits.max_headers) {
      return Refuse(431, fmt::format("more than {} header fields", limits.max_headers));
    }
    out.head.headers.emplace_back(std::string(name), std::string(value));
  }
  if (bad) return Refuse(400, "bare CR in the request head");
  if (text.size() >= limits.max_head_bytes) {
    return Refuse(431, fmt::format("request head over {} bytes", limits.max_head_bytes));
  }
  return RequestHeadParse{};  // incomplete
}

}  // namespace dlq
