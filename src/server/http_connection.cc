#include "server/http_connection.h"

#include <sys/socket.h>

#include <cerrno>

namespace dlq {

HttpConnection::ReadResult HttpConnection::Receive(Clock& clock, std::chrono::seconds request_timeout,
                                                   size_t max_head_bytes) {
  char buf[16 * 1024];
  for (int rounds = 0; rounds < 8; ++rounds) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      if (in.empty() && !head && served > 0) deadline = clock.SteadyNow() + request_timeout;
      in.append(buf, static_cast<size_t>(n));
      // A head is never held beyond its limit, nor a body beyond its length.
      size_t cap = head ? head->head_bytes + head->content_length : max_head_bytes + 64;
      if (in.size() > cap + sizeof(buf)) return ReadResult::kOpen;
      continue;
    }
    if (n == 0) return ReadResult::kPeerDone;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ReadResult::kOpen : ReadResult::kFailed;
  }
  return ReadResult::kOpen;
}

bool HttpConnection::Flush() {
  while (out_pos < out.size()) {
    ssize_t n = ::send(fd, out.data() + out_pos, out.size() - out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      out_pos += static_cast<size_t>(n);
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return true;
}

bool HttpConnection::WorthParsing(size_t max_head_bytes, size_t max_headers) {
  bool end = false, bare_cr = false;
  // Only the bytes new since the last call (and the two before them, for
  // a line end split across reads): a client sending a byte at a time
  // costs O(head) in all, not O(head) per byte.
  size_t from = scanned >= 2 ? scanned - 2 : 0;
  for (size_t i = from; i < in.size(); ++i) {
    if (in[i] == '\r') {
      if (i + 1 < in.size() && in[i + 1] != '\n') bare_cr = true;  // refused early by the parser
      continue;
    }
    if (in[i] != '\n') continue;
    if (i >= scanned) ++newlines;
    if ((i >= 1 && in[i - 1] == '\n') || (i >= 2 && in[i - 1] == '\r' && in[i - 2] == '\n')) end = true;
  }
  scanned = in.size();
  return end || bare_cr || in.size() >= max_head_bytes || newlines > max_headers + 1;
}

void HttpConnection::Drain() {
  char buf[4096];
  for (int i = 0; i < 16 && ::recv(fd, buf, sizeof(buf), 0) > 0; ++i) {
  }
}

bool HttpConnection::Discard() {
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  return !(n <= 0 || (discarded += static_cast<size_t>(n)) > (size_t{64} << 10));
}

}  // namespace dlq
