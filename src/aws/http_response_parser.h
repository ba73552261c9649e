// HTTP/1.1 responses off the wire, for SocketTransport: the head (status line
// and header fields), the body's framing (RFC 9112 section 6.3), and a decoder
// for chunked bodies. Pure functions over bytes; the transport does the I/O.
// Everything here parses outside input: malformed input is kUnavailable (a
// broken or hostile peer; the call may be retried on a new connection), never
// a crash, and no message quotes more than 64 bytes of the input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "aws/http.h"
#include "common/status.h"

namespace dlq {

struct ResponseHead {
  enum class Framing {
    kNone,        // no body: HEAD, 1xx, 204, 304
    kLength,      // exactly content_length bytes
    kChunked,     // Transfer-Encoding ending in chunked (ChunkedDecoder)
    kUntilClose,  // everything until the peer closes; the connection is not reused
  };
  int status = 0;
  HttpHeaders headers;  // in order; names as sent, values without surrounding blanks
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;  // for kLength
  bool keep_alive = true;       // false for HTTP/1.0, "Connection: close" and kUntilClose
};

// `head` is the status line and header lines, each ending in CRLF (a bare LF
// is accepted), without the blank line that ends them. `method` is the
// request's (a HEAD response has no body). Rejects: a status line that is not
// "HTTP/1.x NNN ...", header lines without a colon or with blanks in the name,
// obsolete line folding, a Content-Length that is not a decimal number (or
// several that differ), and a Transfer-Encoding beside a Content-Length.
Result<ResponseHead> ParseResponseHead(std::string_view head, std::string_view method);

// Decodes a chunked body incrementally: Feed the bytes as they arrive.
// Chunk extensions and trailer fields are read and dropped. A size line or
// trailer line longer than 4 KiB, or a chunk size above 2^62, is an error.
class ChunkedDecoder {
 public:
  // Appends the decoded bytes of `in` to `out` and returns how many bytes of
  // `in` it consumed: all of them, unless the body ended inside `in` (the
  // rest belongs to whatever follows the body).
  Result<size_t> Feed(std::string_view in, std::string& out);
  // True once the last chunk and the trailer section have been read.
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;  // data bytes left in the current chunk
  std::string line_;        // a size or trailer line read so far
};

}  // namespace dlq
