#include "causes/archived_causes.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "archive/gzip.h"
#include "query/fingerprint.h"

namespace dlq {
namespace {

// An archive object read back: at most this much once decompressed (the
// drainer's objects are far smaller).
constexpr size_t kMaxObjectBytes = size_t{1} << 30;

// The records of `keys`, at most `max` of them; what cannot be read is
// counted in `unreadable` and skipped.
std::vector<ArchiveRecord> ReadRecords(ObjectStore& store, const std::vector<std::string>& keys, size_t max,
                                       size_t& unreadable) {
  std::vector<ArchiveRecord> records;
  for (const std::string& key : keys) {
    if (records.size() >= max) break;
    Result<std::string> gz = store.Get(key);
    Result<std::string> text = gz.ok() ? GzipDecompress(*gz, kMaxObjectBytes) : Result<std::string>(gz.status());
    if (!text.ok()) {
      ++unreadable;
      continue;
    }
    std::string_view rest = *text;
    while (!rest.empty() && records.size() < max) {
      const size_t end = rest.find('\n');
      std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (line.empty()) continue;
      Result<ArchiveRecord> r = ParseRecordJson(line);
      if (r.ok()) {
        records.push_back(std::move(*r));
      } else {
        ++unreadable;
      }
    }
  }
  return records;
}

// Reads the queue's sidecar into the cache once.
Status EnsureKnown(const ArchivedCausesRequest& request, ObjectStore& store, ArchivedCausesCache& cache) {
  if (cache.known) return Status::Ok();
  Result<CauseIndex> read = ReadCauseRecords(store, request.archive_prefix, {request.dlq.name});
  if (!read.ok()) return read.status();
  for (const CauseRecord* r : read->All()) {
    if (ReusableCause(*r, request.named_log_groups)) ++cache.reusable_per_group[r->group_key];
  }
  cache.known = std::move(*read);
  return Status::Ok();
}

std::string FirstDenial(const std::vector<CauseRecord>& records, const ConsumerMap* consumers) {
  for (const CauseRecord& r : records) {
    if (r.status == CauseStatus::kAccessDenied) return r.reason;
  }
  return consumers == nullptr || consumers->denied.ok() ? "" : consumers->denied.message();
}

}  // namespace

ArchivedCausesResult LookUpArchivedCauses(const ArchivedCausesRequest& request, ArchivedCausesCache& cache,
                                          const ArchivedCausesClients& clients) {
  ArchivedCausesResult out;
  const std::vector<ArchiveRecord> records =
      ReadRecords(clients.store, request.keys, request.max_messages, out.unreadable);
  out.messages_read = records.size();
  out.sidecar = EnsureKnown(request, clients.store, cache);

  // The groups with fewer kept answers than `samples` get their earliest
  // messages looked up.
  std::vector<LookupMessage> chosen;
  std::map<std::string, size_t> chosen_per_group;
  for (const ArchiveRecord& r : records) {
    std::string key = FailureGroupKey(r);
    if (clients.on_message && !clients.on_message(r, key)) continue;
    if (!out.sidecar.ok()) continue;
    const size_t have = cache.reusable_per_group[key] + chosen_per_group[key];
    if (have >= request.samples || cache.known->Find(r.queue, r.message_id) != nullptr) continue;
    LookupMessage m = LookupMessageOf(r, key);
    auto arrival = request.arrivals_ms.find(r.message_id);
    if (arrival != request.arrivals_ms.end()) m.dlq_arrival_ms = arrival->second;
    chosen.push_back(std::move(m));
    ++chosen_per_group[key];
  }
  if (chosen.empty()) return out;

  LookupCalls discovery_calls;
  const ConsumerMap* consumers = clients.consumers ? &clients.consumers(discovery_calls) : nullptr;
  ExplainRequest explain;
  explain.dlq = request.dlq;
  explain.named_log_groups = request.named_log_groups;
  explain.messages = std::move(chosen);
  explain.samples_per_group = request.samples;
  explain.known = &*cache.known;
  explain.consumers = consumers;
  explain.lookup.max_filter_calls = request.max_filter_calls;
  out.explain = ExplainFailures(explain, ExplainClients{clients.sqs, clients.lambda, clients.logs, clients.clock});
  out.explain.calls.sqs += discovery_calls.sqs;
  out.explain.calls.lambda += discovery_calls.lambda;
  if (consumers == nullptr && out.explain.consumers) consumers = &*out.explain.consumers;

  const std::vector<CauseRecord>& answers = out.explain.records;
  if (!answers.empty()) {
    auto written = WriteCauseRecords(clients.store, request.archive_prefix, answers, clients.clock.Now());
    if (!written.ok()) {
      out.kept = written.status();
    } else {
      out.kept_in = fmt::format("{}", fmt::join(written->keys, ","));
      for (const CauseRecord& c : answers) {
        if (ReusableCause(c, request.named_log_groups)) ++cache.reusable_per_group[c.group_key];
        cache.known->Add(c);
      }
    }
  }
  for (const CauseRecord& c : answers) {
    if (c.status == CauseStatus::kFound) ++out.found;
  }
  out.denial = FirstDenial(answers, consumers);
  return out;
}

}  // namespace dlq
