#include "archiver/copy_ledger.h"

namespace dlq {

CopyLedger::Seen CopyLedger::Take(const std::string& message_id) {
  MutexLock lock(mu_);
  auto [it, fresh] = entries_.try_emplace(message_id);
  if (fresh) return Seen::kFirst;
  ++counters_.received_again;
  return it->second.stored ? Seen::kStored : Seen::kHeld;
}

void CopyLedger::Stored(const std::vector<HeldMessage>& held) {
  MutexLock lock(mu_);
  for (const HeldMessage& h : held) {
    Entry& e = entries_[h.message_id];
    if (e.stored) continue;  // a copy riding in the batch of its message, or stored before
    e.stored = true;
    ++counters_.archived;
  }
}

void CopyLedger::TakeBack(Entry& e) {
  if (e.left == Left::kExpired) --counters_.duplicates;
  if (e.left == Left::kFailed) --counters_.delete_failures;
  e.left = Left::kNo;
}

void CopyLedger::Deleted(const std::string& message_id) {
  MutexLock lock(mu_);
  Entry& e = entries_[message_id];
  if (e.deleted) return;
  e.deleted = true;
  ++counters_.deleted;
  TakeBack(e);
}

bool CopyLedger::NotDeleted(const std::string& message_id, bool expired) {
  MutexLock lock(mu_);
  Entry& e = entries_[message_id];
  if (e.deleted) return false;
  const Left left = expired ? Left::kExpired : Left::kFailed;
  if (e.left == left) return false;
  TakeBack(e);
  e.left = left;
  ++(expired ? counters_.duplicates : counters_.delete_failures);
  return true;
}

}  // namespace dlq
