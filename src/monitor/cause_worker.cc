#include "monitor/cause_worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "causes/archived_causes.h"
#include "common/log.h"

namespace dlq {

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
  ArchivedCausesRequest request;
  request.dlq = job.dlq;
  request.archive_prefix = job.archive_prefix;
  request.keys = job.keys;
  request.arrivals_ms = job.arrivals_ms;
  request.named_log_groups = job.named_log_groups;
  request.samples = job.samples;
  request.max_messages = options_.max_messages_per_job;
  request.max_filter_calls = options_.max_filter_calls_per_job;
  ArchivedCausesClients clients{
      *job.clients.store, *job.clients.sqs, *job.clients.lambda, *job.clients.logs, clock_,
      [&](LookupCalls& calls) -> const ConsumerMap& { return Consumers(job, cache, calls.sqs, calls.lambda); },
      // Every message counts in its group's tally.
      [&](const ArchiveRecord& r, const std::string& key) { return Tally(job, r, key); }};
  const ArchivedCausesResult r = LookUpArchivedCauses(request, cache.answers, clients);
  if (!r.sidecar.ok()) {
    Log().Log(LogLevel::kWarn, "causes_sidecar_unreadable",
              {{"queue", job.dlq.name},
               {"group", job.group},
               {"error", r.sidecar.message()},
               {"note", "no cause is looked up until the kept answers can be read (none is looked up twice)"}});
  }
  if (r.explain.records.empty() && r.denial.empty()) return;
  if (!r.kept.ok()) {
    Log().Log(LogLevel::kWarn, "causes_not_kept",
              {{"queue", job.dlq.name},
               {"group", job.group},
               {"error", r.kept.message()},
               {"note", "the answers are looked up again after the next archive run"}});
  } else {
    Answered(job, r.explain.records);
  }
  for (const CauseRecord& c : r.explain.records) {
    if (metrics_ != nullptr) {
      metrics_->cause_lookups_total.WithLabels({job.dlq.name, job.dlq.region, std::string(CauseStatusName(c.status))})
          .Add(1);
    }
  }
  if (metrics_ != nullptr && r.explain.calls.filter_log_events > 0) {
    metrics_->cause_filter_calls_total.WithLabels({job.dlq.name, job.dlq.region})
        .Add(static_cast<double>(r.explain.calls.filter_log_events));
  }
  Log().Log(LogLevel::kInfo, "causes_looked_up",
            {{"queue", job.dlq.name},
             {"group", job.group},
             {"messages_read", static_cast<uint64_t>(r.messages_read)},
             {"unreadable", static_cast<uint64_t>(r.unreadable)},
             {"looked_up", static_cast<uint64_t>(r.explain.records.size())},
             {"found", static_cast<uint64_t>(r.found)},
             {"left_out", static_cast<uint64_t>(r.explain.left_out)},
             {"calls", DescribeExplainCalls(r.explain)},
             {"kept_in", r.kept_in}});

  if (r.denial.empty()) return;
  if (job.auto_mode) {
    {
      MutexLock lock(mu_);
      disabled_.insert(job.group);
    }
    Log().Log(LogLevel::kWarn, "causes_off",
              {{"group", job.group},
               {"queue", job.dlq.name},
               {"reason", r.denial},
               {"note",
                "causes: auto turns the lookups of this group off until the daemon restarts or reloads; "
                "grant the OptionalCauses statements of doc/iam-policy.json, or set causes: off"}});
  } else {
    Log().Log(LogLevel::kWarn, "causes_denied", {{"group", job.group}, {"queue", job.dlq.name}, {"reason", r.denial}});
  }
}

bool CauseWorker::Tally(const CauseJob& job, const ArchiveRecord& r, const std::string& key) {
  MutexLock lock(mu_);
  auto& groups = tallies_[job.dlq.name];
  GroupTally& t = groups[key];
  if (t.messages++ == 0) t.example_id = r.message_id;
  if (groups.size() <= options_.max_groups_kept) return true;
  // Keep the largest groups: drop the smallest one (it may be this one, then
  // not sampled either).
  auto smallest = std::min_element(groups.begin(), groups.end(),
                                   [](const auto& a, const auto& b) { return a.second.messages < b.second.messages; });
  const bool self = smallest->first == key;
  groups.erase(smallest);
  return !self;
}

}  // namespace dlq
