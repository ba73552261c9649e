// HttpConnection: one client connection of HttpServer (server/http_server.h)
// and the socket I/O of its phases: reading a request, waiting for its
// answer, writing it, and lingering after a close.
//
// Thread-safety: used by the server's I/O thread only; `cancelled` is shared
// with the worker answering the connection's request. The connection does not
// close its socket (HttpConnectionTable does).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "server/http_request_parser.h"

namespace dlq {

enum class HttpConnectionPhase { kReading, kWorking, kWriting, kLingering };

struct HttpConnection {
  enum class ReadResult { kOpen, kPeerDone, kFailed };

  // Reads what is there (the bytes before a half-close included), never
  // holding a head beyond max_head_bytes nor a body beyond its length by more
  // than one read. The first byte of a later request on a kept-alive
  // connection restarts its deadline: request_timeout from `clock`'s now.
  ReadResult Receive(Clock& clock, std::chrono::seconds request_timeout, size_t max_head_bytes);
  // Sends pending bytes of `out`; false on a failed connection.
  bool Flush();
  // True when `in` may now hold a whole head (or enough to refuse it: a bare
  // CR, max_head_bytes or more, more than max_headers fields). Scans only
  // the bytes new since the last call.
  bool WorthParsing(size_t max_head_bytes, size_t max_headers);
  // Reads and discards a bounded amount of what the client sent, so that a
  // close does not reset the connection over unread input.
  void Drain();
  // Lingering: reads and discards input; false once the client has closed,
  // failed, or sent more than 64 KiB since the answer.
  bool Discard();

  int fd = -1;
  uint64_t serial = 0;  // accept order
  std::string remote_addr;
  HttpConnectionPhase phase = HttpConnectionPhase::kReading;
  std::string in;
  size_t scanned = 0;   // bytes of `in` searched for the end of the head
  size_t newlines = 0;  // in in[0, scanned)
  std::optional<RequestHead> head;
  std::string out;
  size_t out_pos = 0;
  bool close_after_write = false;
  bool peer_closed = false;
  size_t served = 0;
  size_t discarded = 0;  // lingering
  SteadyTime accepted_at;
  SteadyTime deadline;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace dlq
