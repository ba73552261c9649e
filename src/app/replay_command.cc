#include "app/replay_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <optional>
#include <set>

#include "app/archive_source.h"
#include "app/command.h"
#include "app/flag_validators.h"
#include "app/replay_guards.h"
#include "app/replay_redrive.h"
#include "archive/key_layout.h"
#include "common/count_noun.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"
#include "query/scan.h"
#include "replay/audit.h"
#include "replay/buckets.h"
#include "replay/checkpoint.h"
#include "replay/ledger.h"
#include "replay/live_source.h"
#include "replay/replayer.h"
#include "replay/targets.h"
#include "replay/transform.h"
#include "sqs/queue_info.h"

namespace dlq {
namespace {

constexpr int kExitFailure = 1, kExitUsage = 2, kExitSkipped = 3, kExitIncomplete = 4, kExitRefailed = 5,
              kExitInterrupted = 130;
constexpr size_t kFailuresShown = 20;

// The progress of a replay on stderr (common/progress.h): a line redrawn on
// a terminal, plain lines every 10 s elsewhere; a guard's phase change is
// shown at once.
class Progress {
 public:
  Progress(ProgressMode mode, Clock& clock, std::FILE* err)
      : printer_(mode, clock, err), clock_(clock), start_(clock.SteadyNow()) {}
  // Takes the line away (before the summary is printed).
  void Clear() { printer_.Clear(); }
  void Update(const ReplayStats& s, bool force = false) {
    if (!printer_.enabled()) return;
    stats_ = s;
    double secs = std::chrono::duration<double>(clock_.SteadyNow() - start_).count();
    std::string line = fmt::format("replay: selected {}, sent {}, failed {}, resumed {}, {:.0f} msg/s", s.accepted,
                                   s.sent, s.failed, s.resumed, secs > 0 ? s.sent / secs : 0.0);
    printer_.Show(guard_.empty() ? line : guard_ + " | " + line, force);
  }
  // A guarded run: the phase and why lead the line (shown at once on a phase change).
  void Guard(const RedriveStatus& s) {
    if (!printer_.enabled()) return;
    const bool changed = !phase_ || *phase_ != s.phase;
    phase_ = s.phase;
    guard_ = RedriveProgressLine(s);
    Update(stats_, changed);
  }

 private:
  ProgressPrinter printer_;
  std::string guard_;
  std::optional<RedrivePhase> phase_;
  ReplayStats stats_;
  Clock& clock_;
  SteadyTime start_;
};

// The live pass's part of the summary: distinct messages, and how much of
// the DLQ present at the start the pass examined.
std::string LiveSummary(const LiveReplayStats& l) {
  std::string present = l.present_at_start < 0 ? "an unknown number" : fmt::format("~{}", l.present_at_start);
  std::string out = fmt::format("; DLQ: examined {} of {} present at the start, not selected {}", l.examined, present,
                                l.not_selected);
  if (l.deleted > 0 || l.delete_failures > 0) {
    out += fmt::format(", deleted {}, delete failures {}", l.deleted, l.delete_failures);
  }
  out += fmt::format(", released {} ({} receives)", l.released, l.receive_calls);
  if (l.at_max) out += ", stopped at --max";
  return out;
}

int Fail(const ReplayDeps& deps, int code, const std::string& message) {
  std::fprintf(deps.err, "error: replay: %s\n", TerminalSafe(message).c_str());
  return code;
}

// Errors found before anything could be sent are the caller's to fix (2);
// a stop request is 130; the rest are failures (1).
int ExitCodeFor(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound: return kExitUsage;
    case ErrorCode::kCancelled: return kExitInterrupted;
    case ErrorCode::kAborted: return kExitRefailed;
    default: return kExitFailure;
  }
}

// Calls fn for each selected record: key order, then line order (within a
// de-duplication pass), de-duplicated by (queue, message_id), `_audit/` left
// out; with `only` set, only the records it accepts. The same archive and
// filter give the same sequence every time, which the checkpoint relies on.
Result<ScanStats> ForEachSelected(ObjectStore& store, const Destination& from, const Filter& filter,
                                  const std::function<bool(const ArchiveRecord&)>& only,
                                  const std::function<bool(const ArchiveRecord&)>& fn) {
  ScanOptions options;
  options.filter = filter;
  return ScanArchive(store, from, options, [&](const ArchiveRecord& r, const RecordLocation&) {
    if (only && !only(r)) return true;
    return fn(r);
  });
}

// --failed-again: only the messages whose latest outcome after a replay is a
// re-failure; null without the flag.
std::function<bool(const ArchiveRecord&)> FailedAgainOnly(const ReplayCommandOptions& options,
                                                          const std::optional<FailedAgainIndex>& index) {
  if (!options.failed_again || !index) return nullptr;
  const FailedAgainIndex* i = &*index;
  return [i](const ArchiveRecord& r) { return i->Contains(r.message_id); };
}

// Says, before anything is sent, what the guards let through: a selection
// over several DLQs going to one queue, cross-account routes, and in a dry
// run what the real run would need.
void PrintGuardNotes(const ReplayCommandOptions& options, const Filter& filter, const DlqCounts& by_dlq,
                     const TargetResolver& targets, std::FILE* out) {
  if (!options.to_source && by_dlq.size() > 1) {
    std::fprintf(out, "selection spans %s; all go to %s%s\n", TerminalSafe(DescribeDlqSpan(by_dlq)).c_str(),
                 TerminalSafe(options.to_queue).c_str(),
                 options.dry_run && !options.all_queues ? " (the real run needs --all-queues)" : "");
  }
  for (const std::string& route : targets.CrossAccountRoutes()) {
    std::fprintf(out, "cross-account: %s\n", TerminalSafe(route).c_str());
  }
  if (options.dry_run && !options.all && filter.Empty()) {
    std::fprintf(out, "no filter: every archived message is selected (the real run needs --all)\n");
  }
}

// Checks the flags that need no call, in order; sets ro.rate. Returns the exit
// code to stop with (the error printed), or nullopt to go on.
std::optional<int> CheckFlags(const ReplayCommandOptions& options, const ReplayDeps& deps, bool live, ReplayOptions& ro,
                              RedrivePlan& plan) {
  if (live == !options.from.empty()) return Fail(deps, kExitUsage, "give one of --from URL and --from-queue DLQ");
  if (options.to_source == !options.to_queue.empty()) {
    return Fail(deps, kExitUsage, "give one of --to-source and --to-queue NAME|URL");
  }
  if (!options.rate.empty()) {
    auto rate = ParseRate(options.rate);
    if (!rate) return Fail(deps, kExitUsage, fmt::format("--rate '{}' is not a rate (e.g. 100/s)", options.rate));
    ro.rate = *rate;
  }
  auto parsed = ParseRedriveFlags(options.redrive, options.to_source);
  if (!parsed.ok()) return Fail(deps, kExitUsage, parsed.status().message());
  plan = std::move(*parsed);
  if (live && !options.checkpoint.empty() && !plan.guarded) {
    return Fail(deps, kExitUsage,
                "--checkpoint is for --from only (or a guarded live replay, which keeps its guard journal there): "
                "the live form deletes each message once it is sent, so a rerun resumes by itself");
  }
  if (live && options.audit_to.empty() && !options.dry_run) {
    return Fail(deps, kExitUsage,
                "--from-queue needs --audit-to s3://BUCKET/PREFIX|file:///DIR: the audit record and the record of what "
                "was sent go there, so a rerun skips what this run delivers (or --dry-run)");
  }
  if (!(options.transform_timeout_s > 0)) return Fail(deps, kExitUsage, "--transform-timeout must be positive");
  return std::nullopt;
}

// Where a replay reads and writes: the archive (--from), and the audit record
// and the ledger (--audit-to, else beside the archive). The ledger is
// declared last so it goes before the stores it writes to.
struct ReplayStores {
  std::optional<Destination> archive, audit_at;
  std::unique_ptr<ObjectStore> store, own_audit_store;
  ObjectStore* audit_store = nullptr;
  std::optional<ReplayLedger> ledger;
  // The lineages of messages that failed again after an earlier replay and
  // their latest outcome (replay/audit.h).
  std::optional<FailedAgainIndex> failed_again;
  // Lineage -> the id sent for it in this run: a second copy is skipped.
  std::map<std::string, std::string> lineages_sent;
  uint64_t failed_again_resent = 0;  // taken to send: their latest outcome was a re-failure
};

// What the skips mean, for the summary: the messages not sent because an
// earlier run delivered them, copies, and the messages sent again because
// they failed again after an earlier replay; or why nothing was checked.
std::string SkipNotes(const ReplayBuckets& b, const ReplayStores& stores, bool again) {
  std::string out;
  if (again) out += "; --again: earlier deliveries not skipped";
  if (!stores.ledger) out += "; not checked against earlier replays (no --audit-to)";
  if (b.already_replayed > 0) {
    out +=
        "; already replayed: delivered to the same destination by an earlier run (see `dlq-archive audit ls`; "
        "--again sends them)";
  }
  if (stores.failed_again_resent > 0) {
    out += fmt::format("; {} failed again after an earlier replay: this run took {} to send again",
                       CountNoun(stores.failed_again_resent, "message", "messages"),
                       stores.failed_again_resent == 1 ? "it" : "them");
  }
  if (b.copies > 0) {
    out += "; copies: a message that failed again is archived under its new id too, and each message is sent once";
  }
  return out;
}

// Reads the lineages of the messages that failed again after a replay, from
// the audit location's records.
std::optional<int> LoadFailedAgain(const ReplayCommandOptions& options, const ReplayDeps& deps, ReplayStores& s) {
  if (s.audit_store == nullptr) {
    if (options.failed_again) {
      return Fail(deps, kExitUsage,
                  "--failed-again reads the audit records of earlier replays: give --audit-to URL (the live form "
                  "has no archive to find them in)");
    }
    return std::nullopt;
  }
  auto index = ReadFailedAgain(*s.audit_store, ArchivePrefix(*s.audit_at));
  if (!index.ok()) {
    return Fail(deps, kExitFailure,
                index.status().message() +
                    " (a message that failed again after a replay, and its copies, are told "
                    "apart from the rest with it)");
  }
  for (const auto& [key, why] : index->unreadable) {
    std::fprintf(deps.err, "warning: replay: audit record %s left out: %s\n", TerminalSafe(key).c_str(),
                 TerminalSafe(why).c_str());
  }
  s.failed_again = std::move(*index);
  return std::nullopt;
}

std::optional<int> OpenStores(const ReplayCommandOptions& options, const ReplayDeps& deps, ReplayStores& s) {
  for (const std::string* url : {&options.from, &options.audit_to}) {
    if (url->empty()) continue;
    auto parsed = ParseDestination(*url);
    if (!parsed.ok()) return Fail(deps, kExitUsage, parsed.status().message());
    auto opened = deps.open_store(*parsed);
    if (!opened.ok()) return Fail(deps, kExitFailure, opened.status().message());
    (url == &options.from ? s.archive : s.audit_at) = *parsed;
    (url == &options.from ? s.store : s.own_audit_store) = std::move(*opened);
  }
  if (!s.audit_at) s.audit_at = s.archive;
  s.audit_store = s.own_audit_store ? s.own_audit_store.get() : s.store.get();
  if (s.audit_store != nullptr) {
    s.ledger.emplace(*s.audit_store, ArchivePrefix(*s.audit_at), *deps.clock);
    if (options.dry_run) s.ledger->DisableIndexRebuild();
  }
  return LoadFailedAgain(options, deps, s);
}

// Resolves the destinations before anything is sent: the --to-queue, and in
// the live form the DLQ (and, with --to-source, whether it has one redrive
// source for messages that do not name theirs).
std::optional<int> ResolveDestinations(const ReplayCommandOptions& options, const ReplayDeps& deps, bool live,
                                       TargetResolver& targets, std::optional<QueueInfo>& dlq) {
  if (live) {
    auto q = ResolveQueue(*deps.sqs, options.from_queue, deps.region);
    if (!q.ok()) return Fail(deps, ExitCodeFor(q.status()), q.status().message());
    dlq = *q;
  }
  if (!options.to_source) {
    ArchiveRecord any;
    auto t = targets.Resolve(any);
    if (!t.ok()) return Fail(deps, ExitCodeFor(t.status()), t.status().message());
  } else if (live) {
    // Messages without DeadLetterQueueSourceArn go to the DLQ's single
    // redrive source: check that it exists and is not ambiguous now.
    ArchiveRecord probe;
    probe.queue = dlq->name;
    probe.queue_url = dlq->url;
    probe.message_id = "(any without DeadLetterQueueSourceArn)";
    auto t = targets.Resolve(probe);
    if (!t.ok()) {
      Log().Log(LogLevel::kWarn, "replay.no_single_source", {{"queue", dlq->name}, {"reason", t.status().message()}});
    }
  }
  return std::nullopt;
}

// The archive form's first pass over the selection: counted by DLQ, and with
// --to-source every record's source resolved; then the DLQ-span guard and
// the notes on what the guards let through.
std::optional<int> CheckArchiveSelection(const ReplayCommandOptions& options, const ReplayDeps& deps,
                                         const ReplayStores& stores, const Filter& filter, TargetResolver& targets,
                                         uint64_t& selected) {
  Status resolve_error;
  uint64_t seen = 0;
  DlqCounts by_dlq;
  auto only = FailedAgainOnly(options, stores.failed_again);
  auto pass = ForEachSelected(*stores.store, *stores.archive, filter, only, [&](const ArchiveRecord& r) {
    if (options.max > 0 && seen >= options.max) return false;
    ++seen;
    ++by_dlq[r.queue];
    if (!options.to_source) return true;
    auto t = targets.Resolve(r);
    if (!t.ok()) resolve_error = t.status();
    return t.ok();
  });
  if (!pass.ok()) return Fail(deps, kExitFailure, pass.status().message());
  selected = seen;
  if (!resolve_error.ok()) {
    return Fail(deps, ExitCodeFor(resolve_error), resolve_error.message() + "; nothing was sent");
  }
  if (Status st = CheckDlqSpan(by_dlq, !options.to_source, options.dry_run, options.all_queues, options.to_queue);
      !st.ok()) {
    return Fail(deps, kExitUsage, st.message());
  }
  PrintGuardNotes(options, filter, by_dlq, targets, options.output == "json" ? deps.err : deps.out);
  return std::nullopt;
}

// Who runs a real replay, for the audit record: the caller's ARN, or why it
// is unknown.
struct Caller {
  std::string arn, error;
};

Caller LookUpCaller(const ReplayCommandOptions& options, const ReplayDeps& deps) {
  Caller caller;
  if (!options.dry_run && deps.caller_arn) {
    auto who = deps.caller_arn();
    if (who.ok()) {
      caller.arn = *who;
    } else {
      caller.error = who.status().message();
    }
  }
  return caller;
}

// Whether a message is sent (ReplayOptions::skip). A message whose lineage
// failed again after a replay (replay/audit.h) is sent once per run, under
// the first of its ids met; its latest outcome decides the rest: failed
// again, it is sent (the fix is being tried); delivered to this destination,
// it is skipped as already replayed. Any other message is skipped when the
// ledger says an earlier run delivered it here. --again sends what was
// delivered, never two copies of one message.
Result<ReplaySkip> SkipDecision(ReplayStores& stores, bool again, const std::string& url, const ArchiveRecord& r) {
  const FailedAgainIndex* index = stores.failed_again ? &*stores.failed_again : nullptr;
  const std::string* root = index != nullptr ? index->RootOf(r.message_id) : nullptr;
  if (root != nullptr) {
    auto sent = stores.lineages_sent.find(*root);
    if (sent != stores.lineages_sent.end()) return ReplaySkip{ReplaySkip::kCopy, sent->second};
    const FailedAgainIndex::Latest* latest = index->LatestOf(r.message_id);
    if (!again && !latest->failed_again && latest->destination == url) {
      return ReplaySkip{ReplaySkip::kAlreadyReplayed, ""};
    }
    if (latest->failed_again) ++stores.failed_again_resent;
    stores.lineages_sent.emplace(*root, r.message_id);
    return ReplaySkip{};
  }
  if (again || !stores.ledger) return ReplaySkip{};
  DLQ_ASSIGN_OR_RETURN(bool delivered, stores.ledger->AlreadySent(url, r.message_id));
  return ReplaySkip{delivered ? ReplaySkip::kAlreadyReplayed : ReplaySkip::kSend, ""};
}

// The engine's options besides the rate: limits, concurrency, the checkpoint,
// and the skip and record hooks.
void ConfigureEngine(const ReplayCommandOptions& options, std::string identity_text, ReplayStores& stores,
                     const std::atomic<bool>& stop, ReplayOptions& ro) {
  std::optional<ReplayLedger>& ledger = stores.ledger;
  ro.max = options.max;
  ro.concurrency = options.concurrency > 0 ? options.concurrency : options.checkpoint.empty() ? 4 : 1;
  ro.dry_run = options.dry_run;
  ro.checkpoint_path = options.dry_run || !options.from_queue.empty() ? "" : options.checkpoint;
  ro.checkpoint_mode = options.file_modes.file;
  ro.identity_text = std::move(identity_text);
  ro.stop = &stop;
  if (ledger || stores.failed_again) {
    ro.skip = [&stores, again = options.again](const std::string& url, const ArchiveRecord& r) {
      return SkipDecision(stores, again, url, r);
    };
  }
  if (ledger && !options.dry_run) {
    ro.on_sent = [&ledger](const std::string& url, const std::string& id) { return ledger->RecordSent(url, id); };
  }
}

// What the send pass did, for the audit record, the summary and the exit code.
struct PassResult {
  bool live = false;  // received from the DLQ
  Status status;
  std::optional<ScanStats> scan;              // archive form
  std::optional<LiveReplayStats> live_stats;  // live form: also when the pass ended with an error
};

// Feeds the selection to the replayer (received from the DLQ, or read from
// the archive in key order) and waits for what is in flight.
PassResult SendSelection(const ReplayCommandOptions& options, const ReplayDeps& deps,
                         const std::optional<QueueInfo>& dlq, const ReplayStores& stores, const Filter& filter,
                         Replayer& replayer, const std::atomic<bool>& stop, RedriveGuard* guard) {
  PassResult pass;
  pass.live = dlq.has_value();
  auto only = FailedAgainOnly(options, stores.failed_again);
  if (pass.live) {
    LiveReplayOptions lo;
    lo.dry_run = options.dry_run;
    lo.stop = &stop;
    lo.guard = guard;
    const Filter& f = filter;
    LiveReplayStats so_far;
    auto r = ReplayFromQueue(
        *deps.sqs, *dlq, replayer,
        [&f, &only](const ArchiveRecord& rec) { return f.Matches(rec) && (!only || only(rec)); }, *deps.clock, lo,
        &so_far);
    pass.live_stats = so_far;
    if (!r.ok()) pass.status = r.status();
  } else {
    auto r = ForEachSelected(*stores.store, *stores.archive, filter, only, [&](const ArchiveRecord& rec) {
      auto added = replayer.Add(ReplayItem{rec, ""});
      if (!added.ok()) {
        pass.status = added.status();
        return false;
      }
      return *added;
    });
    if (!r.ok() && pass.status.ok()) pass.status = r.status();
    if (r.ok()) pass.scan = *r;
  }
  if (pass.status.ok()) pass.status = replayer.Finish();
  if (pass.status.ok() && guard != nullptr) pass.status = guard->Finish(replayer);  // the final window
  if (pass.status.ok() && stop.load()) pass.status = Cancelled("replay stopped by a signal");
  return pass;
}

// What a run is, as its checkpoint identity and its audit record name it.
struct RunIdentity {
  std::string source;  // the DLQ's URL, or the archive's URI
  std::string filter;  // canonical
  Caller caller;
  SystemTime started;
};

// The re-failures the guard found among the messages this run sent (a
// resumed run's journal also lists those an earlier run sent: they are in
// `resumed`).
uint64_t FailedAgainThisRun(const Replayer& replayer, const GuardedRedrive* guard) {
  if (guard == nullptr) return 0;
  std::set<std::string> sent;
  for (const ReplayedMessage& m : replayer.sent()) sent.insert(m.new_message_id);
  uint64_t n = 0;
  for (const RefailedMessage& r : guard->guard->status().refailures) n += sent.count(r.new_message_id);
  return n;
}

// Every selected message in one bucket (replay/buckets.h). The live form's
// selection is what its pass selected (messages it never examined are not
// in it; the DLQ part of the summary counts them).
ReplayBuckets BucketsOf(const PassResult& pass, const Replayer& replayer, const GuardedRedrive* guard,
                        uint64_t selected) {
  const uint64_t sel = pass.live_stats ? pass.live_stats->selected : selected;
  return MakeBuckets(sel, replayer.stats(), FailedAgainThisRun(replayer, guard));
}

// Writes the audit record of a real run; returns its key.
Result<std::string> WriteAuditRecord(const ReplayCommandOptions& options, const ReplayStores& stores,
                                     const RunIdentity& run, const TargetResolver& targets, const Status& run_status,
                                     const Replayer& replayer, const GuardedRedrive* guard,
                                     const ReplayBuckets& buckets, Clock& clock) {
  const ReplayStats& s = replayer.stats();
  AuditRecord a;
  a.caller_arn = run.caller.arn;
  a.caller_error = run.caller.error;
  a.started_at = run.started;
  a.finished_at = clock.Now();
  a.source = run.source;
  a.filter = run.filter;
  a.destination = targets.Describe();
  a.transform = options.transform;
  const bool stopped = run_status.code() == ErrorCode::kCancelled || run_status.code() == ErrorCode::kAborted;
  a.outcome = !run_status.ok() ? (stopped ? "stopped" : "failed") : (s.failed > 0 ? "failed" : "done");
  a.again = options.again;
  a.stats = s;
  a.stats.accepted = buckets.selected;
  a.buckets = buckets;
  a.sent_by_destination = replayer.sent_by_destination();
  a.sent = replayer.sent();
  a.failures = replayer.failures();
  if (guard != nullptr && !guard->options.BackpressureOnly())
    a.redrive = GuardAudit(guard->guard->status(), guard->options);
  if (guard != nullptr) a.failed_again = FailedAgainOf(guard->guard->status());
  return WriteAudit(*stores.audit_store, ArchivePrefix(*stores.audit_at), a);
}

void PrintFailures(const std::vector<ReplayFailure>& failures, std::FILE* err) {
  for (size_t i = 0; i < failures.size() && i < kFailuresShown; ++i) {
    const ReplayFailure& f = failures[i];
    std::fprintf(err, "failed: %s -> %s: %s\n", TerminalSafe(f.message_id).c_str(),
                 f.destination.empty() ? "(unresolved)" : TerminalSafe(f.destination).c_str(),
                 TerminalSafe(f.reason).c_str());
  }
  if (failures.size() > kFailuresShown) {
    std::fprintf(err, "failed: ... and %zu more (all are in the audit record)\n", failures.size() - kFailuresShown);
  }
}

// The summary's first part: every bucket, and how fast.
std::string SentSummary(const ReplayCommandOptions& options, const ReplayStats& s, const ReplayBuckets& b,
                        const std::string& destination, bool live, double secs) {
  const std::string where = live ? "the DLQ" : "the archive";
  const std::string buckets = BucketsText(b, options.dry_run, !options.checkpoint.empty(), where);
  if (options.dry_run) return fmt::format("dry run to {}: {}", destination, buckets);
  return fmt::format("replayed to {}: {}, {:.1f} s, {:.0f} msg/s (sending: {:.2f} s, {:.0f} msg/s)", destination,
                     buckets, secs, secs > 0 ? s.sent / secs : 0.0, s.send_seconds,
                     s.send_seconds > 0 ? s.sent / s.send_seconds : 0.0);
}

// The archive's part of the summary when objects or lines were skipped; each
// skipped entry and unreadable line is named on `err`.
std::string SkippedSummary(const ScanStats& scan, const Destination& archive, std::FILE* err) {
  std::string out = fmt::format("; archive: {} and {} skipped",
                                CountNoun(scan.skipped_objects, "unreadable object", "unreadable objects"),
                                CountNoun(scan.skipped_lines, "unreadable line", "unreadable lines"));
  if (!scan.skipped_entries.empty()) {
    out += fmt::format(", {} of the archive directory not read",
                       CountNoun(scan.skipped_entries.size(), "entry", "entries"));
    ReportSkipped(scan.skipped_entries, archive, err);
  }
  for (const ReadError& e : scan.errors) {
    std::fprintf(err, "warning: %s line %llu: %s\n", TerminalSafe(e.key).c_str(),
                 static_cast<unsigned long long>(e.line), TerminalSafe(e.message).c_str());
  }
  return out;
}

// After a live run: what is still in the DLQ and why, and how to archive it.
std::string LeftInDlq(const ReplayCommandOptions& options, const LiveReplayStats& l, const ReplayBuckets& b,
                      const QueueInfo& dlq) {
  std::vector<std::string> parts;
  auto add = [&parts](uint64_t n, const char* what) {
    if (n > 0) parts.push_back(fmt::format("{} {}", n, what));
  };
  add(b.already_replayed, "already replayed (delivered by an earlier run)");
  add(b.copies, "copies of messages sent in this run");
  add(b.failed_again, "failed again in this run");
  add(b.failed, "failed to send");
  add(b.not_sent + b.would_send, "selected and not sent");
  add(l.not_selected, "not selected");
  add(l.delete_failures, "sent, but their delete failed");
  if (l.present_at_start >= 0 && static_cast<uint64_t>(l.present_at_start) > l.examined) {
    parts.push_back(fmt::format("~{} not examined", static_cast<uint64_t>(l.present_at_start) - l.examined));
  }
  if (parts.empty()) return "";
  std::string out = "left in the DLQ: ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? ", " : "") + parts[i];
  out += fmt::format("; `dlq-archive archive --queue {} --to {}` archives them", dlq.name,
                     options.audit_to.empty() ? std::string("URL") : options.audit_to);
  return out;
}

// Prints the failures, the summary line and where the audit record went.
void PrintSummary(const ReplayCommandOptions& options, const ReplayDeps& deps, const ReplayStores& stores,
                  const TargetResolver& targets, const Replayer& replayer, const PassResult& pass,
                  const ReplayBuckets& buckets, const std::optional<QueueInfo>& dlq, double secs,
                  const GuardedRedrive* guard, const std::string& audit_key) {
  const ReplayStats& s = replayer.stats();
  PrintFailures(replayer.failures(), deps.err);
  std::string summary = SentSummary(options, s, buckets, targets.Describe(), pass.live, secs);
  summary += SkipNotes(buckets, stores, options.again);
  if (s.order_breaks > 0) summary += fmt::format("; {} FIFO order breaks (buffer full)", s.order_breaks);
  if (pass.live) {
    for (const std::string& route : targets.CrossAccountRoutes()) {
      std::fprintf(deps.out, "cross-account: %s\n", TerminalSafe(route).c_str());
    }
  }
  if (pass.live_stats) summary += LiveSummary(*pass.live_stats);
  if (pass.scan && !pass.scan->complete()) summary += SkippedSummary(*pass.scan, *stores.archive, deps.err);
  std::fprintf(deps.out, "%s\n", TerminalSafe(summary).c_str());
  if (pass.live_stats && dlq && !options.dry_run) {
    const std::string left = LeftInDlq(options, *pass.live_stats, buckets, *dlq);
    if (!left.empty()) std::fprintf(deps.out, "%s\n", TerminalSafe(left).c_str());
  }
  if (guard != nullptr) {
    std::fprintf(deps.out, "%s\n", TerminalSafe(GuardSummary(guard->guard->status(), guard->options)).c_str());
  }
  if (!audit_key.empty()) {
    std::fprintf(deps.out, "audit: %s\n", TerminalSafe(stores.audit_store->Describe() + "/" + audit_key).c_str());
  }
}

// `--output json`: the run as one document (doc/replay.md "--output json").
std::string SummaryJson(const ReplayCommandOptions& options, const ReplayStores& stores, const TargetResolver& targets,
                        const Replayer& replayer, const PassResult& pass, const ReplayBuckets& buckets,
                        const GuardedRedrive* guard, const std::string& audit_key,
                        const std::vector<std::string>& dry_run_lines, int exit_code) {
  JsonWriter w;
  w.BeginObject().Key("dry_run").Bool(options.dry_run).Key("destination").String(targets.Describe());
  w.Key("buckets");
  WriteBucketsJson(w, buckets);
  w.Key("sent_by_destination").BeginObject();
  for (const auto& [url, n] : replayer.sent_by_destination()) w.Key(url).Uint(n);
  w.EndObject();
  w.Key("failures").BeginArray();
  for (const ReplayFailure& f : replayer.failures()) {
    w.BeginObject().Key("message_id").String(f.message_id).Key("destination").String(f.destination);
    w.Key("reason").String(f.reason).EndObject();
  }
  w.EndArray();
  w.Key("guard");
  if (guard == nullptr) {
    w.Null();
  } else {
    const RedriveStatus& g = guard->guard->status();
    w.BeginObject().Key("phase").String(RedrivePhaseName(g.phase)).Key("reason").String(g.reason);
    w.Key("canary").Uint(guard->options.canary).Key("steps").Int(g.steps);
    w.Key("sent_per_step").BeginArray();
    for (uint64_t n : g.sent_per_step) w.Uint(n);
    w.EndArray();
    w.Key("window_s").Double(std::chrono::duration<double>(guard->options.window).count());
    w.Key("refailed").Uint(g.refailed).Key("dlq_receives").Uint(g.dlq_receives);
    w.Key("paused_s").Double(std::chrono::duration<double>(g.paused_for).count());
    w.Key("failed_again").BeginArray();
    for (const RefailedMessage& r : g.refailures) {
      w.BeginObject().Key("message_id").String(r.message_id).Key("new_message_id").String(r.new_message_id);
      w.Key("destination").String(r.destination).Key("dlq").String(r.dlq);
      w.Key("found_at").String(FormatIso8601(r.found_at)).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.Key("dlq");
  if (!pass.live_stats) {
    w.Null();
  } else {
    const LiveReplayStats& l = *pass.live_stats;
    w.BeginObject().Key("present_at_start").Int(l.present_at_start).Key("examined").Uint(l.examined);
    w.Key("selected").Uint(l.selected).Key("not_selected").Uint(l.not_selected).Key("deleted").Uint(l.deleted);
    w.Key("delete_failures").Uint(l.delete_failures).Key("released").Uint(l.released);
    w.Key("receives").Uint(l.receive_calls).Key("complete").Bool(l.complete).EndObject();
  }
  w.Key("skip_checked").Bool(stores.ledger.has_value());
  w.Key("audit");
  if (audit_key.empty()) {
    w.Null();
  } else {
    w.String(stores.audit_store->Describe() + "/" + audit_key);
  }
  if (options.dry_run) {
    w.Key("dry_run_lines").BeginArray();
    for (const std::string& line : dry_run_lines) w.String(line);
    w.EndArray();
  }
  w.Key("error");
  if (pass.status.ok()) {
    w.Null();
  } else {
    w.String(pass.status.message());
  }
  w.Key("exit_code").Int(exit_code).EndObject();
  std::string out = w.Take();
  out += '\n';
  return out;
}

// The exit code of a run that got to sending (see replay_command.h).
int RunExitCode(const ReplayDeps& deps, const PassResult& pass, const Status& audit_status, const ReplayStats& s,
                const GuardedRedrive* guard, const ReplayBuckets& buckets) {
  if (pass.status.code() == ErrorCode::kAborted && guard != nullptr) {
    int64_t not_sent = static_cast<int64_t>(buckets.not_sent);
    if (pass.live && pass.live_stats && pass.live_stats->present_at_start >= 0) {
      // The live form: also what the pass never examined.
      not_sent = std::max<int64_t>(pass.live_stats->present_at_start - static_cast<int64_t>(s.sent), 0);
    }
    PrintBreach(guard->guard->status(), pass.status.message(), not_sent, pass.live, deps.err);
    return kExitRefailed;
  }
  if (!pass.status.ok()) {
    std::fprintf(deps.err, "error: replay: %s\n", TerminalSafe(pass.status.message()).c_str());
    // A resolution or checkpoint error found only now still means bad input,
    // but if something was sent the run failed part-way.
    int code = ExitCodeFor(pass.status);
    return code == kExitUsage && s.sent > 0 ? kExitFailure : code;
  }
  if (!audit_status.ok()) {
    std::fprintf(deps.err, "error: replay: %s (the messages were sent)\n",
                 TerminalSafe(audit_status.message()).c_str());
    return kExitFailure;
  }
  if (s.failed > 0) return kExitFailure;
  if (pass.live_stats && !pass.live_stats->incomplete_reason.empty()) {
    std::fprintf(deps.err, "incomplete: %s\n", TerminalSafe(pass.live_stats->incomplete_reason).c_str());
    return kExitIncomplete;
  }
  if (pass.live_stats && pass.live_stats->delete_failures > 0) return kExitSkipped;
  if (pass.scan && !pass.scan->complete()) return kExitSkipped;
  return 0;
}

// The live form's selection, the ramp's 100%: the messages in the DLQ now
// (visible and in flight), at most --max.
uint64_t LiveSelection(const ReplayCommandOptions& options, const ReplayDeps& deps, const QueueInfo& dlq) {
  auto attrs =
      deps.sqs->GetQueueAttributes(dlq.url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  uint64_t n = 0;
  if (attrs.ok()) {
    for (const auto& [name, value] : *attrs) {
      if (auto v = ParseInt64(value); v && *v > 0) n += static_cast<uint64_t>(*v);
    }
  }
  return options.max > 0 ? std::min(n, options.max) : n;
}

// A guarded run: reads the destinations' windows and backlog and makes the
// guard, before anything is sent. A destination without a DLQ is exit 2.
std::optional<int> SetUpGuard(const ReplayCommandOptions& options, const ReplayDeps& deps, const RedrivePlan& plan,
                              const TargetResolver& targets, const std::optional<QueueInfo>& dlq, uint64_t selected,
                              const std::atomic<bool>& stop, std::unique_ptr<GuardedRedrive>& out) {
  if (!(plan.guarded || plan.backpressure) || (!dlq && selected == 0)) return std::nullopt;  // nothing to guard
  GuardInputs in;
  in.sqs = deps.sqs;
  in.clock = deps.clock;
  in.region = deps.region;
  in.stop = &stop;
  for (const auto& [url, target] : targets.Resolved()) in.destinations.push_back(url);
  in.selection = dlq ? LiveSelection(options, deps, *dlq) : selected;
  if (dlq) in.live_dlq = dlq->url;
  auto g = plan.guarded ? PrepareGuard(plan, in) : PrepareBackpressure(plan, in);
  if (!g.ok()) {
    const int code = g.status().code() == ErrorCode::kFailedPrecondition ? kExitUsage : ExitCodeFor(g.status());
    return Fail(deps, code, g.status().message() + "; nothing was sent");
  }
  out = std::move(*g);
  return std::nullopt;
}

// Reports the guard's phases on the progress line and starts it (its journal
// beside the checkpoint). A journal of a run that stopped on a breach: exit 5.
std::optional<int> StartGuard(const ReplayCommandOptions& options, const ReplayDeps& deps, GuardedRedrive* guard,
                              Progress& progress) {
  if (guard == nullptr || options.dry_run) return std::nullopt;
  guard->guard->OnStatus([&progress, &deps](const RedriveStatus& s) {
    progress.Guard(s);
    if (deps.on_redrive_status) deps.on_redrive_status(s);
  });
  // A backlog bound alone has no phases worth resuming: no journal.
  const bool journal = !options.checkpoint.empty() && !guard->options.BackpressureOnly();
  Status st = guard->guard->Start(journal ? options.checkpoint + ".guard" : "", options.file_modes.file);
  if (!st.ok()) return Fail(deps, ExitCodeFor(st), st.message());
  return std::nullopt;
}

// What a run that got to sending ends with: the ledger flushed, the audit
// record, the summary (text, or the --output json document) and the exit code.
int Conclude(const ReplayCommandOptions& options, const ReplayDeps& deps, ReplayStores& stores, const RunIdentity& run,
             const TargetResolver& targets, const Replayer& replayer, PassResult& pass,
             const std::optional<QueueInfo>& dlq, const GuardedRedrive* guarded, uint64_t selected, double secs,
             const std::vector<std::string>& dry_run_lines) {
  const bool json = options.output == "json";
  const ReplayBuckets buckets = BucketsOf(pass, replayer, guarded, selected);
  if (stores.ledger && !options.dry_run) {
    Status flushed = stores.ledger->Flush();
    if (!flushed.ok() && pass.status.ok()) pass.status = flushed;
  }
  std::string audit_key;
  Status audit_status;
  if (!options.dry_run && stores.audit_store != nullptr) {
    auto key = WriteAuditRecord(options, stores, run, targets, pass.status, replayer, guarded, buckets, *deps.clock);
    if (key.ok()) {
      audit_key = *key;
    } else {
      audit_status = key.status();
    }
  }
  if (!json) PrintSummary(options, deps, stores, targets, replayer, pass, buckets, dlq, secs, guarded, audit_key);
  if (json) PrintFailures(replayer.failures(), deps.err);
  const int code = RunExitCode(deps, pass, audit_status, replayer.stats(), guarded, buckets);
  if (json) {
    std::fputs(
        SummaryJson(options, stores, targets, replayer, pass, buckets, guarded, audit_key, dry_run_lines, code).c_str(),
        deps.out);
  }
  return code;
}

}  // namespace

std::optional<double> ParseRate(std::string_view text) {
  if (EndsWith(text, "/s")) text.remove_suffix(2);
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !(v > 0) || v > 1e6) return std::nullopt;
  return v;
}

int RunReplay(const ReplayCommandOptions& options, const ReplayDeps& deps, const std::atomic<bool>& stop) {
  Clock& clock = *deps.clock;
  // Validate everything before any call.
  const bool live = !options.from_queue.empty();
  ReplayOptions ro;
  RedrivePlan plan;
  if (auto code = CheckFlags(options, deps, live, ro, plan)) return *code;
  auto filter = BuildFilter(options.filter, clock.Now());
  if (!filter.ok()) return Fail(deps, kExitUsage, filter.status().message());
  if (Status st = filter->CompileRegex(); !st.ok()) return Fail(deps, kExitUsage, st.message());
  if (Status st = CheckFilterNotEmpty(!live, options.dry_run, options.all, *filter); !st.ok()) {
    return Fail(deps, kExitUsage, st.message());
  }
  ReplayStores stores;
  if (auto code = OpenStores(options, deps, stores)) return *code;

  // Resolve the destinations and check the guards before anything is sent.
  std::unique_ptr<TargetResolver> targets = options.to_source
                                                ? TargetResolver::ToSource(*deps.sqs, deps.region)
                                                : TargetResolver::Fixed(*deps.sqs, options.to_queue, deps.region);
  targets->AllowCrossAccount(options.allow_cross_account);
  std::optional<QueueInfo> dlq;
  if (auto code = ResolveDestinations(options, deps, live, *targets, dlq)) return *code;
  uint64_t selected = 0;
  if (!live) {
    if (auto code = CheckArchiveSelection(options, deps, stores, *filter, *targets, selected)) return *code;
  }
  std::unique_ptr<GuardedRedrive> guard;
  if (auto code = SetUpGuard(options, deps, plan, *targets, dlq, selected, stop, guard)) return *code;
  if (guard && !options.dry_run) ro.gate = guard->guard.get();
  const bool json = options.output == "json";
  std::FILE* const notes = json ? deps.err : deps.out;  // stdout holds only the document with --output json
  if (guard && options.dry_run) std::fprintf(notes, "%s\n", TerminalSafe(GuardPlanLine(*guard)).c_str());
  GuardedRedrive* const guarded = options.dry_run ? nullptr : guard.get();

  // The run.
  RunIdentity run{live ? dlq->url : stores.archive->uri, filter->Canonical(), LookUpCaller(options, deps), {}};
  std::unique_ptr<RecordTransform> transform;
  if (!options.transform.empty()) {
    auto t = CommandTransform::Start(
        options.transform, std::chrono::milliseconds(static_cast<int64_t>(options.transform_timeout_s * 1000)));
    if (!t.ok()) return Fail(deps, kExitUsage, t.status().message());
    transform = std::move(*t);
  }
  ConfigureEngine(options, CheckpointIdentityText(run.source, run.filter, targets->Describe(), options.transform),
                  stores, stop, ro);
  Replayer replayer(*deps.sqs, *targets, clock, ro, transform.get());
  if (Status st = replayer.Start(); !st.ok()) return Fail(deps, ExitCodeFor(st), st.message());
  std::vector<std::string> dry_run_lines;
  replayer.OnDryRun([&](const DryRunEntry& e) {
    const bool counted = e.kind == DryRunEntry::kWouldSend && deps.on_would_send;
    if (counted) deps.on_would_send(e);
    if (json) {
      dry_run_lines.push_back(DryRunLine(e));
    } else if (!counted) {
      std::fprintf(deps.out, "%s\n", TerminalSafe(DryRunLine(e)).c_str());
    }
  });
  const bool tty = isatty(fileno(deps.err)) != 0;
  Progress progress(ChooseProgressMode(options.progress, tty), clock, deps.err);
  replayer.OnProgress([&](const ReplayStats& s) { progress.Update(s); });
  if (auto code = StartGuard(options, deps, guarded, progress)) return *code;
  run.started = clock.Now();
  const auto steady_start = clock.SteadyNow();
  PassResult pass =
      SendSelection(options, deps, dlq, stores, *filter, replayer, stop, guarded ? guarded->guard.get() : nullptr);
  const double secs = std::chrono::duration<double>(clock.SteadyNow() - steady_start).count();
  progress.Clear();
  return Conclude(options, deps, stores, run, *targets, replayer, pass, dlq, guarded, selected, secs, dry_run_lines);
}

int RunReplayCommand(const ReplayCommandOptions& options, AwsServices& services, const std::atomic<bool>& stop) {
  ReplayDeps deps;
  deps.sqs = &services.sqs();
  deps.open_store = [&services, &options](const Destination& d) { return OpenStore(d, &services, options.file_modes); };
  deps.caller_arn = [&services]() -> Result<std::string> {
    DLQ_ASSIGN_OR_RETURN(CallerIdentity who, services.sts().GetCallerIdentity());
    return who.arn;
  };
  deps.region = services.settings().region;
  deps.clock = &services.clock();
  return RunReplay(options, deps, stop);
}

namespace {

// The guard flags (doc/replay.md "Guarded redrive: the flags"); checked by ParseRedriveFlags.
void AddRedriveFlags(CLI::App& cmd, RedriveFlags& f) {
  cmd.add_option("--canary", f.canary,
                 "send N messages first and wait the processing window (default with --to-source: max(10, 1%))")
      ->check(IntegerValidator(1, UINT64_MAX));
  cmd.add_flag("--no-canary", f.no_canary, "no canary and no ramp: a plain replay");
  cmd.add_option("--ramp", f.ramp, "cumulative percentages of the selection after each step (default 5,25,100)");
  cmd.add_option("--window", f.window, "processing window (default: maxReceiveCount x VisibilityTimeout + ...)")
      ->check(DurationValidator());
  cmd.add_option("--check", f.check,
                 "wait after each ramp step (default: the window; shorter lets a step's re-failures arrive after "
                 "the next step was sent)")
      ->check(DurationValidator());
  cmd.add_option("--max-refailures", f.max_refailures, "re-failures allowed after the canary: N or P% (default 1%)");
  cmd.add_option("--canary-max-refailures", f.canary_max_refailures, "re-failures allowed in the canary (default 0)")
      ->check(IntegerValidator(0, UINT64_MAX));
  cmd.add_option("--max-backlog", f.max_backlog,
                 "pause while the destination holds more than N visible messages, or its oldest is older than "
                 "DURATION (repeatable; with or without a canary)");
}

Runner AddReplayFlags(CLI::App& cmd) {
  auto rp = std::make_shared<ReplayCommandOptions>();
  cmd.add_option("--from", rp->from, "archive to read: s3://BUCKET/PREFIX or file:///DIR");
  cmd.add_option("--from-queue", rp->from_queue, "live form: move messages out of this DLQ (name, URL or ARN)");
  AddFilterFlags(cmd, rp->filter);
  cmd.add_flag("--to-source", rp->to_source, "send each message to the queue it failed from");
  cmd.add_option("--to-queue", rp->to_queue, "send every message to this queue (name, URL or ARN)");
  cmd.add_flag("--all", rp->all, "--from with no filter: replay every archived message (required then)");
  cmd.add_flag("--all-queues", rp->all_queues,
               "--to-queue: send the messages of several DLQs into the one queue (required then)");
  cmd.add_flag("--allow-cross-account", rp->allow_cross_account,
               "--to-source: send to sources in another account or region than their DLQ (each is printed)");
  cmd.add_option("--rate", rp->rate, "messages per second, e.g. 100/s (default: unlimited)");
  cmd.add_option("--max", rp->max, "send at most this many messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  cmd.add_option("--concurrency", rp->concurrency,
                 "SendMessageBatch calls in flight (default 4; 1 with --checkpoint, so a crash duplicates at most "
                 "one batch)")
      ->check(IntegerValidator(1, 64));
  cmd.add_flag("--dry-run", rp->dry_run, "print what would be sent; send and write nothing");
  cmd.add_option("--checkpoint", rp->checkpoint,
                 "progress file: a rerun resumes where a killed run stopped (a guarded run also keeps FILE.guard; "
                 "with --from-queue only when guarded)");
  cmd.add_option("--transform", rp->transform,
                 "pipe each record (one JSON line) through `sh -c CMD`; send the record it prints back");
  cmd.add_option("--transform-timeout", rp->transform_timeout_s, "seconds to wait for each transformed line")
      ->capture_default_str()
      ->check(SecondsValidator());
  cmd.add_option("--audit-to", rp->audit_to,
                 "archive URL for the audit record and the record of what was sent (required by --from-queue; "
                 "default: the --from archive)");
  cmd.add_flag("--again", rp->again,
               "also send messages an earlier replay delivered to the same destination (messages that failed again "
               "after a replay are sent without it)");
  cmd.add_flag("--failed-again", rp->failed_again,
               "only messages whose latest outcome after a replay is a re-failure (as search --failed-again lists "
               "them)");
  cmd.add_option("--progress", rp->progress,
                 "auto (a line redrawn on a terminal, plain lines every 10 s elsewhere), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd.add_option("--output", rp->output, "text or json (the summary as one JSON document on stdout)")
      ->check(CLI::IsMember({"text", "json"}));
  AddRedriveFlags(cmd, rp->redrive);
  return [rp](const CommandContext& ctx) {
    std::optional<FileModes> modes = FileModesOrReport();
    if (!modes) return 2;
    ReplayCommandOptions options = *rp;
    options.file_modes = *modes;
    return WithServices(ctx, [&](AwsServices& services) { return RunReplayCommand(options, services, ctx.stop); });
  };
}

}  // namespace

Command ReplayCommand() {
  return {"replay", "send archived or live DLQ messages back to a queue, filtered",
          "Exit codes: 0 every selected message sent; 1 some failed or an error stopped the run; 2 usage error, an "
          "unresolvable or missing destination, another run's checkpoint, no filter without --all, several DLQs "
          "into --to-queue without --all-queues, or a source in another account or region without "
          "--allow-cross-account, or a canary whose destination has no DLQ (nothing sent); 3 sent, but unreadable "
          "archive objects or lines were skipped (live: some deletes failed); 4 (live) the pass could not examine "
          "every message present at its start; 5 a guarded replay stopped: more messages failed again than its "
          "bound (the rest not sent); 130 stopped by a signal",
          AddReplayFlags};
}

}  // namespace dlq
