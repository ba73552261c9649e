#include "server/http_connection_table.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

namespace dlq {

HttpConnectionTable::HttpConnectionTable(Clock& clock, size_t max_connections)
    : clock_(clock), max_connections_(max_connections) {}

HttpConnectionTable::~HttpConnectionTable() {
  CloseAll();
}

uint64_t HttpConnectionTable::Add(int fd, std::string remote_addr, SteadyTime accepted_at, SteadyTime deadline) {
  const uint64_t id = ++next_id_;
  HttpConnection& c = conns_[id];
  c.fd = fd;
  c.serial = id;
  c.remote_addr = std::move(remote_addr);
  c.accepted_at = accepted_at;
  c.deadline = deadline;
  return id;
}

HttpConnection* HttpConnectionTable::Find(uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : &it->second;
}

void HttpConnectionTable::Close(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::close(it->second.fd);
  conns_.erase(it);
}

void HttpConnectionTable::DrainAndClose(uint64_t id) {
  conns_.at(id).Drain();
  Close(id);
}

void HttpConnectionTable::CloseWhere(const std::function<bool(HttpConnection&)>& visit) {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (visit(it->second)) {
      ::close(it->second.fd);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpConnectionTable::CloseAll() {
  for (auto& [id, c] : conns_) ::close(c.fd);
  conns_.clear();
}

bool HttpConnectionTable::Droppable(const HttpConnection& c, SteadyTime now) {
  if (c.phase == HttpConnectionPhase::kLingering) return true;
  if (c.phase != HttpConnectionPhase::kReading) return false;
  return !c.in.empty() || c.served > 0 || now - c.accepted_at >= kFirstBytesGrace;
}

bool HttpConnectionTable::HasRoom() const {
  if (conns_.size() < max_connections_) return true;
  const SteadyTime now = clock_.SteadyNow();
  return std::any_of(conns_.begin(), conns_.end(), [&](const auto& entry) { return Droppable(entry.second, now); });
}

bool HttpConnectionTable::FreeASlot(const std::function<bool(uint64_t id)>& read) {
  for (auto& [id, c] : conns_) {  // map order = accept order
    if (c.phase != HttpConnectionPhase::kLingering) continue;
    DrainAndClose(id);
    return true;
  }
  std::vector<uint64_t> readers;
  for (auto& [id, c] : conns_) {
    if (c.phase == HttpConnectionPhase::kReading) readers.push_back(id);
  }
  for (uint64_t id : readers) {
    if (!read(id)) return true;  // it ended on its own
    const HttpConnection& c = conns_.at(id);
    if (!Droppable(c, clock_.SteadyNow())) continue;  // its request was complete, or it just arrived
    if (c.phase == HttpConnectionPhase::kLingering) {
      DrainAndClose(id);
    } else {
      Close(id);
    }
    return true;
  }
  return false;
}

}  // namespace dlq
