// HttpConnectionTable: the open connections of HttpServer's I/O thread, in
// accept order, and the eviction policy that makes room for a new connection
// when all max_connections slots are taken: the oldest lingering connection
// goes first, else the oldest reader that may be dropped (Droppable), after
// its socket is read, so that a request that turns out complete is answered,
// never dropped. A connection whose request is being answered is never
// dropped.
//
// Thread-safety: none; the I/O thread only. The table owns its connections'
// sockets: closing one (or destroying the table) closes its socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/clock.h"
#include "server/http_connection.h"

namespace dlq {

class HttpConnectionTable {
 public:
  using Map = std::map<uint64_t, HttpConnection>;

  // When the table is full, a connection that has sent nothing yet keeps its
  // slot this long: a client between its connect and its send is not a slow
  // client.
  static constexpr std::chrono::milliseconds kFirstBytesGrace{250};

  // `clock` must outlive the table.
  HttpConnectionTable(Clock& clock, size_t max_connections);
  ~HttpConnectionTable();  // closes every connection
  HttpConnectionTable(const HttpConnectionTable&) = delete;
  HttpConnectionTable& operator=(const HttpConnectionTable&) = delete;

  // Takes the connection on `fd` (the table owns it from now) accepted at
  // `accepted_at`, with its first deadline; its id (increasing: accept order).
  uint64_t Add(int fd, std::string remote_addr, SteadyTime accepted_at, SteadyTime deadline);
  // Null when `id` is closed.
  HttpConnection* Find(uint64_t id);
  // Closes the connection; nothing when `id` is closed already.
  void Close(uint64_t id);
  // Closes it after reading what the client sent (HttpConnection::Drain).
  void DrainAndClose(uint64_t id);
  // Calls `visit` on every connection in accept order and closes those it
  // returns true for.
  void CloseWhere(const std::function<bool(HttpConnection&)>& visit);
  void CloseAll();

  size_t size() const { return conns_.size(); }
  bool empty() const { return conns_.empty(); }
  bool full() const { return conns_.size() >= max_connections_; }
  Map::const_iterator begin() const { return conns_.begin(); }
  Map::const_iterator end() const { return conns_.end(); }

  // Whether `c` may be ended to make room for a new connection: answered and
  // lingering, idle between two requests, part-way through sending one, or
  // silent for kFirstBytesGrace at `now`. Never while its request is being
  // answered.
  static bool Droppable(const HttpConnection& c, SteadyTime now);
  // True when a new connection can be taken: a slot is free, or one is held
  // by a connection that may be dropped.
  bool HasRoom() const;
  // Ends one connection to make room: the oldest lingering one, else the
  // oldest droppable reader. Each reader is first passed to `read` (which
  // reads its socket and answers or queues a request it completes; false
  // when the connection ended). True when a slot was freed (a reader that
  // ended on its own included), false when none could go.
  bool FreeASlot(const std::function<bool(uint64_t id)>& read);

 private:
  Clock& clock_;
  const size_t max_connections_;
  Map conns_;
  uint64_t next_id_ = 0;
};

}  // namespace dlq
