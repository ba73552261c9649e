#include "monitor/daemon_archive_job.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "archive/destination.h"
#include "archive/expiry.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "replay/audit.h"
#include "sqs/queue_client_wrapper.h"

namespace dlq {
namespace {

using std::chrono::seconds;

int ReceiveCount(const Message& m) {
  auto it = m.attributes.find("ApproximateReceiveCount");
  if (it == m.attributes.end()) return 0;
  return static_cast<int>(ParseInt64(it->second).value_or(0));
}

// Wraps the group's QueueClient for one archive run and remembers which
// received messages were not deleted: what the archiver saw still queued.
class ObservingQueueClient final : public QueueClientWrapper {
 public:
  ObservingQueueClient(QueueClient& inner, bool fifo, seconds retention, Clock& clock)
      : QueueClientWrapper(inner), fifo_(fifo), retention_(retention), clock_(clock) {}

  Result<std::vector<Message>> ReceiveMessages(const std::string& url, const ReceiveOptions& options) override {
    auto r = QueueClientWrapper::ReceiveMessages(url, options);
    if (r.ok()) {
      MutexLock lock(mu_);
      SystemTime now = clock_.Now();
      for (const Message& m : *r) {
        Seen s;
        s.expiry = ComputeExpiry(m, fifo_, retention_, now);
        s.sent = AttributeMillis(m, "SentTimestamp");
        seen_[m.message_id] = s;
        handle_to_id_[m.receipt_handle] = m.message_id;
        ReceivedMessage& r = received_[m.message_id];
        if (r.receives++ == 0) {
          r.message_id = m.message_id;
          r.sent = s.sent;
          r.first_receive_count = ReceiveCount(m);
        }
      }
    }
    return r;
  }
  Result<BatchResult> DeleteMessageBatch(const std::string& url, const std::vector<DeleteEntry>& entries) override {
    auto r = QueueClientWrapper::DeleteMessageBatch(url, entries);
    if (r.ok()) {
      MutexLock lock(mu_);
      std::set<std::string> ok(r->successful_ids.begin(), r->successful_ids.end());
      for (const DeleteEntry& e : entries) {
        if (!ok.count(e.id)) continue;
        auto it = handle_to_id_.find(e.receipt_handle);
        if (it == handle_to_id_.end()) continue;
        seen_.erase(it->second);
        received_[it->second].deleted = true;
      }
    }
    return r;
  }

  // Nearest expiry and oldest SentTimestamp among messages seen and not deleted.
  std::optional<SystemTime> NearestRemaining() const {
    MutexLock lock(mu_);
    std::optional<SystemTime> out;
    for (const auto& [id, s] : seen_) out = out ? std::min(*out, s.expiry) : s.expiry;
    return out;
  }
  // Every message received, with how often and whether it was deleted.
  std::vector<ReceivedMessage> Received() const {
    MutexLock lock(mu_);
    std::vector<ReceivedMessage> out;
    out.reserve(received_.size());
    for (const auto& [id, r] : received_) out.push_back(r);
    return out;
  }
  std::optional<SystemTime> OldestSentRemaining() const {
    MutexLock lock(mu_);
    std::optional<SystemTime> out;
    for (const auto& [id, s] : seen_) {
      if (s.sent) out = out ? std::min(*out, *s.sent) : *s.sent;
    }
    return out;
  }

 private:
  struct Seen {
    SystemTime expiry;
    std::optional<SystemTime> sent;
  };
  const bool fifo_;
  const seconds retention_;
  Clock& clock_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Seen> seen_ DLQ_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::string> handle_to_id_ DLQ_GUARDED_BY(mu_);
  std::unordered_map<std::string, ReceivedMessage> received_ DLQ_GUARDED_BY(mu_);
};

// The audit record of an archive run someone asked for (ArchiveNow).
void WriteArchiveAudit(ObjectStore& store, const std::string& destination, const QueueInfo& queue,
                       const std::string& requested_by, SystemTime started, const DrainResult& r, SystemTime now) {
  AuditRecord a;
  a.kind = "archive";
  a.caller_arn = requested_by;
  a.started_at = started;
  a.finished_at = now;
  a.source = queue.url;
  a.filter = "all";
  a.destination = destination;
  a.outcome = r.status.ok() ? "done" : r.status.code() == ErrorCode::kCancelled ? "stopped" : "failed";
  const DrainStats& s = r.stats;
  a.archive = {.received = s.received,
               .archived = s.archived,
               .deleted = s.deleted,
               .skipped = s.skipped,
               .released = s.released,
               .delete_failures = s.delete_failures,
               .objects = s.objects,
               .bytes_uploaded = s.bytes_uploaded};
  auto parsed = ParseDestination(destination);
  auto key = parsed.ok() ? WriteAudit(store, ArchivePrefix(*parsed), a) : Result<std::string>(parsed.status());
  if (key.ok()) {
    Log().Log(LogLevel::kInfo, "archive_audit_written",
              {{"queue", queue.name}, {"key", *key}, {"outcome", a.outcome}, {"requested_by", requested_by}});
  } else {
    Log().Log(LogLevel::kError, "archive_audit_failed",
              {{"queue", queue.name}, {"error", key.status().ToString()}, {"outcome", a.outcome}});
  }
}

}  // namespace

DaemonArchiveRun::DaemonArchiveRun(DaemonArchiveRunSpec spec, Clock& clock, DaemonMetrics& metrics,
                                   std::chrono::milliseconds progress_interval, DaemonArchiveRunReports reports)
    : spec_(std::move(spec)),
      clock_(clock),
      metrics_(metrics),
      progress_interval_(progress_interval),
      reports_(std::move(reports)) {}

void DaemonArchiveRun::Publish(const DrainStats& now) {
  if (now.archived > published_.archived && reports_.archived) reports_.archived(now.archived - published_.archived);
  auto add = [&](metrics::CounterFamily& family, uint64_t DrainStats::*field) {
    if (now.*field > published_.*field) {
      family.WithLabels({spec_.queue.name, spec_.queue.region})
          .Add(static_cast<double>(now.*field - published_.*field));
      published_.*field = now.*field;
    }
  };
  add(metrics_.messages_archived_total, &DrainStats::archived);
  add(metrics_.messages_deleted_total, &DrainStats::deleted);
  add(metrics_.messages_duplicates_total, &DrainStats::duplicates);
  add(metrics_.messages_received_again_total, &DrainStats::received_again);
  add(metrics_.objects_total, &DrainStats::objects);
  add(metrics_.bytes_uploaded_total, &DrainStats::bytes_uploaded);
}

JobOutcome DaemonArchiveRun::Run(const std::stop_token& stop) {
  const QueueInfo& info = spec_.queue;
  ObservingQueueClient observed(*spec_.clients.sqs, info.fifo, info.retention, clock_);
  QueueDrainer drainer(observed, *spec_.clients.store, clock_, info, spec_.drain, spec_.context);
  // Scheduler::Stop() stops the drain (at once when it came before this line).
  std::stop_callback on_stop(stop, [&drainer] { drainer.RequestStop(); });
  const SystemTime start = clock_.Now();
  DrainResult r;
  // One thread publishes at a time: RunWatched has joined its watcher when it returns.
  RunWatched(
      clock_, progress_interval_, [&] { r = drainer.Run(); },
      [&] {
        Publish(drainer.Snapshot());
        return true;
      });
  Publish(r.stats);
  const bool failed = !r.status.ok() && r.status.code() != ErrorCode::kCancelled;
  CountEnd(r, failed);
  JobOutcome out;
  out.status = r.status;
  out.throttled = r.status.code() == ErrorCode::kThrottled;
  // A copy keeps what it took, so running it again would only copy the same messages.
  out.more = r.status.ok() && !r.drained && !r.stopped && !spec_.drain.keep && !spec_.drain.dry_run;
  if (reports_.finished) {
    DaemonArchiveRunReport report{
        .result = r, .started = start, .ended = clock_.Now(), .more = out.more, .failed = failed};
    report.received = observed.Received();
    report.learn = spec_.drain.dry_run;
    if (r.drained && !r.stopped && r.status.ok()) {
      report.complete = true;
      report.nearest_remaining = observed.NearestRemaining();
      report.oldest_sent_remaining = observed.OldestSentRemaining();
    }
    reports_.finished(report);
  }
  if (!spec_.requested_by.empty()) {
    WriteArchiveAudit(*spec_.clients.store, spec_.destination, info, spec_.requested_by, start, r, clock_.Now());
  }
  LogEnd(r, out.more);
  return out;
}

void DaemonArchiveRun::CountEnd(const DrainResult& r, bool failed) {
  const std::string& name = spec_.queue.name;
  const std::string& region = spec_.queue.region;
  const DrainStats& s = r.stats;
  // Still in the DLQ because the run failed (released unarchived), or archived but not deleted.
  metrics_.messages_failed_total.WithLabels({name, region})
      .Add(static_cast<double>(s.delete_failures + (failed ? s.released : 0)));
  if (spec_.drain.dry_run) return;  // a learning pass is no archive run
  metrics_.archive_runs_total.WithLabels({name, region, r.status.ok() ? "ok" : "error"}).Inc();
}

void DaemonArchiveRun::LogEnd(const DrainResult& r, bool more) const {
  const DrainStats& s = r.stats;
  Log().Log(r.status.ok() ? LogLevel::kInfo : LogLevel::kError, "archive_run",
            {{"group", spec_.group},
             {"queue", spec_.queue.name},
             {"action", spec_.drain.dry_run ? "learn"
                        : spec_.drain.keep  ? "copy"
                                            : "archive"},
             {"received", s.received},
             {"archived", s.archived},
             {"deleted", s.deleted},
             {"skipped", s.skipped},
             {"objects", s.objects},
             {"drained", r.drained},
             {"more", more},
             {"elapsed_ms", static_cast<int64_t>(r.elapsed.count())},
             {"error", r.status.ok() ? std::string() : r.status.ToString()}});
}

}  // namespace dlq
