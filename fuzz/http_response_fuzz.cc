// libFuzzer target: SocketTransport's wire parsing (aws/http_response_parser.h)
// must never crash, hang or throw, whatever a peer sends. The first byte picks
// the request method and where the body is split; the rest is a response: the
// head up to the first blank line, then a chunked body. Checked: a rejection
// says why in a bounded message; a parsed head has a valid status and its
// framing agrees with the method; the chunked body decodes to the same bytes
// and stops at the same place whether fed whole or in two pieces.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "aws/http_response_parser.h"

namespace {

// At most 64 bytes of input are quoted, each at most 4 characters escaped.
bool BadError(const dlq::Status& s) {
  return s.ok() || s.message().empty() || s.message().size() > 64 * 4 + 100 || s.code() != dlq::ErrorCode::kUnavailable;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string_view method = (control & 1) != 0 ? "HEAD" : "GET";

  const size_t blank = text.find("\r\n\r\n");
  const std::string_view head = text.substr(0, blank == std::string_view::npos ? text.size() : blank + 2);
  auto parsed = dlq::ParseResponseHead(head, method);
  if (!parsed.ok()) {
    if (BadError(parsed.status())) __builtin_trap();
  } else {
    if (parsed->status < 100 || parsed->status > 999) __builtin_trap();
    if (method == "HEAD" && parsed->framing != dlq::ResponseHead::Framing::kNone) __builtin_trap();
    if (parsed->framing == dlq::ResponseHead::Framing::kUntilClose && parsed->keep_alive) __builtin_trap();
  }

  const std::string_view body = blank == std::string_view::npos ? text : text.substr(blank + 4);
  dlq::ChunkedDecoder whole;
  std::string whole_out;
  auto whole_used = whole.Feed(body, whole_out);
  if (!whole_used.ok()) {
    if (BadError(whole_used.status())) __builtin_trap();
    return 0;
  }
  if (*whole_used > body.size() || whole_out.size() > body.size()) __builtin_trap();
  if (*whole_used < body.size() && !whole.done()) __builtin_trap();  // stops early only at the end of the body

  const size_t split = body.empty() ? 0 : (control >> 1) % (body.size() + 1);
  dlq::ChunkedDecoder pieces;
  std::string pieces_out;
  auto first = pieces.Feed(body.substr(0, split), pieces_out);
  if (!first.ok()) __builtin_trap();  // a prefix of acceptable input is acceptable
  size_t used = *first;
  if (!pieces.done()) {
    auto second = pieces.Feed(body.substr(split), pieces_out);
    if (!second.ok()) __builtin_trap();
    used += *second;
  }
  if (used != *whole_used || pieces_out != whole_out || pieces.done() != whole.done()) __builtin_trap();
  return 0;
}
