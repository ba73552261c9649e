#include "replay/replay_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "archive/key_layout.h"
#include "common/log.h"
#include "common/strings.h"
#include "replay/audit.h"
#include "replay/checkpoint.h"
#include "replay/lambda_records.h"
#include "replay/ledger.h"
#include "replay/targets.h"
#include "replay/transform.h"

namespace dlq {

std::string_view ReplayEndName(ReplayEnd end) {
  switch (end) {
    case ReplayEnd::kDone: return "done";
    case ReplayEnd::kSomeFailed: return "some-failed";
    case ReplayEnd::kError: return "error";
    case ReplayEnd::kBadInput: return "bad-input";
    case ReplayEnd::kSkippedInput: return "skipped-input";
    case ReplayEnd::kIncomplete: return "incomplete";
    case ReplayEnd::kRefailed: return "refailed";
    case ReplayEnd::kInterrupted: return "interrupted";
  }
  return "error";
}

namespace {

// The selection is read from the archive once and kept for sending when it
// takes less than this; a larger one is read again to send (memory stays
// bounded whatever the selection).
constexpr size_t kSelectionMemoryBytes = size_t{256} << 20;

size_t ApproxBytes(const ArchiveRecord& r) {
  size_t n = 1024 + r.body.size() + r.queue.size() + r.queue_url.size() + r.message_id.size();
  for (const auto& [k, v] : r.attributes) n += k.size() + v.size() + 64;
  for (const auto& [k, v] : r.message_attributes)
    n += k.size() + v.data_type.size() + v.string_value.size() + v.binary_value.size() + 64;
  return n;
}

// Errors found before anything could be sent are the caller's to fix; a stop
// request is kInterrupted; the rest are errors.
ReplayEnd EndFor(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound: return ReplayEnd::kBadInput;
    case ErrorCode::kCancelled: return ReplayEnd::kInterrupted;
    case ErrorCode::kAborted: return ReplayEnd::kRefailed;
    default: return ReplayEnd::kError;
  }
}

// --to-origin: a message that cannot go back (counted and named; the run goes on).
bool IsRefusal(const Status& st) {
  return st.code() == ErrorCode::kInvalidArgument || st.code() == ErrorCode::kNotFound;
}

// A run that ended before it could send.
struct Refused {
  ReplayEnd end;
  Status error;
};

// Where a replay reads and writes: the archive (`from`), and the audit record
// and the ledger (`audit_to`, else beside the archive). The ledger is
// declared last so it goes before the stores it writes to.
struct Stores {
  std::optional<Destination> archive, audit_at;
  std::shared_ptr<ObjectStore> store, own_audit_store;
  ObjectStore* audit_store = nullptr;
  std::optional<ReplayLedger> ledger;
  // The lineages of messages that failed again after an earlier replay and
  // their latest outcome (replay/audit.h).
  std::optional<FailedAgainIndex> failed_again;
  // Lineage -> the id sent for it in this run: a second copy is skipped.
  std::map<std::string, std::string> lineages_sent;
  uint64_t failed_again_resent = 0;
};

// The selection, when the check pass kept it (under kSelectionMemoryBytes).
struct KeptSelection {
  std::vector<ArchiveRecord> records;
  ScanStats scan;
};

class Run {
 public:
  Run(const ReplayRunRequest& request, const ReplayRunDeps& deps, ReplayObserver& observer,
      const std::atomic<bool>& stop)
      : rq_(request),
        deps_(deps),
        observer_(observer),
        stop_(stop),
        live_(!request.from_queue.empty()),
        records_(!request.from_lambda_records.empty()) {}

  ReplayRunResult Go();

 private:
  std::optional<Refused> OpenStores();
  std::optional<Refused> LoadFailedAgain();
  std::optional<Refused> ResolveDestinations();
  std::optional<Refused> CheckArchiveSelection();
  std::optional<Refused> SetUpGuard();
  std::function<bool(const ArchiveRecord&)> FailedAgainOnly() const;
  Result<ReplaySkip> SkipDecision(const std::string& url, const ArchiveRecord& r);
  void ConfigureEngine(ReplayOptions& ro);
  uint64_t LiveSelection() const;
  void SendSelection(Replayer& replayer, RedriveGuard* guard, ReplayRunResult& out);
  uint64_t FailedAgainThisRun(const Replayer& replayer) const;
  void WriteAuditRecord(const Replayer& replayer, SystemTime started, ReplayRunResult& out);
  void Conclude(const Replayer& replayer, SystemTime started, ReplayRunResult& out);

  const ReplayRunRequest& rq_;
  const ReplayRunDeps& deps_;
  ReplayObserver& observer_;
  const std::atomic<bool>& stop_;
  const bool live_;
  const bool records_;  // from Lambda's on-failure records in S3
  Stores stores_;
  std::unique_ptr<OriginResolver> origins_;
  std::unique_ptr<AwsOriginSender> origin_sender_;
  std::unique_ptr<TargetResolver> targets_;
  std::optional<QueueInfo> dlq_;
  uint64_t selected_ = 0;
  std::optional<KeptSelection> kept_;
  std::unique_ptr<GuardedRedrive> guard_;
  uint64_t unresolved_ = 0;  // --to-origin, archive form: selected messages whose origin cannot be told
  Status first_unresolved_;
  std::string caller_arn_, caller_error_;
};

std::optional<Refused> Run::LoadFailedAgain() {
  if (stores_.audit_store == nullptr) {
    if (rq_.failed_again) {
      return Refused{ReplayEnd::kBadInput,
                     InvalidArgument(fmt::format("{} reads the audit records of earlier replays: give {} (the live "
                                                 "form has no archive to find them in)",
                                                 rq_.terms.failed_again, rq_.terms.audit_to))};
    }
    return std::nullopt;
  }
  auto index = ReadFailedAgain(*stores_.audit_store, ArchivePrefix(*stores_.audit_at));
  if (!index.ok()) {
    return Refused{ReplayEnd::kError, Status(index.status().code(),
                                             index.status().message() +
                                                 " (a message that failed again after a replay, and its copies, are "
                                                 "told apart from the rest with it)")};
  }
  for (const auto& [key, why] : index->unreadable) {
    observer_.Warning(fmt::format("audit record {} left out: {}", key, why));
  }
  stores_.failed_again = std::move(*index);
  return std::nullopt;
}

std::optional<Refused> Run::OpenStores() {
  if (records_ && (!rq_.to_origin || (rq_.audit_to.empty() && !rq_.dry_run))) {
    return Refused{ReplayEnd::kBadInput,
                   InvalidArgument(fmt::format(
                       "Lambda's on-failure records go back to their functions only ({}), and their bucket is "
                       "Lambda's, so the audit record and the record of what was sent need {}",
                       rq_.terms.to_origin, rq_.terms.audit_to))};
  }
  const std::string& from = records_ ? rq_.from_lambda_records : rq_.from;
  for (const std::string* url : {&from, &rq_.audit_to}) {
    if (url->empty()) continue;
    auto parsed = ParseDestination(*url);
    if (!parsed.ok()) return Refused{ReplayEnd::kBadInput, parsed.status()};
    auto opened = deps_.open_store(*parsed);
    if (!opened.ok()) return Refused{ReplayEnd::kError, opened.status()};
    (url == &from ? stores_.archive : stores_.audit_at) = *parsed;
    (url == &from ? stores_.store : stores_.own_audit_store) = std::move(*opened);
  }
  if (records_ && !stores_.audit_at) return LoadFailedAgain();  // a dry run: nothing of ours is in Lambda's bucket
  if (!stores_.audit_at) stores_.audit_at = stores_.archive;
  stores_.audit_store = stores_.own_audit_store ? stores_.own_audit_store.get() : stores_.store.get();
  if (stores_.audit_store != nullptr) {
    stores_.ledger.emplace(*stores_.audit_store, ArchivePrefix(*stores_.audit_at), *deps_.clock);
    if (rq_.dry_run) stores_.ledger->DisableIndexRebuild();
  }
  return LoadFailedAgain();
}

// Resolves the destinations before anything is sent: the named queue, and in
// the live form the DLQ (and, to the source, whether it has one redrive
// source for messages that do not name theirs).
std::optional<Refused> Run::ResolveDestinations() {
  if (live_) {
    auto q = ResolveQueue(*deps_.sqs, rq_.from_queue, deps_.region);
    if (!q.ok()) return Refused{EndFor(q.status()), q.status()};
    dlq_ = *q;
  }
  if (!rq_.to_source && !rq_.to_origin) {
    ArchiveRecord any;
    auto t = targets_->Resolve(any);
    if (!t.ok()) return Refused{EndFor(t.status()), t.status()};
  } else if (live_) {
    // The live form resolves, before it sends, where a message that does not
    // name its destination goes: the DLQ's single redrive source (to the
    // source), or the origin the DLQ itself tells, a function whose
    // DeadLetterConfig or a subscription whose RedrivePolicy targets it (to
    // the origin; its guard needs it). Messages are still resolved, and
    // refused, one by one.
    ArchiveRecord probe;
    probe.queue = dlq_->name;
    probe.queue_url = dlq_->url;
    probe.message_id = rq_.to_origin ? "(any that does not name its origin)" : "(any without DeadLetterQueueSourceArn)";
    auto t = targets_->Resolve(probe);
    if (!t.ok()) {
      Log().Log(LogLevel::kWarn, rq_.to_origin ? "replay.no_single_origin" : "replay.no_single_source",
                {{"queue", dlq_->name}, {"reason", t.status().message()}});
    }
  }
  return std::nullopt;
}

// --failed-again: only the messages whose latest outcome after a replay is a
// re-failure; null without it.
std::function<bool(const ArchiveRecord&)> Run::FailedAgainOnly() const {
  if (!rq_.failed_again || !stores_.failed_again) return nullptr;
  const FailedAgainIndex* i = &*stores_.failed_again;
  return [i](const ArchiveRecord& r) { return i->Contains(r.message_id); };
}

// Calls fn for each selected record: key order, then line order (within a
// de-duplication pass), de-duplicated by (queue, message_id), `_audit/` left
// out; with `only` set, only the records it accepts. The same archive and
// filter give the same sequence every time, which the checkpoint relies on.
//
// Lambda's on-failure records (`records`) are read object by object in key
// order instead (replay/lambda_records.h); each is one message.
Result<ScanStats> ForEachSelected(ObjectStore& store, const Destination& from, bool records, const Filter& filter,
                                  const std::function<bool(const ArchiveRecord&)>& only,
                                  const std::function<bool(const ArchiveRecord&)>& fn) {
  if (records) {
    const std::string prefix = from.prefix.empty() ? "" : from.prefix + "/";
    return ScanLambdaRecords(
        store, from.scheme == "s3" ? from.bucket : from.root, prefix,
        [&](const ArchiveRecord& r) { return filter.Matches(r) && (!only || only(r)); }, fn);
  }
  ScanOptions options;
  options.filter = filter;
  return ScanArchive(store, from, options, [&](const ArchiveRecord& r, const RecordLocation&) {
    if (only && !only(r)) return true;
    return fn(r);
  });
}

// The archive form's check of the selection, the one pass over the archive
// (kept for sending when it fits kSelectionMemoryBytes): counted by DLQ, and
// to the source every record's source resolved; then the DLQ-span guard.
std::optional<Refused> Run::CheckArchiveSelection() {
  Status resolve_error;
  uint64_t seen = 0;
  DlqCounts by_dlq;
  KeptSelection kept;
  size_t kept_bytes = 0;
  bool keep = true;
  auto pass = ForEachSelected(*stores_.store, *stores_.archive, records_, rq_.filter, FailedAgainOnly(),
                              [&](const ArchiveRecord& r) {
                                if (rq_.max > 0 && seen >= rq_.max) return false;
                                ++seen;
                                ++by_dlq[r.queue];
                                if (keep) {
                                  kept_bytes += ApproxBytes(r);
                                  keep = kept_bytes <= kSelectionMemoryBytes;
                                  if (keep) {
                                    kept.records.push_back(r);
                                  } else {
                                    kept.records = {};
                                  }
                                }
                                if (!rq_.to_source && !rq_.to_origin) return true;
                                auto t = targets_->Resolve(r);
                                if (!t.ok() && rq_.to_origin && IsRefusal(t.status())) {
                                  if (unresolved_++ == 0) first_unresolved_ = t.status();
                                  return true;  // counted when it is met again to send
                                }
                                if (!t.ok()) resolve_error = t.status();
                                return t.ok();
                              });
  if (!pass.ok()) return Refused{ReplayEnd::kError, pass.status()};
  selected_ = seen;
  if (!resolve_error.ok()) {
    return Refused{EndFor(resolve_error), Status(resolve_error.code(), resolve_error.message() + "; nothing was sent")};
  }
  if (rq_.to_origin && seen > 0 && unresolved_ == seen) {
    return Refused{ReplayEnd::kBadInput,
                   InvalidArgument(fmt::format("the origin of none of the {} selected messages can be told; the "
                                               "first: {}; nothing was sent",
                                               seen, first_unresolved_.message()))};
  }
  if (Status st =
          CheckDlqSpan(by_dlq, !rq_.to_source && !rq_.to_origin, rq_.dry_run, rq_.all_queues, rq_.to_queue, rq_.terms);
      !st.ok()) {
    return Refused{ReplayEnd::kBadInput, st};
  }
  if (keep) {
    kept.scan = *pass;
    kept_ = std::move(kept);
  }
  observer_.SelectionChecked(by_dlq, targets_->CrossAccountRoutes());
  return std::nullopt;
}

// The live form's selection, the ramp's 100%: the messages in the DLQ now
// (visible and in flight), at most `max`.
uint64_t Run::LiveSelection() const {
  auto attrs = deps_.sqs->GetQueueAttributes(dlq_->url,
                                             {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  uint64_t n = 0;
  if (attrs.ok()) {
    for (const auto& [name, value] : *attrs) {
      if (auto v = ParseInt64(value); v && *v > 0) n += static_cast<uint64_t>(*v);
    }
  }
  return rq_.max > 0 ? std::min(n, rq_.max) : n;
}

// A guarded run: reads the destinations' windows and backlog and makes the
// guard, before anything is sent. A destination without a DLQ is bad input.
std::optional<Refused> Run::SetUpGuard() {
  const RedrivePlan& plan = rq_.plan;
  if (!(plan.guarded || plan.backpressure) || (!dlq_ && selected_ == 0)) return std::nullopt;  // nothing to guard
  if (rq_.to_origin && dlq_ && targets_->Resolved().empty()) {
    // The live form reads its messages only as it sends them, so its guard
    // must know the origin from the DLQ itself.
    return Refused{ReplayEnd::kBadInput,
                   FailedPrecondition(fmt::format(
                       "a canary needs the origin before anything is sent, and {} does not tell it (no function's "
                       "DeadLetterConfig or subscription's RedrivePolicy targets it; its messages may each name "
                       "theirs, as EventBridge's do): replay it from the archive, or without a canary ({}); nothing "
                       "was sent",
                       dlq_->name, rq_.terms.no_canary))};
  }
  GuardInputs in;
  in.terms = rq_.terms;
  in.sqs = deps_.sqs;
  in.clock = deps_.clock;
  in.region = deps_.region;
  in.stop = &stop_;
  in.open_store = deps_.open_store;
  for (const auto& [url, target] : targets_->Resolved()) {
    if (target.kind == TargetKind::kQueue) {
      in.destinations.push_back(url);
    } else {
      in.origins.push_back(target);
    }
  }
  if (in.destinations.empty() && (plan.max_backlog || plan.max_backlog_age > std::chrono::seconds(0))) {
    // Functions, topics, buses and endpoints have no backlog to read: their
    // pace is bounded by their throttling, which pauses the run.
    return Refused{ReplayEnd::kBadInput,
                   InvalidArgument(fmt::format("{} bounds a destination queue's backlog, and these origins are no "
                                               "queues (a throttled function pauses the run instead); nothing was sent",
                                               rq_.terms.max_backlog))};
  }
  in.selection = dlq_ ? LiveSelection() : selected_;
  if (dlq_) in.live_dlq = dlq_->url;
  auto g = plan.guarded ? PrepareGuard(plan, in) : PrepareBackpressure(plan, in);
  if (!g.ok()) {
    const ReplayEnd end =
        g.status().code() == ErrorCode::kFailedPrecondition ? ReplayEnd::kBadInput : EndFor(g.status());
    return Refused{end, Status(g.status().code(), g.status().message() + "; nothing was sent")};
  }
  guard_ = std::move(*g);
  return std::nullopt;
}

// Whether a message is sent (ReplayOptions::skip). A message whose lineage
// failed again after a replay (replay/audit.h) is sent once per run, under
// the first of its ids met; its latest outcome decides the rest: failed
// again, it is sent (the fix is being tried); delivered to this destination,
// it is skipped as already replayed. Any other message is skipped when the
// ledger says an earlier run delivered it here. `again` sends what was
// delivered, never two copies of one message.
Result<ReplaySkip> Run::SkipDecision(const std::string& url, const ArchiveRecord& r) {
  const FailedAgainIndex* index = stores_.failed_again ? &*stores_.failed_again : nullptr;
  const std::string* root = index != nullptr ? index->RootOf(r.message_id) : nullptr;
  if (root != nullptr) {
    auto sent = stores_.lineages_sent.find(*root);
    if (sent != stores_.lineages_sent.end()) return ReplaySkip{ReplaySkip::kCopy, sent->second};
    const FailedAgainIndex::Latest* latest = index->LatestOf(r.message_id);
    if (!rq_.again && !latest->failed_again && latest->destination == url) {
      return ReplaySkip{ReplaySkip::kAlreadyReplayed, ""};
    }
    if (latest->failed_again) ++stores_.failed_again_resent;
    stores_.lineages_sent.emplace(*root, r.message_id);
    return ReplaySkip{};
  }
  if (rq_.again || !stores_.ledger) return ReplaySkip{};
  DLQ_ASSIGN_OR_RETURN(bool delivered, stores_.ledger->AlreadySent(url, r.message_id));
  return ReplaySkip{delivered ? ReplaySkip::kAlreadyReplayed : ReplaySkip::kSend, ""};
}

// The engine's options: rate, limits, concurrency, the checkpoint, and the
// skip and record hooks.
void Run::ConfigureEngine(ReplayOptions& ro) {
  ro.rate = rq_.rate;
  ro.max = rq_.max;
  ro.concurrency = rq_.concurrency > 0 ? rq_.concurrency : rq_.checkpoint.empty() ? 4 : 1;
  ro.dry_run = rq_.dry_run;
  ro.checkpoint_path = rq_.dry_run || live_ ? "" : rq_.checkpoint;
  ro.checkpoint_mode = rq_.file_modes.file;
  ro.checkpoint_term = rq_.terms.checkpoint;
  ro.identity_text = CheckpointIdentityText(
      live_ ? dlq_->url : stores_.archive->uri, rq_.filter.Canonical(),
      rq_.function.empty() ? targets_->Describe() : targets_->Describe() + " function " + rq_.function, rq_.transform);
  ro.stop = &stop_;
  ro.origin_sender = origin_sender_.get();
  if (stores_.ledger || stores_.failed_again) {
    ro.skip = [this](const std::string& url, const ArchiveRecord& r) { return SkipDecision(url, r); };
  }
  if (stores_.ledger && !rq_.dry_run) {
    ro.on_sent = [this](const std::string& url, const std::string& id) { return stores_.ledger->RecordSent(url, id); };
  }
  if (guard_ && !rq_.dry_run) ro.gate = guard_->guard.get();
}

// Feeds the selection to the replayer (received from the DLQ, the kept
// selection, or read from the archive in key order) and waits for what is in
// flight; the pass's error goes to out.error.
void Run::SendSelection(Replayer& replayer, RedriveGuard* guard, ReplayRunResult& out) {
  Status status;
  auto only = FailedAgainOnly();
  if (live_) {
    LiveReplayOptions lo;
    lo.dry_run = rq_.dry_run;
    lo.stop = &stop_;
    lo.guard = guard;
    const Filter& f = rq_.filter;
    LiveReplayStats so_far;
    auto r = ReplayFromQueue(
        *deps_.sqs, *dlq_, replayer,
        [&f, &only](const ArchiveRecord& rec) { return f.Matches(rec) && (!only || only(rec)); }, *deps_.clock, lo,
        &so_far);
    out.live_stats = so_far;
    if (!r.ok()) status = r.status();
  } else if (kept_) {
    for (ArchiveRecord& rec : kept_->records) {
      auto added = replayer.Add(ReplayItem{std::move(rec), ""});
      if (!added.ok()) {
        status = added.status();
        break;
      }
      if (!*added) break;
    }
    kept_->records = {};
    out.scan = kept_->scan;
  } else {
    auto r =
        ForEachSelected(*stores_.store, *stores_.archive, records_, rq_.filter, only, [&](const ArchiveRecord& rec) {
          auto added = replayer.Add(ReplayItem{rec, ""});
          if (!added.ok()) {
            status = added.status();
            return false;
          }
          return *added;
        });
    if (!r.ok() && status.ok()) status = r.status();
    if (r.ok()) out.scan = *r;
  }
  if (status.ok()) status = replayer.Finish();
  if (status.ok() && guard != nullptr) status = guard->Finish(replayer);  // the final window
  if (status.ok() && stop_.load()) status = Cancelled("replay stopped by a signal");
  out.error = status;
}

// The re-failures the guard found among the messages this run sent (a
// resumed run's journal also lists those an earlier run sent: they are in
// `resumed`).
uint64_t Run::FailedAgainThisRun(const Replayer& replayer) const {
  if (guard_ == nullptr || rq_.dry_run) return 0;
  std::set<std::string> sent;
  for (const ReplayedMessage& m : replayer.sent()) sent.insert(m.new_message_id);
  uint64_t n = 0;
  for (const RefailedMessage& r : guard_->guard->status().refailures) n += sent.count(r.new_message_id);
  return n;
}

void Run::WriteAuditRecord(const Replayer& replayer, SystemTime started, ReplayRunResult& out) {
  const ReplayStats& s = replayer.stats();
  AuditRecord a;
  a.caller_arn = caller_arn_;
  a.caller_error = caller_error_;
  a.started_at = started;
  a.finished_at = deps_.clock->Now();
  a.source = live_ ? dlq_->url : stores_.archive->uri;
  a.filter = rq_.filter.Canonical();
  a.destination = targets_->Describe();
  a.transform = rq_.transform;
  const Status& run_status = out.error;
  const bool stopped = run_status.code() == ErrorCode::kCancelled || run_status.code() == ErrorCode::kAborted;
  a.outcome = !run_status.ok() ? (stopped ? "stopped" : "failed") : (s.failed > 0 ? "failed" : "done");
  a.again = rq_.again;
  a.stats = s;
  a.stats.accepted = out.buckets.selected;
  a.buckets = out.buckets;
  a.sent_by_destination = replayer.sent_by_destination();
  a.sent = replayer.sent();
  a.failures = replayer.failures();
  if (out.guard && !out.guard->options.BackpressureOnly())
    a.redrive = GuardAudit(out.guard->status, out.guard->options);
  if (out.guard) a.failed_again = FailedAgainOf(out.guard->status);
  auto key = WriteAudit(*stores_.audit_store, ArchivePrefix(*stores_.audit_at), a);
  if (key.ok()) {
    out.audit = stores_.audit_store->Describe() + "/" + *key;
  } else {
    out.audit_error = key.status();
  }
}

// What a run that got to sending ends with: the ledger flushed, the audit
// record, and how it ended.
void Run::Conclude(const Replayer& replayer, SystemTime started, ReplayRunResult& out) {
  out.reached_sending = true;
  out.stats = replayer.stats();
  out.sent_by_destination = replayer.sent_by_destination();
  out.sent = replayer.sent();
  out.failures = replayer.failures();
  out.destination = targets_->Describe();
  out.cross_account_routes = targets_->CrossAccountRoutes();
  out.dlq = dlq_;
  out.archive = stores_.archive;
  out.skip_checked = stores_.ledger.has_value();
  out.failed_again_resent = stores_.failed_again_resent;
  if (guard_ && !rq_.dry_run) out.guard = ReplayGuardReport{guard_->options, guard_->guard->status()};
  // Every selected message in one bucket (replay/buckets.h). The live form's
  // selection is what its pass selected (messages it never examined are not
  // in it; the DLQ part of the summary counts them).
  const uint64_t sel = out.live_stats ? out.live_stats->selected : selected_;
  out.buckets = MakeBuckets(sel, out.stats, FailedAgainThisRun(replayer));
  if (stores_.ledger && !rq_.dry_run) {
    Status flushed = stores_.ledger->Flush();
    if (!flushed.ok() && out.error.ok()) out.error = flushed;
  }
  if (!rq_.dry_run && stores_.audit_store != nullptr) WriteAuditRecord(replayer, started, out);

  const ReplayStats& s = out.stats;
  if (out.error.code() == ErrorCode::kAborted && out.guard) {
    int64_t not_sent = static_cast<int64_t>(out.buckets.not_sent);
    if (out.live && out.live_stats && out.live_stats->present_at_start >= 0) {
      // The live form: also what the pass never examined.
      not_sent = std::max<int64_t>(out.live_stats->present_at_start - static_cast<int64_t>(s.sent), 0);
    }
    out.not_sent = not_sent;
    out.end = ReplayEnd::kRefailed;
  } else if (!out.error.ok()) {
    // A resolution or checkpoint error found only now still means bad input,
    // but if something was sent the run failed part-way.
    const ReplayEnd end = EndFor(out.error);
    out.end = end == ReplayEnd::kBadInput && s.sent > 0 ? ReplayEnd::kError : end;
  } else if (!out.audit_error.ok()) {
    out.end = ReplayEnd::kError;
  } else if (s.failed > 0 || s.unresolved > 0) {
    out.end = ReplayEnd::kSomeFailed;
  } else if (out.live_stats && !out.live_stats->incomplete_reason.empty()) {
    out.end = ReplayEnd::kIncomplete;
  } else if ((out.live_stats && out.live_stats->delete_failures > 0) || (out.scan && !out.scan->complete())) {
    out.end = ReplayEnd::kSkippedInput;
  } else {
    out.end = ReplayEnd::kDone;
  }
}

ReplayRunResult Run::Go() {
  ReplayRunResult out;
  out.dry_run = rq_.dry_run;
  out.live = live_;
  out.again = rq_.again;
  auto refuse = [&out](Refused r) {
    out.end = r.end;
    out.error = std::move(r.error);
    return out;
  };
  if (auto r = OpenStores()) return refuse(*r);
  if (rq_.to_origin) {
    origins_ = std::make_unique<OriginResolver>(deps_.lambda, deps_.sns, deps_.region, rq_.function);
    origin_sender_ = std::make_unique<AwsOriginSender>(deps_.lambda, deps_.sns, deps_.events, deps_.http);
    targets_ = TargetResolver::ToOrigin(*deps_.sqs, deps_.region, *origins_);
  } else if (rq_.to_source) {
    targets_ = TargetResolver::ToSource(*deps_.sqs, deps_.region);
  } else {
    targets_ = TargetResolver::Fixed(*deps_.sqs, rq_.to_queue, deps_.region);
  }
  targets_->AllowCrossAccount(rq_.allow_cross_account);
  targets_->UseTerms(rq_.terms);
  if (auto r = ResolveDestinations()) return refuse(*r);
  if (!live_) {
    if (auto r = CheckArchiveSelection()) return refuse(*r);
  }
  if (auto r = SetUpGuard()) return refuse(*r);
  if (guard_ && rq_.dry_run) observer_.GuardPlanned(*guard_);

  if (!rq_.dry_run && deps_.caller_arn) {
    auto who = deps_.caller_arn();
    if (who.ok()) {
      caller_arn_ = *who;
    } else {
      caller_error_ = who.status().message();
    }
  }
  std::unique_ptr<RecordTransform> transform;
  if (!rq_.transform.empty()) {
    auto t = CommandTransform::Start(rq_.transform, rq_.transform_timeout, rq_.terms.transform);
    if (!t.ok()) return refuse({ReplayEnd::kBadInput, t.status()});
    transform = std::move(*t);
  }
  ReplayOptions ro;
  ConfigureEngine(ro);
  Replayer replayer(*deps_.sqs, *targets_, *deps_.clock, ro, transform.get());
  if (Status st = replayer.Start(); !st.ok()) return refuse({EndFor(st), st});
  replayer.OnDryRun([&](const DryRunEntry& e) {
    if (e.kind == DryRunEntry::kWouldSend) ++out.would_send_by_destination[e.destination];
    if (out.dry_run_entries.size() < rq_.max_dry_run_entries) {
      out.dry_run_entries.push_back(e);
    } else {
      ++out.dry_run_entries_omitted;
    }
    observer_.DryRun(e);
  });
  replayer.OnProgress([&](const ReplayStats& s) { observer_.Progress(s); });
  GuardedRedrive* const guarded = rq_.dry_run ? nullptr : guard_.get();
  if (guarded != nullptr) {
    guarded->guard->OnStatus([this](const RedriveStatus& s) { observer_.Guard(s); });
    // A backlog bound alone has no phases worth resuming: no journal.
    const bool journal = !rq_.checkpoint.empty() && !guarded->options.BackpressureOnly();
    Status st = guarded->guard->Start(journal ? rq_.checkpoint + ".guard" : "", rq_.file_modes.file);
    if (!st.ok()) return refuse({EndFor(st), st});
  }
  const SystemTime started = deps_.clock->Now();
  const auto steady_start = deps_.clock->SteadyNow();
  SendSelection(replayer, guarded != nullptr ? guarded->guard.get() : nullptr, out);
  out.seconds = std::chrono::duration<double>(deps_.clock->SteadyNow() - steady_start).count();
  Conclude(replayer, started, out);
  return out;
}

}  // namespace

ReplayRunResult RunReplayUseCase(const ReplayRunRequest& request, const ReplayRunDeps& deps, ReplayObserver& observer,
                                 const std::atomic<bool>& stop) {
  Run run(request, deps, observer, stop);
  return run.Go();
}

}  // namespace dlq
