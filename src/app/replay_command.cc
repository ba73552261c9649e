#include "app/replay_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <optional>

#include "app/archive_source.h"
#include "app/command.h"
#include "app/flag_validators.h"
#include "app/replay_guards.h"
#include "app/replay_redrive.h"
#include "archive/key_layout.h"
#include "archiver/drainer.h"
#include "common/count_noun.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/text.h"
#include "query/scan.h"
#include "replay/audit.h"
#include "replay/checkpoint.h"
#include "replay/ledger.h"
#include "replay/live_source.h"
#include "replay/replayer.h"
#include "replay/targets.h"
#include "replay/transform.h"

namespace dlq {
namespace {

constexpr int kExitFailure = 1, kExitUsage = 2, kExitSkipped = 3, kExitIncomplete = 4, kExitRefailed = 5,
              kExitInterrupted = 130;
constexpr size_t kFailuresShown = 20;

// Prints a live progress line on stderr (through the logger, so log lines do
// not break it), at most every 200 ms.
class Progress {
 public:
  Progress(bool enabled, Clock& clock) : enabled_(enabled), clock_(clock), start_(clock.SteadyNow()) {}
  ~Progress() { Clear(); }
  // Takes the line away (before the summary is printed).
  void Clear() {
    if (enabled_) Log().SetStatusLine("");
  }
  void Update(const ReplayStats& s, bool force = false) {
    if (!enabled_) return;
    stats_ = s;
    auto now = clock_.SteadyNow();
    if (!force && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    std::string line = fmt::format("replay: selected {}, sent {}, failed {}, resumed {}, {:.0f} msg/s", s.accepted,
                                   s.sent, s.failed, s.resumed, secs > 0 ? s.sent / secs : 0.0);
    Log().SetStatusLine(guard_.empty() ? line : guard_ + " | " + line);
  }
  // A guarded run: the phase and why lead the line (shown at once on a phase change).
  void Guard(const RedriveStatus& s) {
    if (!enabled_) return;
    const bool changed = !phase_ || *phase_ != s.phase;
    phase_ = s.phase;
    guard_ = RedriveProgressLine(s);
    Update(stats_, changed);
  }

 private:
  bool enabled_;
  std::string guard_;
  std::optional<RedrivePhase> phase_;
  ReplayStats stats_;
  Clock& clock_;
  std::chrono::steady_clock::time_point start_, last_{};
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
// out. The same archive and filter give the same sequence every time, which
// the checkpoint relies on.
Result<ScanStats> ForEachSelected(ObjectStore& store, const Destination& from, const Filter& filter,
                                  const std::function<bool(const ArchiveRecord&)>& fn) {
  ScanOptions options;
  options.filter = filter;
  return ScanArchive(store, from, options, [&](const ArchiveRecord& r, const RecordLocation&) { return fn(r); });
}

// What the ledger did, for the summary: the messages not sent because an
// earlier run delivered them, or why nothing was checked.
// `failed_again`: those of already_replayed skipped because they failed
// again after an earlier replay.
std::string AlreadyReplayedNote(const ReplayStats& s, uint64_t failed_again, bool checked, bool again) {
  if (again) return "; --again: earlier deliveries not skipped (nor messages that failed again)";
  if (!checked) return "; not checked against earlier replays (no --audit-to)";
  std::string out;
  if (s.already_replayed > failed_again) {
    out = fmt::format(
        "; skipped {} already replayed to the same destination by an earlier run (see `dlq-archive audit ls`; "
        "--again sends them)",
        s.already_replayed - failed_again);
  }
  if (failed_again > 0) {
    out += fmt::format(
        "; skipped {} that failed again after an earlier replay (`dlq-archive search --failed-again` lists them; "
        "--again sends them)",
        failed_again);
  }
  return out;
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
  // Messages that failed again after an earlier replay: not sent unless --again.
  std::optional<FailedAgainIndex> failed_again;
  uint64_t failed_again_skipped = 0;
};

// Reads the failed-again messages of the audit location (unless --again).
std::optional<int> LoadFailedAgain(const ReplayCommandOptions& options, const ReplayDeps& deps, ReplayStores& s) {
  if (options.again || s.audit_store == nullptr) return std::nullopt;
  auto index = ReadFailedAgain(*s.audit_store, ArchivePrefix(*s.audit_at));
  if (!index.ok()) {
    return Fail(deps, kExitFailure,
                index.status().message() + " (the messages that failed again after a replay are not sent without it)");
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
  auto pass = ForEachSelected(*stores.store, *stores.archive, filter, [&](const ArchiveRecord& r) {
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
  PrintGuardNotes(options, filter, by_dlq, targets, deps.out);
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

// The engine's options besides the rate: limits, concurrency, the checkpoint,
// and the ledger's skip and record hooks.
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
  if (ledger && !options.again) {
    // A message that failed again is skipped whatever the destination; the
    // ledger skips what went to this one.
    ro.already_sent = [&stores](const std::string& url, const ArchiveRecord& r) -> Result<bool> {
      if (stores.failed_again && stores.failed_again->Contains(r.message_id)) {
        ++stores.failed_again_skipped;
        return true;
      }
      return stores.ledger->AlreadySent(url, r.message_id);
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
  std::optional<LiveReplayStats> live_stats;  // live form
};

// Feeds the selection to the replayer (received from the DLQ, or read from
// the archive in key order) and waits for what is in flight.
PassResult SendSelection(const ReplayDeps& deps, const std::optional<QueueInfo>& dlq, const ReplayStores& stores,
                         const Filter& filter, Replayer& replayer, const std::atomic<bool>& stop, bool dry_run,
                         RedriveGuard* guard) {
  PassResult pass;
  pass.live = dlq.has_value();
  if (pass.live) {
    LiveReplayOptions lo;
    lo.dry_run = dry_run;
    lo.stop = &stop;
    lo.guard = guard;
    const Filter& f = filter;
    auto r = ReplayFromQueue(
        *deps.sqs, *dlq, replayer, [&f](const ArchiveRecord& rec) { return f.Matches(rec); }, *deps.clock, lo);
    if (r.ok()) {
      pass.live_stats = *r;
    } else {
      pass.status = r.status();
    }
  } else {
    auto r = ForEachSelected(*stores.store, *stores.archive, filter, [&](const ArchiveRecord& rec) {
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

// Writes the audit record of a real run; returns its key.
Result<std::string> WriteAuditRecord(const ReplayCommandOptions& options, const ReplayStores& stores,
                                     const RunIdentity& run, const TargetResolver& targets, const Status& run_status,
                                     const Replayer& replayer, const GuardedRedrive* guard, Clock& clock) {
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
  a.stats.already_replayed -= stores.failed_again_skipped;
  a.failed_again_skipped = stores.failed_again_skipped;
  a.sent_by_destination = replayer.sent_by_destination();
  a.sent = replayer.sent();
  a.failures = replayer.failures();
  if (guard != nullptr) {
    a.redrive = GuardAudit(guard->guard->status(), guard->options);
    a.failed_again = FailedAgainOf(guard->guard->status());
  }
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

// The summary's first part: what was (or would be) sent where, and how fast.
std::string SentSummary(const ReplayCommandOptions& options, const ReplayStats& s, const std::string& destination,
                        double secs) {
  if (options.dry_run) {
    return fmt::format("dry run: would send {} of {} selected to {}", s.would_send,
                       CountNoun(s.accepted, "message", "messages"), destination);
  }
  return fmt::format(
      "replayed to {}: selected {}, sent {}, failed {}{}, {:.1f} s, {:.0f} msg/s (sending: {:.2f} s, "
      "{:.0f} msg/s)",
      destination, s.accepted, s.sent, s.failed,
      options.checkpoint.empty() && s.resumed == 0
          ? ""
          : fmt::format(", skipped {} (finished by an earlier run)", s.resumed),
      secs, secs > 0 ? s.sent / secs : 0.0, s.send_seconds, s.send_seconds > 0 ? s.sent / s.send_seconds : 0.0);
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

// Prints the failures, the summary line and where the audit record went.
void PrintSummary(const ReplayCommandOptions& options, const ReplayDeps& deps, const ReplayStores& stores,
                  const TargetResolver& targets, const Replayer& replayer, const PassResult& pass, double secs,
                  const GuardedRedrive* guard, const std::string& audit_key) {
  const ReplayStats& s = replayer.stats();
  PrintFailures(replayer.failures(), deps.err);
  std::string summary = SentSummary(options, s, targets.Describe(), secs);
  summary += AlreadyReplayedNote(s, stores.failed_again_skipped, stores.ledger.has_value(), options.again);
  if (s.order_breaks > 0) summary += fmt::format("; {} FIFO order breaks (buffer full)", s.order_breaks);
  if (pass.live) {
    for (const std::string& route : targets.CrossAccountRoutes()) {
      std::fprintf(deps.out, "cross-account: %s\n", TerminalSafe(route).c_str());
    }
  }
  if (pass.live_stats) summary += LiveSummary(*pass.live_stats);
  if (pass.scan && !pass.scan->complete()) summary += SkippedSummary(*pass.scan, *stores.archive, deps.err);
  std::fprintf(deps.out, "%s\n", TerminalSafe(summary).c_str());
  if (guard != nullptr) {
    std::fprintf(deps.out, "%s\n", TerminalSafe(GuardSummary(guard->guard->status(), guard->options)).c_str());
  }
  if (!audit_key.empty()) {
    std::fprintf(deps.out, "audit: %s\n", TerminalSafe(stores.audit_store->Describe() + "/" + audit_key).c_str());
  }
}

// The exit code of a run that got to sending (see replay_command.h).
int RunExitCode(const ReplayDeps& deps, const PassResult& pass, const Status& audit_status, const ReplayStats& s,
                const GuardedRedrive* guard, uint64_t selected) {
  if (pass.status.code() == ErrorCode::kAborted && guard != nullptr) {
    int64_t not_sent = -1;
    if (!pass.live) {
      not_sent = static_cast<int64_t>(selected) - static_cast<int64_t>(s.sent + s.resumed);
    } else if (pass.live_stats && pass.live_stats->present_at_start >= 0) {
      not_sent = pass.live_stats->present_at_start - static_cast<int64_t>(s.sent);
    } else {
      not_sent = static_cast<int64_t>(guard->guard->status().total) - static_cast<int64_t>(s.sent);
    }
    PrintBreach(guard->guard->status(), pass.status.message(), std::max<int64_t>(not_sent, -1), pass.live, deps.err);
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
  if (!plan.guarded || (!dlq && selected == 0)) return std::nullopt;  // nothing selected: nothing to guard
  GuardInputs in;
  in.sqs = deps.sqs;
  in.clock = deps.clock;
  in.region = deps.region;
  in.stop = &stop;
  for (const auto& [url, target] : targets.Resolved()) in.destinations.push_back(url);
  in.selection = dlq ? LiveSelection(options, deps, *dlq) : selected;
  if (dlq) in.live_dlq = dlq->url;
  auto g = PrepareGuard(plan, in);
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
  Status st =
      guard->guard->Start(options.checkpoint.empty() ? "" : options.checkpoint + ".guard", options.file_modes.file);
  if (!st.ok()) return Fail(deps, ExitCodeFor(st), st.message());
  return std::nullopt;
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
  if (guard && options.dry_run) std::fprintf(deps.out, "%s\n", TerminalSafe(GuardPlanLine(*guard)).c_str());
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
  replayer.OnDryRun([&](const std::string& line) { std::fprintf(deps.out, "%s\n", TerminalSafe(line).c_str()); });
  const bool tty = isatty(fileno(deps.err)) != 0;
  Progress progress(options.progress == "always" || (options.progress == "auto" && tty), clock);
  replayer.OnProgress([&](const ReplayStats& s) { progress.Update(s); });
  if (auto code = StartGuard(options, deps, guarded, progress)) return *code;
  run.started = clock.Now();
  const auto steady_start = clock.SteadyNow();
  PassResult pass = SendSelection(deps, dlq, stores, *filter, replayer, stop, options.dry_run,
                                  guarded ? guarded->guard.get() : nullptr);
  const double secs = std::chrono::duration<double>(clock.SteadyNow() - steady_start).count();
  progress.Clear();

  // Audit, summary, exit code.
  if (stores.ledger && !options.dry_run) {
    Status flushed = stores.ledger->Flush();
    if (!flushed.ok() && pass.status.ok()) pass.status = flushed;
  }
  std::string audit_key;
  Status audit_status;
  if (!options.dry_run && stores.audit_store != nullptr) {
    auto key = WriteAuditRecord(options, stores, run, *targets, pass.status, replayer, guarded, clock);
    if (key.ok()) {
      audit_key = *key;
    } else {
      audit_status = key.status();
    }
  }
  PrintSummary(options, deps, stores, *targets, replayer, pass, secs, guarded, audit_key);
  return RunExitCode(deps, pass, audit_status, replayer.stats(), guarded, selected);
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
  cmd.add_option("--ramp", f.ramp, "cumulative percentages of the selection after each step")->capture_default_str();
  cmd.add_option("--window", f.window, "processing window (default: maxReceiveCount x VisibilityTimeout + ...)")
      ->check(DurationValidator());
  cmd.add_option("--check", f.check, "wait after each ramp step (default: max(1s, window/4))")
      ->check(DurationValidator());
  cmd.add_option("--max-refailures", f.max_refailures, "re-failures allowed after the canary: N or P%")
      ->capture_default_str();
  cmd.add_option("--canary-max-refailures", f.canary_max_refailures, "re-failures allowed in the canary")
      ->capture_default_str()
      ->check(IntegerValidator(0, UINT64_MAX));
  cmd.add_option("--max-backlog", f.max_backlog,
                 "pause while the destination holds more than N visible messages, or its oldest is older than "
                 "DURATION (repeatable)");
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
               "also send messages an earlier replay delivered to the same destination, and messages that failed "
               "again after an earlier replay");
  cmd.add_option("--progress", rp->progress, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
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
