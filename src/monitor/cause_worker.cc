#include "monitor/cause_worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "archive/gzip.h"
#include "archive/record.h"
#include "causes/explain.h"
#include "common/log.h"
#include "query/fingerprint.h"

namespace dlq {

namespace {

// An archive object read back: at most this much once decompressed (the
// drainer's objects are far smaller).
constexpr size_t kMaxObjectBytes = size_t{1} << 30;

// The records of the objects a run wrote, at most `max` of them. Objects or
// lines that cannot be read are counted and skipped: a lookup is best effort,
// the archive itself is not touched.
std::vector<ArchiveRecord> ReadRunRecords(ObjectStore& store, const std::vector<std::string>& keys, size_t max,
                                          size_t& unreadable) {
  std::vector<ArchiveRecord> records;
  for (const std::string& key : keys) {
    if (records.size() >= max) break;
    Result<std::string> gz = store.Get(key);
    if (!gz.ok()) {
      ++unreadable;
      continue;
    }
    Result<std::string> text = GzipDecompress(*gz, kMaxObjectBytes);
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

// The first access denial among a job's answers, or the consumers', as text.
std::string FirstDenial(const std::vector<CauseRecord>& records, const ConsumerMap& consumers) {
  for (const CauseRecord& r : records) {
    if (r.status == CauseStatus::kAccessDenied) return r.reason;
  }
  return consumers.denied.ok() ? "" : consumers.denied.message();
}

}  // namespace

std::vector<NamedLogGroup> NamedConsumerLogs(const GroupSettings& group, const std::string& queue) {
  std::vector<NamedLogGroup> out;
  for (std::string& log_group : group.ConsumerLogsFor(queue)) out.push_back({std::move(log_group), "consumer_logs"});
  return out;
}

CauseWorker::CauseWorker(Clock& clock, DaemonMetrics* metrics, CauseWorkerOptions options)
    : clock_(clock), metrics_(metrics), options_(options) {}

CauseWorker::~CauseWorker() {
  Stop();
}

void CauseWorker::Start() {
  MutexLock lock(mu_);
  if (started_ || stop_) return;
  started_ = true;
  thread_ = std::thread([this] { Work(); });
}

void CauseWorker::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    jobs_.clear();
  }
  wake_.NotifyAll();
  idle_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

bool CauseWorker::Submit(CauseJob job) {
  {
    MutexLock lock(mu_);
    if (stop_ || disabled_.contains(job.group)) return false;
    if (jobs_.size() < options_.max_pending) {
      jobs_.push_back(std::move(job));
      wake_.NotifyOne();
      return true;
    }
  }
  if (metrics_ != nullptr) metrics_->cause_jobs_dropped_total.WithLabels({job.dlq.name, job.dlq.region}).Add(1);
  Log().Log(LogLevel::kWarn, "causes_job_dropped",
            {{"queue", job.dlq.name},
             {"group", job.group},
             {"objects", static_cast<uint64_t>(job.keys.size())},
             {"reason", fmt::format("{} cause lookups are already waiting; these messages are archived, their causes "
                                    "are not looked up now (stats --causes looks them up later)",
                                    options_.max_pending)}});
  return false;
}

void CauseWorker::RunPending() {
  while (true) {
    CauseJob job;
    {
      MutexLock lock(mu_);
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Process(job);
  }
}

void CauseWorker::Work() {
  while (true) {
    CauseJob job;
    {
      MutexLock lock(mu_);
      running_ = false;
      if (jobs_.empty()) idle_.NotifyAll();
      wake_.Wait(mu_, [this]() DLQ_REQUIRES(mu_) { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
    }
    Process(job);
  }
}

void CauseWorker::WaitIdle() {
  MutexLock lock(mu_);
  if (!started_) return;
  idle_.Wait(mu_, [this]() DLQ_REQUIRES(mu_) { return stop_ || (jobs_.empty() && !running_); });
}

void CauseWorker::EnableAll() {
  MutexLock lock(mu_);
  disabled_.clear();
}

size_t CauseWorker::pending() const {
  MutexLock lock(mu_);
  return jobs_.size();
}

bool CauseWorker::Disabled(const std::string& group) const {
  MutexLock lock(mu_);
  return disabled_.contains(group);
}

std::vector<CauseGroupSummary> CauseWorker::TopGroups(const std::string& queue, size_t n) const {
  std::vector<CauseGroupSummary> out;
  MutexLock lock(mu_);
  auto q = tallies_.find(queue);
  if (q == tallies_.end()) return out;
  for (const auto& [key, t] : q->second) {
    CauseGroupSummary s;
    s.key = key;
    s.messages = t.messages;
    s.answered = t.answered;
    s.example_id = t.example_id;
    auto most = [](const auto& m, auto count) {
      auto best = m.begin();
      for (auto i = m.begin(); i != m.end(); ++i) {
        if (count(i->second) > count(best->second)) best = i;
      }
      return best;
    };
    if (!t.causes.empty()) {
      const auto& best = most(t.causes, [](const auto& v) { return v.first; })->second;
      s.found = best.first;
      s.cause_type = best.second.type;
      s.cause_message = best.second.message;
    } else if (!t.absences.empty()) {
      s.absence = most(t.absences, [](uint64_t v) { return v; })->first;
    }
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const CauseGroupSummary& a, const CauseGroupSummary& b) {
    return std::tie(b.messages, a.key) < std::tie(a.messages, b.key);
  });
  if (out.size() > n) out.resize(n);
  return out;
}

bool CauseWorker::EnsureKnown(const CauseJob& job, QueueCache& cache) {
  if (cache.known) return true;
  Result<CauseIndex> read = ReadCauseRecords(*job.clients.store, job.archive_prefix, {job.dlq.name});
  if (!read.ok()) {
    Log().Log(LogLevel::kWarn, "causes_sidecar_unreadable",
              {{"queue", job.dlq.name},
               {"group", job.group},
               {"error", read.status().message()},
               {"note", "no cause is looked up until the kept answers can be read (none is looked up twice)"}});
    return false;
  }
  for (const CauseRecord* r : read->All()) {
    if (ReusableCause(*r, job.named_log_groups)) ++cache.reusable_per_group[r->group_key];
  }
  cache.known = std::move(*read);
  return true;
}

const ConsumerMap& CauseWorker::Consumers(const CauseJob& job, QueueCache& cache, int& sqs_calls, int& lambda_calls) {
  const SystemTime now = clock_.Now();
  if (!cache.consumers || now - cache.consumers_at >= options_.consumers_ttl) {
    cache.consumers = DiscoverConsumers(*job.clients.sqs, *job.clients.lambda, job.dlq, job.named_log_groups);
    cache.consumers_at = now;
    sqs_calls = cache.consumers->sqs_calls;
    lambda_calls = cache.consumers->lambda_calls;
    for (const std::string& line : cache.consumers->Describe()) {
      Log().Log(LogLevel::kInfo, "causes_consumer", {{"queue", job.dlq.name}, {"consumer", line}});
    }
  }
  return *cache.consumers;
}

void CauseWorker::Answered(const CauseJob& job, const std::vector<CauseRecord>& records) {
  MutexLock lock(mu_);
  auto& groups = tallies_[job.dlq.name];
  for (const CauseRecord& r : records) {
    GroupTally& t = groups[r.group_key];
    ++t.answered;
    if (r.cause) {
      auto& slot = t.causes[r.cause->key];
      if (slot.first++ == 0) slot.second = *r.cause;
    } else {
      ++t.absences[std::string(CauseStatusName(r.status))];
    }
  }
}

void CauseWorker::Process(const CauseJob& job) {
  MutexLock process(process_mu_);
  if (job.clients.store == nullptr || job.clients.sqs == nullptr || job.clients.logs == nullptr ||
      job.clients.lambda == nullptr) {
    return;
  }
  QueueCache& cache = caches_[job.dlq.name];
  size_t unreadable = 0;
  const std::vector<ArchiveRecord> records =
      ReadRunRecords(*job.clients.store, job.keys, options_.max_messages_per_job, unreadable);

  // Every message counts in its group's tally; the groups with fewer kept
  // answers than `samples` get their earliest messages looked up.
  std::vector<LookupMessage> chosen;
  std::map<std::string, size_t> chosen_per_group;
  const bool known = EnsureKnown(job, cache);
  {
    MutexLock lock(mu_);
    auto& groups = tallies_[job.dlq.name];
    for (const ArchiveRecord& r : records) {
      std::string key = FailureGroupKey(r);
      GroupTally& t = groups[key];
      if (t.messages++ == 0) t.example_id = r.message_id;
      if (groups.size() > options_.max_groups_kept) {
        // Keep the largest groups: drop the smallest one (it may be this one).
        auto smallest = std::min_element(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
          return a.second.messages < b.second.messages;
        });
        const bool self = smallest->first == key;
        groups.erase(smallest);
        if (self) continue;
      }
      if (!known) continue;
      const size_t have = cache.reusable_per_group[key] + chosen_per_group[key];
      if (have >= job.samples || cache.known->Find(r.queue, r.message_id) != nullptr) continue;
      LookupMessage m = LookupMessageOf(r, key);
      auto arrival = job.arrivals_ms.find(r.message_id);
      if (arrival != job.arrivals_ms.end()) m.dlq_arrival_ms = arrival->second;
      chosen.push_back(std::move(m));
      ++chosen_per_group[key];
    }
  }
  if (chosen.empty()) return;

  int sqs_calls = 0, lambda_calls = 0;
  const ConsumerMap& consumers = Consumers(job, cache, sqs_calls, lambda_calls);
  ExplainRequest request;
  request.dlq = job.dlq;
  request.named_log_groups = job.named_log_groups;
  request.messages = std::move(chosen);
  request.samples_per_group = job.samples;
  request.known = &*cache.known;
  request.consumers = &consumers;
  request.lookup.max_filter_calls = options_.max_filter_calls_per_job;
  ExplainResult r =
      ExplainFailures(request, ExplainClients{*job.clients.sqs, *job.clients.lambda, *job.clients.logs, clock_});
  r.calls.sqs += sqs_calls;
  r.calls.lambda += lambda_calls;

  std::string kept_in;
  if (!r.records.empty()) {
    auto written = WriteCauseRecords(*job.clients.store, job.archive_prefix, r.records, clock_.Now());
    if (!written.ok()) {
      Log().Log(LogLevel::kWarn, "causes_not_kept",
                {{"queue", job.dlq.name},
                 {"group", job.group},
                 {"error", written.status().message()},
                 {"note", "the answers are looked up again after the next archive run"}});
    } else {
      kept_in = fmt::format("{}", fmt::join(written->keys, ","));
      for (const CauseRecord& c : r.records) {
        if (ReusableCause(c, job.named_log_groups)) ++cache.reusable_per_group[c.group_key];
        cache.known->Add(c);
      }
      Answered(job, r.records);
    }
  }
  size_t found = 0;
  for (const CauseRecord& c : r.records) {
    if (c.status == CauseStatus::kFound) ++found;
    if (metrics_ != nullptr) {
      metrics_->cause_lookups_total.WithLabels({job.dlq.name, job.dlq.region, std::string(CauseStatusName(c.status))})
          .Add(1);
    }
  }
  if (metrics_ != nullptr && r.calls.filter_log_events > 0) {
    metrics_->cause_filter_calls_total.WithLabels({job.dlq.name, job.dlq.region})
        .Add(static_cast<double>(r.calls.filter_log_events));
  }
  Log().Log(LogLevel::kInfo, "causes_looked_up",
            {{"queue", job.dlq.name},
             {"group", job.group},
             {"messages_read", static_cast<uint64_t>(records.size())},
             {"unreadable", static_cast<uint64_t>(unreadable)},
             {"looked_up", static_cast<uint64_t>(r.records.size())},
             {"found", static_cast<uint64_t>(found)},
             {"left_out", static_cast<uint64_t>(r.left_out)},
             {"calls", DescribeExplainCalls(r)},
             {"kept_in", kept_in}});

  const std::string denial = FirstDenial(r.records, consumers);
  if (denial.empty()) return;
  if (job.auto_mode) {
    {
      MutexLock lock(mu_);
      disabled_.insert(job.group);
    }
    Log().Log(LogLevel::kWarn, "causes_off",
              {{"group", job.group},
               {"queue", job.dlq.name},
               {"reason", denial},
               {"note",
                "causes: auto turns the lookups of this group off until the daemon restarts or reloads; "
                "grant the OptionalCauses statements of doc/iam-policy.json, or set causes: off"}});
  } else {
    Log().Log(LogLevel::kWarn, "causes_denied", {{"group", job.group}, {"queue", job.dlq.name}, {"reason", denial}});
  }
}

}  // namespace dlq
