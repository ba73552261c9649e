#include "app/replay_render.h"

#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "app/archive_source.h"
#include "app/replay_redrive.h"
#include "common/count_noun.h"
#include "common/json_writer.h"
#include "common/text.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr size_t kFailuresShown = 20;

std::string Line(std::string_view text) {
  return TerminalSafe(text) + "\n";
}

}  // namespace

TextSink TextSink::ToFiles(std::FILE* out, std::FILE* err) {
  return {[out](std::string_view s) { std::fwrite(s.data(), 1, s.size(), out); },
          [err](std::string_view s) { std::fwrite(s.data(), 1, s.size(), err); }};
}

std::string ReplayErrorLine(std::string_view message) {
  return "error: replay: " + Line(message);
}

// The progress of a replay on stderr (common/progress.h): a line redrawn on
// a terminal, plain lines every 10 s elsewhere; a guard's phase change is
// shown at once.
class ReplayTextObserver::ProgressLine {
 public:
  ProgressLine(std::unique_ptr<ProgressPrinter> printer, Clock& clock)
      : printer_(std::move(printer)), clock_(clock), start_(clock.SteadyNow()) {}
  void Clear() {
    if (printer_) printer_->Clear();
  }
  void Update(const ReplayStats& s, bool force = false) {
    if (!printer_ || !printer_->enabled()) return;
    stats_ = s;
    double secs = std::chrono::duration<double>(clock_.SteadyNow() - start_).count();
    std::string line = fmt::format("replay: selected {}, sent {}, failed {}, resumed {}, {:.0f} msg/s", s.accepted,
                                   s.sent, s.failed, s.resumed, secs > 0 ? s.sent / secs : 0.0);
    printer_->Show(guard_.empty() ? line : guard_ + " | " + line, force);
  }
  // A guarded run: the phase and why lead the line (shown at once on a phase change).
  void Guard(const RedriveStatus& s) {
    if (!printer_ || !printer_->enabled()) return;
    const bool changed = !phase_ || *phase_ != s.phase;
    phase_ = s.phase;
    guard_ = RedriveProgressLine(s);
    Update(stats_, changed);
  }

 private:
  std::unique_ptr<ProgressPrinter> printer_;
  std::string guard_;
  std::optional<RedrivePhase> phase_;
  ReplayStats stats_;
  Clock& clock_;
  SteadyTime start_;
};

ReplayTextObserver::ReplayTextObserver(const ReplayRunRequest& request, const ReplayRendering& rendering, TextSink sink,
                                       std::unique_ptr<ProgressPrinter> progress, Clock& clock)
    : request_(request),
      rendering_(rendering),
      sink_(std::move(sink)),
      progress_(std::make_unique<ProgressLine>(std::move(progress), clock)) {}

ReplayTextObserver::~ReplayTextObserver() = default;

void ReplayTextObserver::Warning(const std::string& text) {
  sink_.err("warning: replay: " + Line(text));
}

// Says, before anything is sent, what the guards let through: a selection
// over several DLQs going to one queue, cross-account routes, and in a dry
// run what the real run would need. Notes go to stderr with --output json.
void ReplayTextObserver::SelectionChecked(const DlqCounts& by_dlq, const std::vector<std::string>& routes) {
  const auto& notes = rendering_.json ? sink_.err : sink_.out;
  if (!request_.to_source && by_dlq.size() > 1) {
    notes(fmt::format("selection spans {}; all go to {}{}\n", TerminalSafe(DescribeDlqSpan(by_dlq)),
                      TerminalSafe(rendering_.to_queue),
                      request_.dry_run && !rendering_.all_queues ? " (the real run needs --all-queues)" : ""));
  }
  for (const std::string& route : routes) notes("cross-account: " + Line(route));
  if (request_.dry_run && !rendering_.all && request_.filter.Empty()) {
    notes("no filter: every archived message is selected (the real run needs --all)\n");
  }
}

void ReplayTextObserver::GuardPlanned(const GuardedRedrive& guard) {
  (rendering_.json ? sink_.err : sink_.out)(Line(GuardPlanLine(guard)));
}

void ReplayTextObserver::DryRun(const DryRunEntry& entry) {
  // With --output json the lines are in the document; the dashboard counts
  // the messages it would send rather than listing them.
  if (rendering_.json || (entry.kind == DryRunEntry::kWouldSend && !rendering_.list_would_send)) return;
  sink_.out(Line(DryRunLine(entry)));
}

void ReplayTextObserver::Progress(const ReplayStats& stats) {
  progress_->Update(stats);
}

void ReplayTextObserver::Guard(const RedriveStatus& status) {
  progress_->Guard(status);
  if (on_guard) on_guard(status);
}

void ReplayTextObserver::ClearProgress() {
  progress_->Clear();
}

int ReplayExitCode(ReplayEnd end) {
  switch (end) {
    case ReplayEnd::kDone: return 0;
    case ReplayEnd::kSomeFailed:
    case ReplayEnd::kError: return 1;
    case ReplayEnd::kBadInput: return 2;
    case ReplayEnd::kSkippedInput: return 3;
    case ReplayEnd::kIncomplete: return 4;
    case ReplayEnd::kRefailed: return 5;
    case ReplayEnd::kInterrupted: return 130;
  }
  return 1;
}

namespace {

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

// What the skips mean, for the summary: the messages not sent because an
// earlier run delivered them, copies, and the messages sent again because
// they failed again after an earlier replay; or why nothing was checked.
std::string SkipNotes(const ReplayRunResult& r) {
  const ReplayBuckets& b = r.buckets;
  std::string out;
  if (r.again) out += "; --again: earlier deliveries not skipped";
  if (!r.skip_checked) out += "; not checked against earlier replays (no --audit-to)";
  if (b.already_replayed > 0) {
    out +=
        "; already replayed: delivered to the same destination by an earlier run (see `dlq-archive audit ls`; "
        "--again sends them)";
  }
  if (r.failed_again_resent > 0) {
    out += fmt::format("; {} failed again after an earlier replay: this run took {} to send again",
                       CountNoun(r.failed_again_resent, "message", "messages"),
                       r.failed_again_resent == 1 ? "it" : "them");
  }
  if (b.copies > 0) {
    out += "; copies: a message that failed again is archived under its new id too, and each message is sent once";
  }
  return out;
}

std::string FailuresText(const std::vector<ReplayFailure>& failures) {
  std::string out;
  for (size_t i = 0; i < failures.size() && i < kFailuresShown; ++i) {
    const ReplayFailure& f = failures[i];
    out += fmt::format("failed: {} -> {}: {}\n", TerminalSafe(f.message_id),
                       f.destination.empty() ? "(unresolved)" : TerminalSafe(f.destination), TerminalSafe(f.reason));
  }
  if (failures.size() > kFailuresShown) {
    out += fmt::format("failed: ... and {} more (all are in the audit record)\n", failures.size() - kFailuresShown);
  }
  return out;
}

// The summary's first part: every bucket, and how fast.
std::string SentSummary(const ReplayRendering& rendering, const ReplayRunResult& r) {
  const ReplayStats& s = r.stats;
  const std::string where = r.live ? "the DLQ" : "the archive";
  const std::string buckets = BucketsText(r.buckets, r.dry_run, rendering.checkpoint, where);
  if (r.dry_run) return fmt::format("dry run to {}: {}", r.destination, buckets);
  const double secs = r.seconds;
  return fmt::format("replayed to {}: {}, {:.1f} s, {:.0f} msg/s (sending: {:.2f} s, {:.0f} msg/s)", r.destination,
                     buckets, secs, secs > 0 ? s.sent / secs : 0.0, s.send_seconds,
                     s.send_seconds > 0 ? s.sent / s.send_seconds : 0.0);
}

// The archive's part of the summary when objects or lines were skipped; each
// skipped entry and unreadable line is named on stderr.
std::string SkippedSummary(const ScanStats& scan, const Destination& archive, const TextSink& sink) {
  std::string out = fmt::format("; archive: {} and {} skipped",
                                CountNoun(scan.skipped_objects, "unreadable object", "unreadable objects"),
                                CountNoun(scan.skipped_lines, "unreadable line", "unreadable lines"));
  if (!scan.skipped_entries.empty()) {
    out += fmt::format(", {} of the archive directory not read",
                       CountNoun(scan.skipped_entries.size(), "entry", "entries"));
    sink.err(SkippedText(scan.skipped_entries, archive));
  }
  for (const ReadError& e : scan.errors) {
    sink.err(fmt::format("warning: {} line {}: {}\n", TerminalSafe(e.key), e.line, TerminalSafe(e.message)));
  }
  return out;
}

// After a live run: what is still in the DLQ and why, and how to archive it.
std::string LeftInDlq(const ReplayRendering& rendering, const ReplayRunResult& r) {
  const LiveReplayStats& l = *r.live_stats;
  const ReplayBuckets& b = r.buckets;
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
  out += fmt::format("; `dlq-archive archive --queue {} --to {}` archives them", r.dlq->name,
                     rendering.audit_to.empty() ? std::string("URL") : rendering.audit_to);
  return out;
}

// The summary line, what is left in the DLQ, the guard and where the audit
// record went.
void PrintSummary(const ReplayRendering& rendering, const ReplayRunResult& r, const TextSink& sink) {
  const ReplayStats& s = r.stats;
  std::string summary = SentSummary(rendering, r);
  summary += SkipNotes(r);
  if (s.order_breaks > 0) summary += fmt::format("; {} FIFO order breaks (buffer full)", s.order_breaks);
  if (s.throttled > 0) summary += fmt::format("; paused {} times: the origin was throttling", s.throttled);
  if (s.refused > 0) summary += fmt::format("; {} failed again at once at the origin", s.refused);
  if (r.live) {
    for (const std::string& route : r.cross_account_routes) sink.out("cross-account: " + Line(route));
  }
  if (r.live_stats) summary += LiveSummary(*r.live_stats);
  if (r.scan && !r.scan->complete()) summary += SkippedSummary(*r.scan, *r.archive, sink);
  sink.out(Line(summary));
  if (r.live_stats && r.dlq && !r.dry_run) {
    const std::string left = LeftInDlq(rendering, r);
    if (!left.empty()) sink.out(Line(left));
  }
  if (r.guard) sink.out(Line(GuardSummary(r.guard->status, r.guard->options)));
  if (!r.audit.empty()) sink.out("audit: " + Line(r.audit));
}

// What the end needs said on stderr: the breach, the error, the audit
// record's failure, or why the pass was incomplete.
std::string EndText(const ReplayRunResult& r) {
  if (r.end == ReplayEnd::kRefailed && r.guard)
    return BreachText(r.guard->status, r.error.message(), r.not_sent, r.live);
  if (!r.error.ok()) return ReplayErrorLine(r.error.message());
  if (!r.audit_error.ok())
    return fmt::format("error: replay: {} (the messages were sent)\n", TerminalSafe(r.audit_error.message()));
  if (r.end == ReplayEnd::kIncomplete) return "incomplete: " + Line(r.live_stats->incomplete_reason);
  return "";
}

}  // namespace

std::string ReplayResultJson(const ReplayRunResult& r, int exit_code) {
  JsonWriter w;
  w.BeginObject().Key("dry_run").Bool(r.dry_run).Key("destination").String(r.destination);
  w.Key("buckets");
  WriteBucketsJson(w, r.buckets);
  w.Key("sent_by_destination").BeginObject();
  for (const auto& [url, n] : r.sent_by_destination) w.Key(url).Uint(n);
  w.EndObject();
  w.Key("failures").BeginArray();
  for (const ReplayFailure& f : r.failures) {
    w.BeginObject().Key("message_id").String(f.message_id).Key("destination").String(f.destination);
    w.Key("reason").String(f.reason);
    if (f.unresolved) w.Key("unresolved").Bool(true);
    if (f.refused) w.Key("failed_at_once").Bool(true);
    w.EndObject();
  }
  w.EndArray();
  // Answers an origin gave while it was sent to (--to-origin).
  w.Key("throttled").Uint(r.stats.throttled).Key("failed_at_once").Uint(r.stats.refused);
  w.Key("guard");
  if (!r.guard) {
    w.Null();
  } else {
    const RedriveStatus& g = r.guard->status;
    const RedriveOptions& o = r.guard->options;
    w.BeginObject().Key("phase").String(RedrivePhaseName(g.phase)).Key("reason").String(g.reason);
    w.Key("canary").Uint(o.canary).Key("steps").Int(g.steps);
    w.Key("sent_per_step").BeginArray();
    for (uint64_t n : g.sent_per_step) w.Uint(n);
    w.EndArray();
    w.Key("window_s").Double(std::chrono::duration<double>(o.window).count());
    w.Key("refailed").Uint(g.refailed).Key("dlq_receives").Uint(g.dlq_receives);
    w.Key("paused_s").Double(std::chrono::duration<double>(g.paused_for).count());
    w.Key("failed_again").BeginArray();
    for (const RefailedMessage& m : g.refailures) {
      w.BeginObject().Key("message_id").String(m.message_id).Key("new_message_id").String(m.new_message_id);
      w.Key("destination").String(m.destination).Key("dlq").String(m.dlq);
      w.Key("found_at").String(FormatIso8601(m.found_at)).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.Key("dlq");
  if (!r.live_stats) {
    w.Null();
  } else {
    const LiveReplayStats& l = *r.live_stats;
    w.BeginObject().Key("present_at_start").Int(l.present_at_start).Key("examined").Uint(l.examined);
    w.Key("selected").Uint(l.selected).Key("not_selected").Uint(l.not_selected).Key("deleted").Uint(l.deleted);
    w.Key("delete_failures").Uint(l.delete_failures).Key("released").Uint(l.released);
    w.Key("receives").Uint(l.receive_calls).Key("complete").Bool(l.complete).EndObject();
  }
  w.Key("skip_checked").Bool(r.skip_checked);
  w.Key("audit");
  if (r.audit.empty()) {
    w.Null();
  } else {
    w.String(r.audit);
  }
  if (r.dry_run) {
    w.Key("dry_run_lines").BeginArray();
    for (const DryRunEntry& e : r.dry_run_entries) w.String(DryRunLine(e));
    w.EndArray();
    if (r.dry_run_entries_omitted > 0) w.Key("dry_run_lines_omitted").Uint(r.dry_run_entries_omitted);
    w.Key("would_send_by_destination").BeginObject();
    for (const auto& [destination, n] : r.would_send_by_destination) w.Key(destination).Uint(n);
    w.EndObject();
  }
  w.Key("error");
  if (r.error.ok()) {
    w.Null();
  } else {
    w.String(r.error.message());
  }
  w.Key("exit_code").Int(exit_code).EndObject();
  std::string out = w.Take();
  out += '\n';
  return out;
}

int RenderReplayResult(const ReplayRendering& rendering, const ReplayRunResult& r, const TextSink& sink) {
  const int code = ReplayExitCode(r.end);
  if (!r.reached_sending) {
    sink.err(ReplayErrorLine(r.error.message()));
    return code;
  }
  sink.err(FailuresText(r.failures));
  if (!rendering.json) PrintSummary(rendering, r, sink);
  sink.err(EndText(r));
  if (rendering.json) sink.out(ReplayResultJson(r, code));
  return code;
}

}  // namespace dlq
