#include "causes/kept_causes.h"

#include <cstdint>

namespace dlq {

const CauseRecord* KeptCauses::Observe(const std::optional<std::string>& key, const ArchiveRecord& record) {
  auto& answered = answered_[Slot(key)];
  const CauseRecord* kept = index_.Find(record.queue, record.message_id);
  if (kept != nullptr) answered.emplace(record.queue, record.message_id);
  return kept;
}

void KeptCauses::Add(CauseRecord record) {
  auto it = answered_.find(record.group_key.empty() ? "!" : "=" + record.group_key);
  if (it != answered_.end()) it->second.emplace(record.queue, record.message_id);
  index_.Add(std::move(record));
}

void KeptCauses::Apply(StatsReport& report) const {
  bool any = false;
  for (GroupStats& g : report.groups) {
    auto it = answered_.find(Slot(g.key));
    if (it == answered_.end() || it->second.empty()) continue;
    std::map<std::string, std::pair<uint64_t, const CauseRecord*>> by_key, by_status;
    GroupCause cause;
    for (const auto& [queue, id] : it->second) {
      const CauseRecord* r = index_.Find(queue, id);
      if (r == nullptr) continue;
      ++cause.answered;
      auto& slot = r->cause ? by_key[r->cause->key] : by_status[std::string(CauseStatusName(r->status))];
      if (slot.first++ == 0) slot.second = r;
    }
    auto most = [](const auto& m) {
      auto best = m.begin();
      for (auto i = m.begin(); i != m.end(); ++i) {
        if (i->second.first > best->second.first) best = i;
      }
      return best;
    };
    if (!by_key.empty()) {
      auto best = most(by_key);
      cause.key = best->first;
      cause.found = best->second.first;
      cause.type = best->second.second->cause->type;
      cause.message = best->second.second->cause->message;
    } else if (!by_status.empty()) {
      auto best = most(by_status);
      cause.absence = best->first;
      cause.reason = best->second.second->reason;
    }
    if (cause.answered == 0) continue;
    g.cause = std::move(cause);
    any = true;
  }
  if (any) MergeGroupsByCause(report);
}

}  // namespace dlq
