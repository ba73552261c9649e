// libFuzzer target for the daemon listener's request-head parser
// (server/http_request_parser.h): the bytes a client sends, whole and in two
// arrivals. Nothing may crash; a complete head must keep the parser's
// promises (its length within the input and the limit, a token method, an
// origin-form target, a body within the limit), and a prefix of the input
// must never parse to a different complete head than the whole.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http_request_parser.h"

namespace {

void Check(const dlq::RequestHeadParse& p, std::string_view bytes, const dlq::RequestHeadLimits& limits) {
  using State = dlq::RequestHeadParse::State;
  if (p.state == State::kRefused) {
    if (p.status < 400 || p.status > 505 || p.reason.empty()) std::abort();
    return;
  }
  if (p.state != State::kComplete) return;
  const dlq::RequestHead& h = p.head;
  if (h.head_bytes == 0 || h.head_bytes > bytes.size() || h.head_bytes > limits.max_head_bytes + 64) std::abort();
  if (h.method.empty() || h.target.empty() || h.target[0] != '/' || h.path.empty() || h.path[0] != '/') std::abort();
  if (h.headers.size() > limits.max_headers || h.content_length > limits.max_body_bytes) std::abort();
  if (h.path.find('\0') != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const dlq::RequestHeadLimits defaults;
  const dlq::RequestHeadLimits small{.max_head_bytes = 256, .max_headers = 4, .max_body_bytes = 16};
  for (const dlq::RequestHeadLimits& limits : {defaults, small}) {
    dlq::RequestHeadParse whole = dlq::ParseRequestHead(bytes, limits);
    Check(whole, bytes, limits);
    // The first half, as a slow client would deliver it: a complete head
    // there is the same head as in the whole input.
    std::string_view half = bytes.substr(0, size / 2);
    dlq::RequestHeadParse part = dlq::ParseRequestHead(half, limits);
    Check(part, half, limits);
    if (part.state == dlq::RequestHeadParse::State::kComplete &&
        (whole.state != part.state || whole.head.head_bytes != part.head.head_bytes ||
         whole.head.target != part.head.target)) {
      std::abort();
    }
  }
  return 0;
}
