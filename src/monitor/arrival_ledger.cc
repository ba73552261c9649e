#include "monitor/arrival_ledger.h"

#include <algorithm>

namespace dlq {

void ArrivalLedger::Merge(const std::vector<ReceivedMessage>& seen, std::chrono::seconds retention, SystemTime now) {
  if (!seen.empty()) ++generation_;
  for (const ReceivedMessage& m : seen) {
    if (m.deleted) {
      entries_.erase(m.message_id);
      continue;
    }
    auto [it, fresh] = entries_.try_emplace(m.message_id);
    LedgerEntry& e = it->second;
    if (fresh) {
      e.message_id = m.message_id;
      e.sent = m.sent.value_or(now - retention);
      e.first_seen = now;
      e.first_receive_count = m.first_receive_count;
    }
    e.own_receives += m.receives;
  }
}

void ArrivalLedger::PruneExpired(std::chrono::seconds retention, SystemTime now) {
  if (std::erase_if(entries_, [&](const auto& kv) { return kv.second.sent + retention <= now; }) > 0) ++generation_;
}

std::optional<SystemTime> ArrivalLedger::NearestExpiry(std::chrono::seconds retention) const {
  std::optional<SystemTime> sent = OldestSent();
  if (!sent) return std::nullopt;
  return *sent + retention;
}

std::optional<SystemTime> ArrivalLedger::OldestSent() const {
  std::optional<SystemTime> out;
  for (const auto& [id, e] : entries_) out = out ? std::min(*out, e.sent) : e.sent;
  return out;
}

int ArrivalLedger::OwnReceives(const std::string& message_id) const {
  const LedgerEntry* e = Find(message_id);
  return e ? e->own_receives : 0;
}

const LedgerEntry* ArrivalLedger::Find(const std::string& message_id) const {
  auto it = entries_.find(message_id);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<LedgerEntry> ArrivalLedger::Save() const {
  std::vector<LedgerEntry> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  return out;
}

void ArrivalLedger::Load(const std::vector<LedgerEntry>& entries) {
  entries_.clear();
  for (const LedgerEntry& e : entries) entries_[e.message_id] = e;
}

int ConsumerReceiveCount(int reported, int own) {
  return std::max(0, reported - own);
}

}  // namespace dlq
