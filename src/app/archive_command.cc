#include "app/archive_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <deque>
#include <map>

#include "app/command.h"
#include "app/flag_validators.h"
#include "app/queue_selection.h"
#include "archiver/drainer.h"
#include "common/byte_size.h"
#include "common/clock.h"
#include "common/count_noun.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/progress.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"

namespace dlq {
namespace {

const char* Outcome(const DrainResult& r) {
  if (!r.status.ok()) return "failed";
  if (r.stopped) return "stopped";
  if (r.incomplete) return "incomplete";
  return "done";
}

// HTTP requests sent per "service.Operation" (retries included), for the
// JSON summary: what a run cost in API calls.
class RequestCounter {
 public:
  void Add(const CallRecord& record) {
    MutexLock lock(mu_);
    counts_[record.service + "." + record.operation] += static_cast<uint64_t>(record.attempts);
  }
  std::map<std::string, uint64_t> Counts() const {
    MutexLock lock(mu_);
    return counts_;
  }

 private:
  mutable Mutex mu_;
  std::map<std::string, uint64_t> counts_ DLQ_GUARDED_BY(mu_);
};

void WriteResultJson(JsonWriter& w, const DrainResult& r, const std::string& dest_prefix) {
  const DrainStats& s = r.stats;
  w.BeginObject();
  w.Key("queue").String(r.queue.name);
  w.Key("queue_url").String(r.queue.url);
  w.Key("result").String(Outcome(r));
  const std::pair<std::string_view, uint64_t> counts[] = {{"received", s.received},
                                                          {"selected", s.selected},
                                                          {"skipped", s.skipped},
                                                          {"archived", s.archived},
                                                          {"deleted", s.deleted},
                                                          {"duplicates", s.duplicates},
                                                          {"delete_failures", s.delete_failures},
                                                          {"received_again", s.received_again},
                                                          {"released", s.released},
                                                          {"kept", s.kept},
                                                          {"abandoned_receives", s.abandoned_receives},
                                                          {"corrupt", s.corrupt},
                                                          {"objects", s.objects},
                                                          {"bytes", s.bytes_uploaded}};
  for (const auto& [key, value] : counts) w.Key(key).Uint(value);
  w.Key("receivers").Int(s.receivers);
  w.Key("drained").Bool(r.drained);
  w.Key("stopped").Bool(r.stopped);
  w.Key("incomplete").Bool(r.incomplete);
  w.Key("elapsed_ms").Int(r.elapsed.count());
  w.Key("error");
  if (r.status.ok()) {
    w.Null();
  } else {
    w.String(r.status.ToString());
  }
  w.Key("incomplete_reason");
  if (r.incomplete_reason.empty()) {
    w.Null();
  } else {
    w.String(r.incomplete_reason);
  }
  w.Key("corrupt_ids").BeginArray();
  for (const std::string& id : r.corrupt_ids) w.String(id);
  w.EndArray();
  w.Key("objects_written").BeginArray();
  for (const std::string& key : r.keys) w.String(dest_prefix + key);
  w.EndArray();
  w.EndObject();
}

// A failure before any queue was drained: one line on stderr, or with
// --output json one document on stdout. Returns `code`.
int EarlyFailure(const ArchiveCommandOptions& options, int code, const Status& st) {
  if (options.output == "json") {
    JsonWriter w;
    w.BeginObject();
    w.Key("ok").Bool(false);
    w.Key("exit_code").Int(code);
    w.Key("error").BeginObject();
    w.Key("code").String(ErrorCodeName(st.code()));
    w.Key("aws_error_code");
    if (st.aws() && !st.aws()->error_code.empty()) {
      w.String(st.aws()->error_code);
    } else {
      w.Null();
    }
    w.Key("message").String(st.message());
    w.EndObject();
    w.Key("destination").String(options.destination);
    w.Key("queues").BeginArray().EndArray();
    w.EndObject();
    std::string out = w.Take() + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    std::fprintf(stderr, "error: %s\n", TerminalSafe(st.message()).c_str());
  }
  return code;
}

// The progress line (common/progress.h: redrawn on a terminal, plain lines
// every 10 s elsewhere). "left" and the rate come from messages done
// (deleted; with --keep archived; with --dry-run examined), the rate over the
// last 10 s.
class ProgressLine {
 public:
  ProgressLine(std::string queue, const DrainOptions& options, ProgressMode mode, Clock& clock)
      : queue_(std::move(queue)), options_(options), printer_(mode, clock, stderr) {}

  void Update(const DrainStats& s, std::chrono::steady_clock::time_point now) {
    uint64_t done = options_.dry_run ? s.selected + s.skipped : options_.keep ? s.archived : s.deleted;
    samples_.push_back({now, done});
    while (samples_.size() > 2 && now - samples_.front().first > std::chrono::seconds(10)) samples_.pop_front();
    double secs = std::chrono::duration<double>(now - samples_.front().first).count();
    double rate = secs > 0.5 ? (done - samples_.front().second) / secs : 0;
    std::string left = "?", eta = "?";
    if (s.initial_depth >= 0) {  // read by the drainer as it starts
      int64_t l = std::max<int64_t>(0, s.initial_depth - static_cast<int64_t>(done));
      left = fmt::format("~{}", l);
      if (rate > 0) eta = FormatDuration(std::chrono::seconds(static_cast<int64_t>(l / rate)));
    }
    printer_.Show(fmt::format("{}: received {}, archived {}, deleted {}, {:.0f} msg/s, left {}, ETA {}", queue_,
                              s.received, s.archived, s.deleted, rate, left, eta));
  }

 private:
  std::string queue_;
  const DrainOptions& options_;
  ProgressPrinter printer_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> samples_;
};

// What a stop left invisible besides what it released: receives abandoned in
// flight, whose messages come back when their visibility timeout ends, at the
// latest `timeout` after `now` (the drain had ended by then).
std::string AbandonedNote(const DrainStats& s, std::chrono::seconds timeout, SystemTime now) {
  if (s.abandoned_receives == 0) return "";
  return fmt::format(
      "; {} in flight {} abandoned: any messages {} (up to 10 each) stay invisible until their {} "
      "visibility timeout ends, by {} at the latest",
      CountNoun(s.abandoned_receives, "receive", "receives"), s.abandoned_receives == 1 ? "was" : "were",
      s.abandoned_receives == 1 ? "it took" : "they took", FormatDuration(timeout), FormatIso8601(now + timeout));
}

// Checks the flags before touching any queue; completes options.drain from
// the destination and the key template. Returns 2 (the error printed), or
// nullopt to go on.
std::optional<int> CheckFlags(ArchiveCommandOptions& options, std::optional<Destination>& dest) {
  if (options.queues.empty() && options.queue_prefix.empty()) {
    std::fprintf(stderr, "error: name at least one --queue or a --queue-prefix\n");
    return 2;
  }
  if (options.output != "text" && options.output != "json") {
    std::fprintf(stderr, "error: --output must be text or json\n");
    return 2;
  }
  auto parsed_dest = ParseDestination(options.destination);
  if (!parsed_dest.ok()) {
    std::fprintf(stderr, "error: --to: %s\n", TerminalSafe(parsed_dest.status().message()).c_str());
    return 2;
  }
  dest = *parsed_dest;
  if (!dest->prefix.empty()) options.drain.prefix = dest->prefix;
  std::string tmpl = options.key_template.empty() ? std::string(options.hive ? kHiveKeyTemplate : kDefaultKeyTemplate)
                                                  : options.key_template;
  auto parsed = KeyTemplate::Parse(tmpl);
  if (!parsed.ok()) {
    std::fprintf(stderr, "error: --key-template: %s\n", parsed.status().message().c_str());
    return 2;
  }
  options.drain.key_template = *parsed;
  if (Status st = options.drain.Validate(); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  return std::nullopt;
}

// Adds the dead-letter queues whose names start with --queue-prefix to
// `names`; the other queues go to `skipped` (and, in text output, to stderr).
// Returns the error when the prefix selects no dead-letter queue.
Status SelectByPrefix(const ArchiveCommandOptions& options, AwsServices& services, std::vector<std::string>& names,
                      std::vector<SkippedQueue>& skipped) {
  auto urls = services.sqs().ListQueues(options.queue_prefix);
  if (!urls.ok()) return urls.status().WithContext(fmt::format("list queues with prefix '{}'", options.queue_prefix));
  if (urls->empty()) {
    return NotFound(
        fmt::format("no queue name starts with '{}' in region {}", options.queue_prefix, services.settings().region));
  }
  PatternSelection picked = SelectDeadLetterQueues(services.sqs(), *urls, options.any_queue);
  for (const SkippedQueue& q : picked.skipped) {
    skipped.push_back(q);
    if (options.output != "json") {
      std::fprintf(stderr, "skipped: %s: %s\n", TerminalSafe(q.url.substr(q.url.rfind('/') + 1)).c_str(),
                   TerminalSafe(q.reason).c_str());
    }
  }
  if (picked.taken.empty() && names.empty()) {
    return NotFound(
        fmt::format("none of the {} {} whose name starts with '{}' is a dead-letter queue; "
                    "nothing was received (--any-queue takes them)",
                    urls->size(), urls->size() == 1 ? "queue" : "queues", options.queue_prefix));
  }
  names.insert(names.end(), picked.taken.begin(), picked.taken.end());
  return Status::Ok();
}

// Resolves one queue name; a name not found says which account was asked:
// the usual cause is the wrong profile or role, not the wrong name.
Result<QueueInfo> ResolveNamedQueue(AwsServices& services, const std::string& n) {
  auto q = ResolveQueue(services.sqs(), n, services.settings().region);
  if (q.ok()) return q;
  Status st = q.status();
  if (st.code() == ErrorCode::kNotFound && !StartsWith(n, "arn:")) {
    if (auto who = services.sts().GetCallerIdentity(); who.ok() && !who->account.empty()) {
      std::string m = st.message();
      const std::string_view unknown = "(the credentials' account)";
      if (auto at = m.find(unknown); at != std::string::npos) {
        m.replace(at, unknown.size(), fmt::format("(account {}, the credentials' account)", who->account));
      }
      Status named(st.code(), std::move(m));
      st = st.aws() ? named.WithAws(*st.aws()) : named;
    }
  }
  return st;
}

// Opens the destination and checks that it takes writes, before receiving
// anything: a receive raises receive counts, and a cron job must fail on an
// empty queue too.
Result<std::unique_ptr<ObjectStore>> OpenCheckedDestination(const ArchiveCommandOptions& options,
                                                            const Destination& dest, AwsServices& services) {
  auto store = OpenStore(dest, &services, options.file_modes);
  if (!store.ok()) return store.status().WithContext("destination " + options.destination);
  auto check = (*store)->CheckWritable();
  if (!check.ok()) return check.status().WithContext(fmt::format("destination {}", options.destination));
  if (!check->confirmed) {
    Log().Log(LogLevel::kWarn, "archive.destination_unchecked",
              {{"destination", options.destination}, {"note", check->note}});
  }
  return std::move(*store);
}

// Drains the queues one after another, with a progress line; stops before
// the next queue on a signal or after a queue that failed.
std::vector<DrainResult> DrainQueues(const ArchiveCommandOptions& options, AwsServices& services, ObjectStore& store,
                                     const std::vector<QueueInfo>& queues, std::atomic<bool>& stop) {
  const ProgressMode mode = ChooseProgressMode(options.progress, isatty(STDERR_FILENO) != 0);
  std::vector<DrainResult> results;
  std::string host = LocalHostName();
  for (const QueueInfo& q : queues) {
    if (stop) break;
    QueueDrainer drainer(services.sqs(), store, services.clock(), q, options.drain, MakeArchiveContext(q, host));
    std::optional<ProgressLine> progress;
    if (mode != ProgressMode::kOff) progress.emplace(q.name, options.drain, mode, services.clock());
    int tick = 0;
    DrainResult r;
    // A signal sets `stop` (nobody can notify): seen within 100 ms.
    RunWatched(
        services.clock(), std::chrono::milliseconds(100), [&] { r = drainer.Run(); },
        [&] {
          if (stop) drainer.RequestStop();
          if (progress && ++tick % 5 == 0) progress->Update(drainer.Snapshot(), services.clock().SteadyNow());
          return true;
        });
    results.push_back(std::move(r));
    if (!results.back().status.ok()) break;  // stop before touching more queues
  }
  return results;
}

// The exit code and its reason: 1 error > 130 signal > 4 incomplete > 3
// delete failures > 0; the highest-ranked cause wins.
struct Verdict {
  int code = 0;
  std::string reason;

  void Raise(int c, std::string why) {
    auto rank = [](int x) { return x == 1 ? 4 : x == 130 ? 3 : x == 4 ? 2 : x == 3 ? 1 : 0; };
    if (rank(c) > rank(code)) {
      code = c;
      reason = std::move(why);
    }
  }
};

Verdict Judge(const ArchiveCommandOptions& options, const std::vector<DrainResult>& results, size_t queue_count,
              bool stopped, Clock& clock) {
  Verdict v;
  for (const auto& r : results) {
    const DrainStats& s = r.stats;
    if (!r.status.ok()) {
      v.Raise(1, fmt::format("{}: {}; nothing unarchived was deleted ({} archived and deleted, {} released back to "
                             "the queue)",
                             r.queue.name, r.status.ToString(), s.deleted, s.released));
    } else if (r.stopped) {
      v.Raise(130, fmt::format("stopped by signal: uploads in flight finished and their messages were deleted; {} "
                               "back to {}{}",
                               CountNoun(s.released, "message was released", "messages were released"), r.queue.name,
                               AbandonedNote(s, options.drain.visibility_timeout, clock.Now())));
    } else if (r.incomplete) {
      v.Raise(4, fmt::format("incomplete: {}: {}", r.queue.name, r.incomplete_reason));
    } else if (!options.drain.keep && !options.drain.dry_run && (s.duplicates > 0 || s.delete_failures > 0)) {
      v.Raise(3, fmt::format("{}: {} archived messages could not be deleted and stay in the DLQ (they will be "
                             "archived again; readers de-duplicate)",
                             r.queue.name, s.duplicates + s.delete_failures));
    }
  }
  if (results.size() < queue_count) {
    v.Raise(stopped ? 130 : 1, fmt::format("{} of {} not processed", queue_count - results.size(),
                                           CountNoun(queue_count, "queue was", "queues were")));
  }
  return v;
}

// The --output json summary: one document on stdout.
void PrintJsonSummary(const ArchiveCommandOptions& options, const Verdict& v, const std::vector<DrainResult>& results,
                      const std::vector<SkippedQueue>& skipped_queues, const std::string& uri_prefix,
                      const RequestCounter& requests) {
  JsonWriter w;
  w.BeginObject();
  w.Key("ok").Bool(v.code == 0);
  w.Key("exit_code").Int(v.code);
  w.Key("destination").String(options.destination);
  w.Key("dry_run").Bool(options.drain.dry_run);
  w.Key("queues").BeginArray();
  for (const DrainResult& r : results) WriteResultJson(w, r, uri_prefix);
  w.EndArray();
  w.Key("skipped_queues").BeginArray();
  for (const SkippedQueue& q : skipped_queues) {
    w.BeginObject();
    w.Key("queue_url").String(q.url);
    w.Key("reason").String(q.reason);
    w.EndObject();
  }
  w.EndArray();
  w.Key("reason").String(v.reason);
  w.Key("requests").BeginObject();
  for (const auto& [name, n] : requests.Counts()) w.Key(name).Uint(n);
  w.EndObject();
  w.EndObject();
  std::string out = w.Take() + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// One queue's text summary on stdout: its counts, and the first ten objects
// written.
void PrintQueueSummary(const ArchiveCommandOptions& options, const DrainResult& r, const std::string& uri_prefix) {
  const DrainStats& s = r.stats;
  double secs = r.elapsed.count() / 1000.0;
  if (options.drain.dry_run) {
    std::printf("%s: dry run%s: %s be archived, %lu not selected (received %s; receive counts went up)\n",
                TerminalSafe(r.queue.name).c_str(), r.status.ok() ? "" : " FAILED",
                CountNoun(s.selected, "message would", "messages would").c_str(), static_cast<unsigned long>(s.skipped),
                CountNoun(s.received, "time", "times").c_str());
    return;
  }
  const char* state = !r.status.ok() ? "FAILED: " : r.stopped ? "STOPPED: " : r.incomplete ? "INCOMPLETE: " : "";
  std::printf(
      "%s: %sarchived %lu, deleted %lu, released %lu, duplicates %lu, received again %lu, skipped %lu, objects %lu "
      "(%s) in %.1fs (%.0f msg/s)%s\n",
      TerminalSafe(r.queue.name).c_str(), state, static_cast<unsigned long>(s.archived),
      static_cast<unsigned long>(s.deleted), static_cast<unsigned long>(s.released + s.kept),
      static_cast<unsigned long>(s.duplicates), static_cast<unsigned long>(s.received_again),
      static_cast<unsigned long>(s.skipped), static_cast<unsigned long>(s.objects),
      FormatByteSize(s.bytes_uploaded).c_str(), secs, secs > 0 ? s.archived / secs : 0.0,
      options.drain.keep ? " [--keep: nothing deleted; what was archived went back to the queue]" : "");
  size_t shown = 0;
  for (const auto& k : r.keys) {
    if (++shown > 10) {
      std::printf("  ... and %s\n", CountNoun(r.keys.size() - 10, "more object", "more objects").c_str());
      break;
    }
    std::printf("  %s\n", TerminalSafe(uri_prefix + k).c_str());
  }
}

}  // namespace

int RunArchiveCommand(ArchiveCommandOptions options, AwsServices& services, std::atomic<bool>& stop) {
  std::optional<Destination> dest;
  if (auto code = CheckFlags(options, dest)) return *code;
  std::string uri_prefix =
      dest->scheme == "s3" ? fmt::format("s3://{}/", dest->bucket) : fmt::format("file://{}/", dest->root);
  RequestCounter requests;
  services.SetObserver([&requests](const CallRecord& record) { requests.Add(record); });
  struct ObserverReset {
    AwsServices& services;
    ~ObserverReset() { services.SetObserver(nullptr); }
  } observer_reset{services};

  // Resolve the queues, then check the destination.
  std::vector<std::string> names = options.queues;
  std::vector<SkippedQueue> skipped_queues;
  if (!options.queue_prefix.empty()) {
    if (Status st = SelectByPrefix(options, services, names, skipped_queues); !st.ok()) {
      return EarlyFailure(options, 1, st);
    }
  }
  std::vector<QueueInfo> queues;
  for (const auto& n : names) {
    auto q = ResolveNamedQueue(services, n);
    if (!q.ok()) return EarlyFailure(options, 1, q.status());
    queues.push_back(*q);
  }
  auto store = OpenCheckedDestination(options, *dest, services);
  if (!store.ok()) return EarlyFailure(options, 1, store.status());

  std::vector<DrainResult> results = DrainQueues(options, services, **store, queues, stop);

  Verdict verdict = Judge(options, results, queues.size(), stop, services.clock());
  if (options.output == "json") {
    PrintJsonSummary(options, verdict, results, skipped_queues, uri_prefix, requests);
    return verdict.code;
  }
  for (const auto& r : results) PrintQueueSummary(options, r, uri_prefix);
  std::fflush(stdout);
  if (verdict.code != 0) {
    std::fprintf(stderr, "%s%s\n",
                 verdict.code == 130 ? ""
                 : verdict.code == 4 ? ""
                                     : "error: ",
                 TerminalSafe(verdict.reason).c_str());
  }
  return verdict.code;
}

namespace {

constexpr const char* kArchiveExitCodes =
    "Exit codes:\n"
    "  0    done: every selected message archived and deleted\n"
    "  1    error (the message says what and where; nothing unarchived was deleted), or --queue-prefix matched no\n"
    "       dead-letter queue\n"
    "  2    usage error\n"
    "  3    archived, but some deletes failed (those messages stay in the DLQ and are archived again)\n"
    "  4    incomplete: selected messages were left in the DLQ\n"
    "  130  stopped by a signal (uploads in flight finished first)";

// The command line's values: the options, and the flags that become options
// only once they are checked against each other.
struct ArchiveFlags {
  ArchiveCommandOptions options;
  std::string older_than, expiring_within, batch_max_age, batch_max_bytes, visibility = "2m";
  size_t batch_max_messages = 0;
  int gzip_level = -1;
  bool all = false;
  bool fixed_concurrency = false;
};

int RunArchiveFlags(const ArchiveFlags& f, const CommandContext& ctx) {
  ArchiveCommandOptions o = f.options;
  if (o.destination.empty()) return ctx.usage.Fail("--to is required (s3://BUCKET/PREFIX or file:///DIR)");
  if (f.all && (!f.older_than.empty() || !f.expiring_within.empty())) {
    return ctx.usage.Fail("--all cannot be combined with --older-than or --expiring-within");
  }
  if (!f.older_than.empty() && !f.expiring_within.empty()) {
    return ctx.usage.Fail("choose one of --older-than and --expiring-within");
  }
  if (o.any_queue && o.queue_prefix.empty()) return ctx.usage.Fail("--any-queue applies to --queue-prefix");
  std::optional<FileModes> modes = FileModesOrReport();
  if (!modes) return 2;
  o.file_modes = *modes;
  return WithServices(ctx, [&](AwsServices& services) {
    // The validators accepted every value below.
    if (!f.older_than.empty()) o.drain.selection = {SelectionKind::kOlderThan, *ParseDuration(f.older_than)};
    if (!f.expiring_within.empty()) {
      o.drain.selection = {SelectionKind::kExpiringWithin, *ParseDuration(f.expiring_within)};
    }
    if (f.batch_max_messages) o.drain.batch.max_messages = f.batch_max_messages;
    if (!f.batch_max_bytes.empty()) o.drain.batch.max_bytes = static_cast<size_t>(*ParseByteSize(f.batch_max_bytes));
    if (!f.batch_max_age.empty()) o.drain.batch.max_age = *ParseDuration(f.batch_max_age);
    if (f.gzip_level > 0) o.drain.batch.gzip_level = f.gzip_level;
    o.drain.visibility_timeout = *ParseDuration(f.visibility);
    o.drain.adaptive_receivers = !f.fixed_concurrency;
    return RunArchiveCommand(std::move(o), services, ctx.stop);
  });
}

Runner AddArchiveFlags(CLI::App& cmd) {
  auto f = std::make_shared<ArchiveFlags>();
  ArchiveCommandOptions& ar = f->options;
  cmd.add_option("--queue", ar.queues, "queue name or URL (repeatable)");
  cmd.add_option("--queue-prefix", ar.queue_prefix,
                 "every dead-letter queue whose name starts with this (queues that are no queue's DLQ are "
                 "listed as skipped)");
  cmd.add_flag("--any-queue", ar.any_queue, "--queue-prefix takes every queue it matches, DLQ or not");
  cmd.add_option("--to", ar.destination, "s3://BUCKET/PREFIX or file:///DIR (required)");
  cmd.add_flag("--all", f->all, "archive every message (default)");
  cmd.add_option("--older-than", f->older_than, "only messages sent longer ago than this (by SentTimestamp)")
      ->check(DurationValidator());
  cmd.add_option("--expiring-within", f->expiring_within,
                 "only messages that expire within this (standard: SentTimestamp + retention)")
      ->check(DurationValidator());
  cmd.add_option("--max-messages", ar.drain.max_messages, "stop after this many messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  cmd.add_option("--batch-max-messages", f->batch_max_messages, "messages per object (default 10000)")
      ->check(IntegerValidator(1, 10'000'000));
  cmd.add_option("--batch-max-bytes", f->batch_max_bytes,
                 "uncompressed bytes per object, e.g. 8MiB, 512KiB, 1048576 (default 8MiB; 1KiB..1GiB)")
      ->check(BatchBytesValidator());
  cmd.add_option("--batch-max-age", f->batch_max_age, "seal a batch after this long (default 30s)")
      ->check(DurationValidator());
  cmd.add_option("--gzip-level", f->gzip_level, "1 (fast, default) .. 12 (small)")->check(IntegerValidator(1, 12));
  cmd.add_option("--key-template", ar.key_template,
                 "object key template (default {prefix}/{queue}/{yyyymmdd}/{queue}-{hhmmss}-{batch_id}.json.gz)");
  cmd.add_flag("--hive", ar.hive, "Hive-style keys: {prefix}/queue={queue}/dt={yyyy-mm-dd}/...");
  cmd.add_option("--sse", ar.drain.put.sse, "server-side encryption: AES256 or aws:kms")
      ->check(CLI::IsMember({"AES256", "aws:kms"}));
  cmd.add_option("--sse-kms-key-id", ar.drain.put.sse_kms_key_id, "KMS key id, ARN or alias (with --sse aws:kms)");
  cmd.add_option("--storage-class", ar.drain.put.storage_class, "e.g. STANDARD_IA, GLACIER_IR");
  cmd.add_option("--visibility-timeout", f->visibility, "visibility of received messages; extended while in flight")
      ->check(DurationValidator())
      ->capture_default_str();
  cmd.add_flag("--keep", ar.drain.keep, "archive a copy; delete nothing");
  cmd.add_flag("--dry-run", ar.drain.dry_run,
               "count what would be archived; uploads and deletes nothing (receiving raises receive counts)");
  cmd.add_option("--concurrency", ar.drain.receivers,
                 "receivers per queue, at most (1..64): a standard queue's run receives with as many as raise "
                 "its rate (2, doubled while a doubling pays)")
      ->capture_default_str()
      ->check(IntegerValidator(1, 64));
  cmd.add_flag("--fixed-concurrency", f->fixed_concurrency, "receive with all --concurrency receivers, always");
  cmd.add_option("--output", ar.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd.add_option("--progress", ar.progress, "auto, always or never")->check(CLI::IsMember({"auto", "always", "never"}));
  return [f](const CommandContext& ctx) { return RunArchiveFlags(*f, ctx); };
}

}  // namespace

Command ArchiveCommand() {
  return {"archive", "archive DLQ messages, deleting each only after its object is stored", kArchiveExitCodes,
          AddArchiveFlags};
}

}  // namespace dlq
