#include "app/stats_causes.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "common/count_noun.h"
#include "common/text.h"

namespace dlq {

StatsCauses::StatsCauses(CauseFlags flags, CauseIndex known) : flags_(std::move(flags)), kept_(std::move(known)) {}

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
  const CauseRecord* kept = kept_.Observe(key, record);
  if (!flags_.enabled()) return;
  Group& g = groups_[Slot(key)];
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
    request.known = &kept_.index();
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
  for (CauseRecord& c : found) kept_.Add(std::move(c));
}

}  // namespace dlq
