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
#include "app/replay_render.h"
#include "common/progress.h"
#include "common/strings.h"
#include "replay/replay_run.h"

namespace dlq {
namespace {
constexpr int kExitUsage = 2;

int Fail(const ReplayDeps& deps, int code, const std::string& message) {
  std::fputs(ReplayErrorLine(message).c_str(), deps.err);
  return code;
}

// Checks the flags that need no call, in order; sets the rate and the plan. Returns the exit
// code to stop with (the error printed), or nullopt to go on.
std::optional<int> CheckFlags(const ReplayCommandOptions& options, const ReplayDeps& deps, bool live,
                              ReplayRunRequest& rq) {
  const bool records = !options.from_lambda_records.empty();
  if (int(live) + int(!options.from.empty()) + int(records) != 1) {
    return Fail(deps, kExitUsage, "give one of --from URL, --from-queue DLQ and --from-lambda-records s3://BUCKET");
  }
  if (records && !options.to_origin) {
    return Fail(deps, kExitUsage,
                "--from-lambda-records reads Lambda's records of failed invocations, which go back to their "
                "functions: give --to-origin");
  }
  if (records && !options.filter.queues.empty()) {
    return Fail(deps, kExitUsage,
                "--queue selects DLQs of an archive; Lambda's records are not in one: narrow them by function with "
                "the URL (s3://BUCKET/aws/lambda/async/FUNCTION)");
  }
  if (records && options.audit_to.empty() && !options.dry_run) {
    return Fail(deps, kExitUsage,
                "--from-lambda-records needs --audit-to s3://BUCKET/PREFIX|file:///DIR: the audit record and the "
                "record of what was sent go there (never into Lambda's bucket), so a rerun skips what this run "
                "delivers (or --dry-run)");
  }
  if (int(options.to_source) + int(options.to_origin) + int(!options.to_queue.empty()) != 1) {
    return Fail(deps, kExitUsage, "give one of --to-source, --to-origin and --to-queue NAME|URL");
  }
  if (!options.function.empty() && !options.to_origin) {
    return Fail(deps, kExitUsage, "--function names the origin of --to-origin; give it with --to-origin");
  }
  if (options.all_queues && options.to_queue.empty()) {
    return Fail(deps, kExitUsage,
                "--all-queues lets --to-queue take the messages of several DLQs; it does nothing "
                "with --to-source or --to-origin");
  }
  if (options.allow_cross_account && !options.to_queue.empty()) {
    return Fail(deps, kExitUsage,
                "--allow-cross-account is for --to-source and --to-origin (a source or origin in "
                "another account or region); --to-queue names its queue itself");
  }
  if (!options.rate.empty()) {
    auto rate = ParseRate(options.rate);
    if (!rate) return Fail(deps, kExitUsage, fmt::format("--rate '{}' is not a rate (e.g. 100/s)", options.rate));
    rq.rate = *rate;
  }
  auto parsed = ParseRedriveFlags(options.redrive, options.to_source || options.to_origin);
  if (!parsed.ok()) return Fail(deps, kExitUsage, parsed.status().message());
  rq.plan = std::move(*parsed);
  const RedrivePlan& plan = rq.plan;
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

// How the CLI's flags are named in the use case's refusals.
ReplayTerms CliReplayTerms() {
  ReplayTerms t;
  t.to_source = "--to-source";
  t.to_queue = "--to-queue";
  t.narrow = "--queue/--attr";
  t.queue_filter = "--queue";
  t.all_queues = "--all-queues";
  t.allow_cross_account = "--allow-cross-account";
  t.no_canary = "--no-canary";
  t.max_backlog = "--max-backlog";
  t.checkpoint = "--checkpoint";
  t.transform = "--transform";
  t.failed_again = "--failed-again";
  t.audit_to = "--audit-to URL";
  t.to_origin = "--to-origin";
  t.function = "--function NAME";
  return t;
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
  ReplayRunRequest rq;
  if (auto code = CheckFlags(options, deps, live, rq)) return *code;
  auto filter = BuildFilter(options.filter, clock.Now());
  if (!filter.ok()) return Fail(deps, kExitUsage, filter.status().message());
  if (Status st = filter->CompileRegex(); !st.ok()) return Fail(deps, kExitUsage, st.message());
  if (Status st = CheckFilterNotEmpty(!live, options.dry_run, options.all, *filter); !st.ok()) {
    return Fail(deps, kExitUsage, st.message());
  }
  rq.from = options.from;
  rq.from_queue = options.from_queue;
  rq.from_lambda_records = options.from_lambda_records;
  rq.filter = std::move(*filter);
  rq.failed_again = options.failed_again;
  rq.again = options.again;
  rq.to_source = options.to_source;
  rq.to_origin = options.to_origin;
  rq.function = options.function;
  rq.to_queue = options.to_queue;
  rq.all_queues = options.all_queues;
  rq.allow_cross_account = options.allow_cross_account;
  rq.max = options.max;
  rq.concurrency = options.concurrency;
  rq.dry_run = options.dry_run;
  rq.max_dry_run_entries = options.output == "json" ? SIZE_MAX : 0;  // text: printed as they come
  rq.checkpoint = options.checkpoint;
  rq.transform = options.transform;
  rq.transform_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.transform_timeout_s * 1000));
  rq.audit_to = options.audit_to;
  rq.file_modes = options.file_modes;
  rq.terms = CliReplayTerms();

  ReplayRunDeps run_deps;
  run_deps.sqs = deps.sqs;
  run_deps.open_store = [&deps](const Destination& d) -> Result<std::shared_ptr<ObjectStore>> {
    DLQ_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store, deps.open_store(d));
    return std::shared_ptr<ObjectStore>(std::move(store));
  };
  run_deps.caller_arn = deps.caller_arn;
  run_deps.region = deps.region;
  run_deps.clock = &clock;
  run_deps.lambda = deps.lambda;
  run_deps.sns = deps.sns;
  run_deps.events = deps.events;
  run_deps.http = deps.http;

  ReplayRendering rendering;
  rendering.json = options.output == "json";
  rendering.all = options.all;
  rendering.all_queues = options.all_queues;
  rendering.checkpoint = !options.checkpoint.empty();
  rendering.to_queue = options.to_queue;
  rendering.audit_to = options.audit_to;
  const TextSink sink = TextSink::ToFiles(deps.out, deps.err);
  const bool tty = isatty(fileno(deps.err)) != 0;
  ReplayTextObserver observer(
      rq, rendering, sink,
      std::make_unique<ProgressPrinter>(ChooseProgressMode(options.progress, tty), clock, deps.err), clock);
  observer.on_guard = deps.on_redrive_status;
  ReplayRunResult result = RunReplayUseCase(rq, run_deps, observer, stop);
  observer.ClearProgress();
  return RenderReplayResult(rendering, result, sink);
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
  deps.lambda = &services.lambda();
  deps.sns = &services.sns();
  deps.events = &services.events();
  deps.http = &services.transport();
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
  cmd.add_option("--from-lambda-records", rp->from_lambda_records,
                 "read Lambda's records of failed invocations from its S3 on-failure destination: s3://BUCKET "
                 "(all of aws/lambda/async/) or s3://BUCKET/aws/lambda/async/FUNCTION; with --to-origin");
  AddFilterFlags(cmd, rp->filter);
  cmd.add_flag("--to-source", rp->to_source, "send each message to the queue it failed from");
  cmd.add_flag("--to-origin", rp->to_origin,
               "send each message back where it came from when that is not a queue: the Lambda function, "
               "EventBridge target or SNS subscription endpoint (doc/origins.md)");
  cmd.add_option("--function", rp->function,
                 "--to-origin: the function (name or ARN) of messages that do not name theirs (default: the one "
                 "whose DeadLetterConfig targets the DLQ)");
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
