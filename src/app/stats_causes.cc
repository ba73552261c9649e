#include "app/stats_causes.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "common/count_noun.h"
#include "common/text.h"

namespace dlq {

StatsCauses::StatsCauses(CauseFlags flags, CauseIndex known) : flags_(std::move(flags)), index_(std::move(known)) {}

void StatsCauses::AddSample(Group& g, LookupMessage m, bool reusable) const {
  auto rank = [](bool r, const LookupMessage& x) { return std::make_tuple(!r, x.sent_ms, x.message_id); };
  if (g.samples.size() < flags_.samples) {
    g.samples.push_back(std::move(m));
    g.reusable.push_back(reusable);
    return;
  }
  // Replace the worst sample when this one ranks before it.
  size_t worst = 0;
  for (size_t i = 1; i < g.samples.size(); ++i) {
    if (rank(g.reusable[i], g.samples[i]) > rank(g.reusable[worst], g.samples[worst])) worst = i;
  }
  if (rank(reusable, m) < rank(g.reusable[worst], g.samples[worst])) {
    g.samples[worst] = std::move(m);
    g.reusable[worst] = reusable;
  }
}

void StatsCauses::Observe(const std::optional<std::string>& key, const ArchiveRecord& record) {
  Group& g = groups_[Slot(key)];
  const CauseRecord* kept = index_.Find(record.queue, record.message_id);
  if (kept != nullptr) g.answered.emplace(record.queue, record.message_id);
  if (!flags_.enabled()) return;
  if (!queues_.contains(record.queue)) {
    QueueInfo q;
    q.name = record.queue;
    q.url = record.queue_url;
    q.region = record.region;
    q.account_id = record.account_id;
    if (!q.region.empty() && !q.account_id.empty()) {
      q.arn = fmt::format("arn:aws:sqs:{}:{}:{}", q.region, q.account_id, q.name);
    }
    queues_.emplace(record.queue, std::move(q));
  }
  const bool reusable = kept != nullptr && ReusableCause(*kept, flags_.NamedLogGroups());
  AddSample(g, LookupMessageOf(record, key.value_or("")), reusable);
}

void StatsCauses::LookUp(ObjectStore& store, const Destination& from, const ExplainClients& clients, std::FILE* err) {
  std::map<std::string, std::vector<LookupMessage>> by_queue;
  for (const auto& [slot, g] : groups_) {
    for (const LookupMessage& m : g.samples) by_queue[m.queue].push_back(m);
  }
  int calls_left = flags_.max_calls;
  std::vector<CauseRecord> found;
  for (auto& [queue, messages] : by_queue) {
    const QueueInfo& q = queues_.at(queue);
    if (q.url.empty()) {
      fmt::print(err, "warning: stats: causes of {} not looked up: its records carry no queue URL\n",
                 TerminalSafe(queue));
      continue;
    }
    ExplainRequest request;
    request.dlq = q;
    request.named_log_groups = flags_.NamedLogGroups();
    request.messages = std::move(messages);
    request.samples_per_group = flags_.samples;
    request.known = &index_;
    request.lookup.max_filter_calls = std::max(1, calls_left);
    ExplainResult r = ExplainFailures(request, clients);
    calls_left -= r.calls.filter_log_events;
    if (r.consumers) {
      for (const std::string& line : r.consumers->Describe()) fmt::print(err, "causes: {}\n", TerminalSafe(line));
    }
    fmt::print(err, "{} ({})\n", TerminalSafe(DescribeExplainCalls(r)), TerminalSafe(queue));
    for (CauseRecord& c : r.records) found.push_back(std::move(c));
    if (calls_left <= 0) break;
  }
  if (found.empty()) return;
  auto written = WriteCauseRecords(store, ArchivePrefix(from), found, clients.clock.Now());
  if (!written.ok()) {
    fmt::print(err, "warning: stats: the causes found are shown but not kept: {}\n",
               TerminalSafe(written.status().message()));
  } else {
    fmt::print(err, "causes: {} kept in {}\n", CountNoun(written->records, "answer", "answers"),
               TerminalSafe(fmt::format("{}", fmt::join(written->keys, ", "))));
  }
  for (CauseRecord& c : found) {
    auto it = groups_.find(c.group_key.empty() ? "!" : "=" + c.group_key);
    if (it != groups_.end()) it->second.answered.emplace(c.queue, c.message_id);
    index_.Add(std::move(c));
  }
}

void StatsCauses::Apply(StatsReport& report) const {
  bool any = false;
  for (GroupStats& g : report.groups) {
    auto it = groups_.find(Slot(g.key));
    if (it == groups_.end() || it->second.answered.empty()) continue;
    std::map<std::string, std::pair<uint64_t, const CauseRecord*>> by_key, by_status;
    GroupCause cause;
    for (const auto& [queue, id] : it->second.answered) {
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
