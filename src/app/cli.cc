#include "app/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>

#include "app/archive_command.h"
#include "app/audit_command.h"
#include "app/check_command.h"
#include "app/ddl_command.h"
#include "app/doctor.h"
#include "app/lambda_command.h"
#include "app/ls_command.h"
#include "app/replay_command.h"
#include "app/run_command.h"
#include "app/search_command.h"
#include "app/services.h"
#include "app/show_command.h"
#include "app/stack_command.h"
#include "app/stats_command.h"
#include "aws/http_client_choice.h"
#include "common/byte_size.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"
#include "credentials/sso_provider.h"
#include "monitor/shard.h"
#include "query/filter.h"

namespace dlq {
namespace {

constexpr int kExitUsage = 2;

constexpr const char* kArchiveFooter =
    "Exit codes:\n"
    "  0    done: every selected message archived and deleted\n"
    "  1    error (the message says what and where; nothing unarchived was deleted), or --queue-prefix matched no\n"
    "       dead-letter queue\n"
    "  2    usage error\n"
    "  3    archived, but some deletes failed (those messages stay in the DLQ and are archived again)\n"
    "  4    incomplete: selected messages were left in the DLQ\n"
    "  130  stopped by a signal (uploads in flight finished first)";

std::atomic<bool> g_stop{false};

// The first SIGINT/SIGTERM asks for a graceful stop; a second one exits at
// once (async-signal-safe: only _exit). Messages still held then come back
// when their visibility timeout runs out.
extern "C" void OnSignal(int) {
  if (g_stop.exchange(true)) _exit(130);
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct GlobalFlags {
  std::string region, profile, endpoint_url;
  std::string log_level = "info";
  std::string log_format = "text";
  double connect_timeout_s = 5;
  double read_timeout_s = 70;
  int max_attempts = 6;
};

// CLI11 validator for durations like "90s", "4h", "4d".
struct DurationValidator : public CLI::Validator {
  DurationValidator() {
    name_ = "DURATION";
    func_ = [](const std::string& s) {
      return ParseDuration(s) ? std::string() : "'" + s + "' is not a duration (e.g. 90s, 15m, 4h, 4d)";
    };
  }
};

// A decimal integer in [min, max]. Rewrites the value in canonical form, so
// CLI11's own conversion (strtoull with base 0) never sees "-1" (which it
// would wrap) or "010" (which it would read as octal).
struct IntegerValidator : public CLI::Validator {
  IntegerValidator(uint64_t min, uint64_t max) {
    name_ = "INTEGER";
    func_ = [min, max](std::string& s) {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) {
        if (max == UINT64_MAX) return fmt::format("'{}' is not an integer >= {}", s, min);
        return fmt::format("'{}' is not an integer from {} to {}", s, min, max);
      }
      s = std::to_string(v);
      return std::string();
    };
  }
};

// Seconds as a decimal number: positive, finite, at most an hour.
struct SecondsValidator : public CLI::Validator {
  SecondsValidator() {
    name_ = "SECONDS";
    func_ = [](const std::string& s) {
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0 || v > 3600) {
        return fmt::format("'{}' must be a number of seconds greater than 0 and at most 3600", s);
      }
      return std::string();
    };
  }
};

// Batch sizes: the byte-size notation of the config file, 1 KiB .. 1 GiB.
constexpr uint64_t kMinBatchBytes = 1u << 10, kMaxBatchBytes = 1u << 30;
struct BatchBytesValidator : public CLI::Validator {
  BatchBytesValidator() {
    name_ = "SIZE";
    func_ = [](const std::string& s) {
      auto v = ParseByteSize(s);
      if (!v) return fmt::format("'{}' is not a size (e.g. 8MiB, 512KiB, 1048576)", s);
      if (*v < kMinBatchBytes || *v > kMaxBatchBytes) return fmt::format("'{}' is out of range [1KiB, 1GiB]", s);
      return std::string();
    };
  }
};

ServicesOptions ToServicesOptions(const GlobalFlags& g) {
  ServicesOptions o;
  if (!g.region.empty()) o.client.region = g.region;
  if (!g.profile.empty()) o.client.profile = g.profile;
  if (!g.endpoint_url.empty()) o.client.endpoint_url = g.endpoint_url;
  o.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.connect_timeout_s * 1000));
  o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.read_timeout_s * 1000));
  o.retry.max_attempts = g.max_attempts;
  return o;
}

void SetUpLogging(const GlobalFlags& g) {
  LogLevel level = LogLevel::kInfo;
  (void)ParseLogLevel(g.log_level, level);  // validated by the parser
  SetLogger(
      std::make_unique<StreamLogger>(stderr, g.log_format == "json" ? LogFormat::kJson : LogFormat::kText, level));
}

// The first argument that is neither an option nor an option's value: the
// command the user named, if any.
std::optional<std::string> CommandWord(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return i + 1 < argc ? std::optional<std::string>(argv[i + 1]) : std::nullopt;
    if (a.empty() || a.front() != '-') return std::string(a);
    if (a.find('=') != std::string_view::npos) continue;
    const CLI::Option* opt = app.get_option_no_throw(std::string(a));
    if (opt != nullptr && opt->get_expected_min() > 0) ++i;  // skip its value
  }
  return std::nullopt;
}

const CLI::App* FindCommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string CommandList(const CLI::App& app) {
  std::string out = "commands:\n";
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    out += fmt::format("  {:<9} {}\n", sub->get_name(), sub->get_description());
  }
  out += "run 'dlq-archive help COMMAND' for a command's options\n";
  return out;
}

// Every long option the command accepts, including the global ones.
std::vector<std::string> OptionNames(const CLI::App& app, const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* a : {&app, command}) {
    if (a == nullptr) continue;
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    }
  }
  return names;
}

// True when the arguments ask doctor for JSON, so even a usage error is
// reported as a JSON document.
bool DoctorWantsJson(const std::optional<std::string>& command, int argc, char** argv) {
  if (command != "doctor") return false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--output=json" || (a == "--output" && i + 1 < argc && std::string_view(argv[i + 1]) == "json")) {
      return true;
    }
  }
  return false;
}

class UsageReporter {
 public:
  UsageReporter(std::optional<std::string> command, bool json) : command_(std::move(command)), json_(json) {}

  // Prints "error: ..." (and the JSON document when asked for) and returns 2.
  int Fail(const std::string& message) const {
    std::string prefix = command_ ? *command_ + ": " : "";
    std::fprintf(stderr, "error: %s%s\n", prefix.c_str(), TerminalSafe(message).c_str());
    if (command_) std::fprintf(stderr, "run 'dlq-archive help %s' for usage\n", command_->c_str());
    if (json_) {
      std::string doc = DoctorErrorJson(InvalidArgument(prefix + message), kExitUsage) + "\n";
      std::fwrite(doc.data(), 1, doc.size(), stdout);
    }
    return kExitUsage;
  }

 private:
  std::optional<std::string> command_;
  bool json_;
};

// A CLI11 parse error in the user's terms, naming the offending argument.
std::string DescribeParseError(const CLI::ParseError& e, const CLI::App& app, const CLI::App* command) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return e.what();
  std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) return e.what();
  const std::string& first = extras.front();
  if (StartsWith(first, "-")) {
    std::string name = first.substr(0, first.find('='));
    std::string msg = fmt::format("unknown option {}", name);
    if (std::string best = ClosestMatch(name, OptionNames(app, command)); !best.empty()) {
      msg += fmt::format(" (did you mean {}?)", best);
    }
    return msg;
  }
  return fmt::format("unexpected argument '{}'", first);
}

int RunDoctorCommand(const GlobalFlags& g, const DoctorOptions& options, bool json) {
  const Environment& env = DefaultEnvironment();
  ServicesOptions so = ToServicesOptions(g);
  DoctorDeps deps;
  deps.setup = DiagnoseSettings(so.client, env);
  if (auto http = DescribeHttpClient(env); http.ok()) deps.http_client = *http;
  if (const auto& s = deps.setup.settings; s && s->profile_section && IsSsoProfile(*s->profile_section)) {
    if (auto sso = ResolveSsoProfile(s->profile, *s->profile_section, *s, env); sso.ok())
      deps.sso_portal = sso->endpoint;
  }
  std::unique_ptr<AwsServices> svc;
  if (deps.setup.settings) {
    auto created = AwsServices::Create(*deps.setup.settings, so, env, DefaultClock());
    if (!created.ok()) {
      // Building the transport failed: nothing can be checked beyond the settings.
      deps.setup.config = created.status();
    } else {
      svc = std::move(*created);
      deps.credentials = &svc->credentials();
      deps.caller_identity = [&svc] { return svc->sts().GetCallerIdentity(); };
      deps.sqs = &svc->sqs();
      deps.head_bucket = [&svc](const std::string& b) -> Status {
        Status st = svc->s3_for(b).HeadBucket(b);
        if (st.ok() || st.code() == ErrorCode::kNotFound) return st;
        // HEAD errors carry no body, so a 403 cannot say whether the signature
        // or the permissions are wrong: a one-key listing tells.
        ListObjectsV2Request req;
        req.max_keys = 1;
        auto list = svc->s3_for(b).ListObjectsV2(b, req);
        return list.ok() ? st : list.status();
      };
    }
  }
  DoctorReport report = RunDoctor(deps, options);
  std::string out = json ? report.ToJson() + "\n" : report.ToText();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.ok() ? 0 : 1;
}

// Resolves the settings and builds the services for archive. An unknown
// region given with --region or a bad DLQ_HTTP_CLIENT is a usage error (2);
// other failures are 1.
Result<std::unique_ptr<AwsServices>> MakeServices(const GlobalFlags& g, int& exit_code) {
  const Environment& env = DefaultEnvironment();
  ServicesOptions so = ToServicesOptions(g);
  exit_code = kExitUsage;
  DLQ_RETURN_IF_ERROR(ChooseHttpClient(env).status());  // DLQ_HTTP_CLIENT
  exit_code = 1;
  DLQ_ASSIGN_OR_RETURN(AwsSettings settings, ResolveSettings(so.client, env));
  if (Status st = CheckKnownRegion(settings, env); !st.ok()) {
    if (settings.region_source == "--region") exit_code = kExitUsage;
    return st;
  }
  return AwsServices::Create(settings, so, env, DefaultClock());
}

// Runs a command that reads the archive `from_uri` names (S3 through the AWS
// services, or a local directory). A malformed URL is a usage error.
int WithArchive(const GlobalFlags& g, const UsageReporter& usage, const std::string& from_uri,
                const std::function<int(ObjectStore&, const Destination&)>& run) {
  if (from_uri.empty()) return usage.Fail("--from is required (s3://BUCKET/PREFIX or file:///DIR)");
  Result<Destination> from = ParseDestination(from_uri);
  if (!from.ok()) return usage.Fail("--from: " + from.status().message());
  std::unique_ptr<AwsServices> services;
  if (from->scheme == "s3") {
    int exit_code = 1;
    auto created = MakeServices(g, exit_code);
    if (!created.ok()) {
      std::fprintf(stderr, "error: %s\n", TerminalSafe(created.status().message()).c_str());
      return exit_code;
    }
    services = std::move(*created);
  }
  auto store = OpenStore(*from, services.get());
  if (!store.ok()) {
    std::fprintf(stderr, "error: %s\n", TerminalSafe(store.status().message()).c_str());
    return 1;
  }
  return run(**store, *from);
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"dlq-archive: archive SQS dead-letter queues to S3 before messages expire, with no loss", "dlq-archive"};
  app.set_version_flag("--version", std::string(DLQ_VERSION));
  app.require_subcommand(0, 1);
  app.fallthrough();
  GlobalFlags g;
  app.add_option("--region", g.region,
                 "AWS region (else AWS_REGION, AWS_DEFAULT_REGION, profile); must be a known AWS region unless "
                 "--endpoint-url is set or DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1");
  app.add_option("--profile", g.profile, "profile in ~/.aws/config and ~/.aws/credentials (else AWS_PROFILE)");
  app.add_option("--endpoint-url", g.endpoint_url,
                 "endpoint for every service (else AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL)");
  auto* log_level_opt =
      app.add_option("--log-level", g.log_level, "debug, info, warn, error, off (wins over a config file's log.level)")
          ->capture_default_str()
          ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
  auto* log_format_opt =
      app.add_option("--log-format", g.log_format,
                     "text or json (structured lines on stderr; wins over a config file's log.format)")
          ->capture_default_str()
          ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--connect-timeout", g.connect_timeout_s, "seconds (> 0)")
      ->capture_default_str()
      ->check(SecondsValidator());
  app.add_option("--read-timeout", g.read_timeout_s, "seconds (> 0)")->capture_default_str()->check(SecondsValidator());
  app.add_option("--max-attempts", g.max_attempts, "attempts per AWS call (retries use backoff with full jitter)")
      ->capture_default_str()
      ->check(IntegerValidator(1, 20));

  // doctor
  DoctorOptions doctor_opts;
  std::string doctor_output = "text";
  auto* doctor = app.add_subcommand("doctor", "check credentials, region, endpoints and access to SQS and S3");
  doctor->add_option("--queue", doctor_opts.queue, "also check this queue (name or URL)");
  doctor->add_option("--bucket", doctor_opts.bucket, "also check this bucket");
  doctor->add_option("--output", doctor_output, "text or json")->check(CLI::IsMember({"text", "json"}));
  doctor->footer("Exit codes: 0 every check passed; 1 some check failed; 2 usage error");

  // archive
  ArchiveCommandOptions ar;
  std::string older_than, expiring_within, batch_max_age, batch_max_bytes, visibility = "2m";
  size_t batch_max_messages = 0;
  int gzip_level = -1;
  bool all = false;
  auto* archive = app.add_subcommand("archive", "archive DLQ messages, deleting each only after its object is stored");
  archive->add_option("--queue", ar.queues, "queue name or URL (repeatable)");
  archive->add_option("--queue-prefix", ar.queue_prefix,
                      "every dead-letter queue whose name starts with this (queues that are no queue's DLQ are "
                      "listed as skipped)");
  archive->add_flag("--any-queue", ar.any_queue, "--queue-prefix takes every queue it matches, DLQ or not");
  archive->add_option("--to", ar.destination, "s3://BUCKET/PREFIX or file:///DIR (required)");
  archive->add_flag("--all", all, "archive every message (default)");
  archive->add_option("--older-than", older_than, "only messages sent longer ago than this (by SentTimestamp)")
      ->check(DurationValidator());
  archive
      ->add_option("--expiring-within", expiring_within,
                   "only messages that expire within this (standard: SentTimestamp + retention)")
      ->check(DurationValidator());
  archive->add_option("--max-messages", ar.drain.max_messages, "stop after this many messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  archive->add_option("--batch-max-messages", batch_max_messages, "messages per object (default 10000)")
      ->check(IntegerValidator(1, 10'000'000));
  archive
      ->add_option("--batch-max-bytes", batch_max_bytes,
                   "uncompressed bytes per object, e.g. 8MiB, 512KiB, 1048576 (default 8MiB; 1KiB..1GiB)")
      ->check(BatchBytesValidator());
  archive->add_option("--batch-max-age", batch_max_age, "seal a batch after this long (default 30s)")
      ->check(DurationValidator());
  archive->add_option("--gzip-level", gzip_level, "1 (fast, default) .. 12 (small)")->check(IntegerValidator(1, 12));
  archive->add_option("--key-template", ar.key_template,
                      "object key template (default {prefix}/{queue}/{yyyymmdd}/{queue}-{hhmmss}-{batch_id}.json.gz)");
  archive->add_flag("--hive", ar.hive, "Hive-style keys: {prefix}/queue={queue}/dt={yyyy-mm-dd}/...");
  archive->add_option("--sse", ar.drain.put.sse, "server-side encryption: AES256 or aws:kms")
      ->check(CLI::IsMember({"AES256", "aws:kms"}));
  archive->add_option("--sse-kms-key-id", ar.drain.put.sse_kms_key_id, "KMS key id, ARN or alias (with --sse aws:kms)");
  archive->add_option("--storage-class", ar.drain.put.storage_class, "e.g. STANDARD_IA, GLACIER_IR");
  archive->add_option("--visibility-timeout", visibility, "visibility of received messages; extended while in flight")
      ->check(DurationValidator())
      ->capture_default_str();
  archive->add_flag("--keep", ar.drain.keep, "archive a copy; delete nothing");
  archive->add_flag("--dry-run", ar.drain.dry_run,
                    "count what would be archived; uploads and deletes nothing (receiving raises receive counts)");
  archive
      ->add_option("--concurrency", ar.drain.receivers,
                   "receivers per queue, at most (1..64): a standard queue's run receives with as many as raise "
                   "its rate (2, doubled while a doubling pays)")
      ->capture_default_str()
      ->check(IntegerValidator(1, 64));
  bool fixed_concurrency = false;
  archive->add_flag("--fixed-concurrency", fixed_concurrency, "receive with all --concurrency receivers, always");
  archive->add_option("--output", ar.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  archive->add_option("--progress", ar.progress, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  archive->footer(kArchiveFooter);

  // run / check
  RunCommandOptions run_opts;
  auto* run = app.add_subcommand("run", "monitor DLQs from a config file: metrics, alarms, archiving (daemon)");
  run->add_option("--config", run_opts.config_path, "YAML config (doc/configuration.md) (required)");
  run->add_option("--listen-port", run_opts.listen_port, "override the config's listen port (0: any free port)")
      ->check(IntegerValidator(0, 65535));
  std::string run_shard;
  run->add_option("--shard", run_shard,
                  "I/N: this replica is shard I of N and handles only the queues it owns (overrides the config's "
                  "shard)");
  CheckCommandOptions check_opts;
  auto* check = app.add_subcommand("check", "print the resolved plan and a safety analysis per queue");
  check->add_option("--config", check_opts.config_path, "YAML config (doc/configuration.md) (required)");
  check->add_option("--output", check_opts.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  check->footer("Exit codes: 0 every queue is safe; 1 some queue is unsafe or the config is invalid; 2 usage error");

  // ls / search / show: reading the archive
  std::string ls_from, search_from, show_from;
  LsCommandOptions ls_opts;
  auto* ls = app.add_subcommand("ls", "list the archive's queues, days and objects with their sizes");
  AddFromFlag(*ls, ls_from);
  ls->add_option("--queue", ls_opts.queues, "only this queue (repeatable)");
  ls->add_option("--since", ls_opts.since, "only objects archived at or after T (RFC 3339, a date, or 24h / 7d ago)");
  ls->add_option("--until", ls_opts.until, "only objects archived before T");
  ls->add_flag("--objects", ls_opts.objects, "one line per object instead of per queue and day");
  AddArchiveSourceFlags(*ls, ls_opts.source);
  SearchCommandOptions search_opts;
  auto* search = app.add_subcommand("search", "print the archived messages that match a filter");
  AddFromFlag(*search, search_from);
  AddFilterFlags(*search, search_opts.filter);
  search->add_option("--limit", search_opts.limit, "stop after N messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  search
      ->add_option("--output", search_opts.output,
                   "table (default on a terminal), jsonl (default when piped), ids "
                   "or count")
      ->check(CLI::IsMember({"table", "jsonl", "ids", "count"}));
  AddArchiveSourceFlags(*search, search_opts.source);
  AddScanMemoryFlag(*search, search_opts.source);
  search->footer(
      "Exit codes: 0 done; 1 the archive cannot be listed; 2 usage error; 3 done, but unreadable objects "
      "or lines were skipped (each named on stderr)");
  ShowCommandOptions show_opts;
  auto* show = app.add_subcommand("show", "print one archived message in full, with where it is stored");
  show->add_option("message_id", show_opts.message_id, "the SQS MessageId (required without --fingerprint)");
  show->add_option("--fingerprint", show_opts.fingerprint, "ID: a failure group; alone: its earliest message");
  show->add_option("--fingerprint-fields", show_opts.fingerprint_fields, "the JSON fields --fingerprint groups by");
  AddFromFlag(*show, show_from);
  show->add_option("--queue", show_opts.queues, "look only in this queue (repeatable)");
  show->add_option("--output", show_opts.output, "text or json (the archive line)")
      ->check(CLI::IsMember({"text", "json"}));
  show->add_flag("--raw", show_opts.raw,
                 "print the body alone, byte for byte as stored (text output escapes control characters)")
      ->excludes("--output");
  AddArchiveSourceFlags(*show, show_opts.source);
  AddScanMemoryFlag(*show, show_opts.source);
  // replay
  ReplayCommandOptions rp;
  auto* replay = app.add_subcommand("replay", "send archived or live DLQ messages back to a queue, filtered");
  replay->add_option("--from", rp.from, "archive to read: s3://BUCKET/PREFIX or file:///DIR");
  replay->add_option("--from-queue", rp.from_queue, "live form: move messages out of this DLQ (name, URL or ARN)");
  AddFilterFlags(*replay, rp.filter);
  replay->add_flag("--to-source", rp.to_source, "send each message to the queue it failed from");
  replay->add_option("--to-queue", rp.to_queue, "send every message to this queue (name, URL or ARN)");
  replay->add_flag("--all", rp.all, "--from with no filter: replay every archived message (required then)");
  replay->add_flag("--all-queues", rp.all_queues,
                   "--to-queue: send the messages of several DLQs into the one queue (required then)");
  replay->add_flag("--allow-cross-account", rp.allow_cross_account,
                   "--to-source: send to sources in another account or region than their DLQ (each is printed)");
  replay->add_option("--rate", rp.rate, "messages per second, e.g. 100/s (default: unlimited)");
  replay->add_option("--max", rp.max, "send at most this many messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  replay
      ->add_option("--concurrency", rp.concurrency,
                   "SendMessageBatch calls in flight (default 4; 1 with --checkpoint, so a crash duplicates at most "
                   "one batch)")
      ->check(IntegerValidator(1, 64));
  replay->add_flag("--dry-run", rp.dry_run, "print what would be sent; send and write nothing");
  replay->add_option("--checkpoint", rp.checkpoint, "progress file: a rerun resumes where a killed run stopped");
  replay->add_option("--transform", rp.transform,
                     "pipe each record (one JSON line) through `sh -c CMD`; send the record it prints back");
  replay->add_option("--transform-timeout", rp.transform_timeout_s, "seconds to wait for each transformed line")
      ->capture_default_str()
      ->check(SecondsValidator());
  replay->add_option("--audit-to", rp.audit_to,
                     "archive URL for the audit record and the record of what was sent (required by --from-queue; "
                     "default: the --from archive)");
  replay->add_flag("--again", rp.again, "also send messages an earlier replay delivered to the same destination");
  replay->add_option("--progress", rp.progress, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  replay->footer(
      "Exit codes: 0 every selected message sent; 1 some failed or an error stopped the run; 2 usage error, an "
      "unresolvable or missing destination, another run's checkpoint, no filter without --all, several DLQs into "
      "--to-queue without --all-queues, or a source in another account or region without --allow-cross-account "
      "(nothing sent); 3 sent, but unreadable archive objects or lines were skipped; 130 stopped by a signal");

  // audit ls / audit show: the replay audit trail
  std::string audit_from;
  AuditCommandOptions audit_opts;
  auto* audit = app.add_subcommand("audit", "list replays (and archive runs) from the audit trail, or show one");
  audit->require_subcommand(1);
  auto* audit_ls = audit->add_subcommand("ls", "one line per audit record, oldest first");
  auto* audit_show = audit->add_subcommand("show", "one audit record in full, with every message's outcome");
  audit_show->add_option("id", audit_opts.id, "the record's id, as `audit ls` prints it (required)");
  for (CLI::App* sub : {audit_ls, audit_show}) {
    AddFromFlag(*sub, audit_from);
    sub->add_option("--output", audit_opts.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  }
  audit->footer(
      "Records are read from {prefix}/_audit/ of --from (the archive, or a replay's --audit-to). Exit "
      "codes: 0 ok; 1 cannot list or read, or no such record; 2 usage error; 3 unreadable records left out");

  // stats
  std::string stats_from;
  StatsCommandOptions stats_opts;
  auto* stats = app.add_subcommand("stats", "group archived messages by queue, day, attribute, JSON value or failure");
  AddFromFlag(*stats, stats_from);
  AddFilterFlags(*stats, stats_opts.filter);
  stats->add_option("--group-by", stats_opts.group_by, "queue, day, attr:NAME, json:PATH or fingerprint (required)");
  stats->add_option("--output", stats_opts.output, "table, json or jsonl (default: table on a terminal, else jsonl)")
      ->check(CLI::IsMember({"table", "json", "jsonl"}));
  stats->add_option("--max-groups", stats_opts.max_groups, "groups kept; later groups count as (other)")
      ->capture_default_str()
      ->check(IntegerValidator(1, 10'000'000));
  AddArchiveSourceFlags(*stats, stats_opts.source);
  AddScanMemoryFlag(*stats, stats_opts.source);
  stats->footer(
      "Exit codes: 0 done; 1 the archive could not be read; 2 usage error; 3 done, but unreadable objects or lines "
      "were skipped; 130 stopped by a signal");

  // ddl
  DdlCommandOptions ddl_opts;
  auto* ddl = app.add_subcommand("ddl", "print Athena DDL (table with partition projection, de-duplicating view)");
  ddl->add_option("--from", ddl_opts.ddl.from, "s3://BUCKET/PREFIX, as given to archive --to (required)");
  ddl->add_option("--layout", ddl_opts.layout, "key layout the archive was written with: default or hive")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "hive"}));
  ddl->add_option("--database", ddl_opts.ddl.database, "Athena database")->capture_default_str();
  ddl->add_option("--table", ddl_opts.ddl.table, "table name; the view is TABLE_dedup")->capture_default_str();
  ddl->add_option("--queues", ddl_opts.queues, "comma-separated queues: enum projection (default: injected)");
  ddl->add_option("--first-day", ddl_opts.ddl.first_day, "YYYY-MM-DD: first day of the date projection")
      ->capture_default_str();
  ddl->footer("Exit codes: 0 printed; 2 usage error (e.g. a file:// archive: Athena reads only S3)");

  // stack
  StackCommandOptions st;
  auto* stack = app.add_subcommand("stack", "print a CloudFormation template that runs the archiver on AWS Lambda");
  stack->add_option("--config", st.config_path, "YAML config (doc/configuration.md) (required)");
  stack->add_option("--lambda-code", st.stack.lambda_code, "s3://BUCKET/KEY of the package-lambda zip (required)");
  stack->add_option("--group", st.groups, "only this config group (repeatable; default: every group)");
  stack->add_flag("--no-discovery", st.no_discovery,
                  "no AWS call: only the queues the config names, with assumed retention periods");
  stack->add_option("--assume-retention", st.assumed_retention, "with --no-discovery: each DLQ's retention")
      ->capture_default_str()
      ->check(DurationValidator());
  stack
      ->add_option("--assume-source-retention", st.assumed_source_retention,
                   "with --no-discovery: the source queues' retention (default: unknown)")
      ->check(DurationValidator());
  stack->add_option("--function-name", st.stack.function_name, "Lambda function name, prefix of alarm names")
      ->capture_default_str();
  stack->add_option("--architecture", st.stack.architecture, "x86_64 or arm64 (the zip's)")
      ->capture_default_str()
      ->check(CLI::IsMember({"x86_64", "arm64"}));
  stack->add_option("--timeout", st.stack.timeout_s, "function timeout, seconds")
      ->capture_default_str()
      ->check(IntegerValidator(30, 900));
  stack->add_option("--memory", st.stack.memory_mb, "function memory, MB")
      ->capture_default_str()
      ->check(IntegerValidator(128, 10240));
  stack->add_option("--reserved-concurrency", st.stack.reserved_concurrency, "reserved concurrent executions")
      ->capture_default_str()
      ->check(IntegerValidator(1, 1000));
  stack->add_option("--schedule", st.stack.schedule,
                    "sweep schedule, e.g. 'rate(15 minutes)' (default: the config's sweep_interval)");
  stack->add_option("--policy", st.stack.policy, "what every invocation archives: all, older_than:D, expiring_within:D")
      ->capture_default_str();
  stack->add_option("--log-retention-days", st.stack.log_retention_days, "function log retention")
      ->capture_default_str();
  stack->add_flag("--create-bucket", st.stack.create_bucket,
                  "create the destination bucket (encrypted, private, TLS only, lifecycle); default: it exists");
  stack
      ->add_option("--transition-storage-class", st.stack.transition_storage_class,
                   "lifecycle target: GLACIER_IR, GLACIER or DEEP_ARCHIVE")
      ->capture_default_str()
      ->check(CLI::IsMember({"GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"}));
  stack->add_option("--transition-days", st.stack.transition_days, "days before the transition (0: none)")
      ->capture_default_str()
      ->check(IntegerValidator(0, 36500));
  stack->add_option("--expiration-days", st.stack.expiration_days, "days before archives are deleted (0: never)")
      ->capture_default_str()
      ->check(IntegerValidator(0, 36500));
  stack->add_option("--abort-multipart-days", st.stack.abort_multipart_days, "abort incomplete uploads after")
      ->capture_default_str()
      ->check(IntegerValidator(1, 36500));
  stack->add_option("--vpc-subnets", st.stack.vpc_subnets, "run the function in these subnets (comma-separated)")
      ->delimiter(',');
  stack->add_option("--vpc-security-groups", st.stack.vpc_security_groups, "its security groups (comma-separated)")
      ->delimiter(',');
  stack->add_option("--vpc-id", st.stack.vpc_id, "the subnets' VPC (for the endpoints)");
  stack->add_option("--vpc-route-tables", st.stack.vpc_route_tables, "route tables for the S3 gateway endpoint")
      ->delimiter(',');
  bool no_vpc_endpoints = false;
  stack->add_flag("--no-vpc-endpoints", no_vpc_endpoints, "the VPC already has S3, SQS, Lambda (and STS) endpoints");
  bool no_athena = false;
  stack->add_flag("--no-athena", no_athena, "no Glue database and table");
  stack->add_option("--athena-database", st.stack.athena_database, "Glue database")->capture_default_str();
  stack->add_option("--athena-table", st.stack.athena_table, "Glue table")->capture_default_str();
  stack->add_option("--first-day", st.stack.first_day, "YYYY-MM-DD: first day of the date projection")
      ->capture_default_str();
  stack->add_option("--output", st.output, "yaml or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"yaml", "json"}));
  stack->footer(
      "Exit codes: 0 printed (warnings such as unsafe queues on stderr); 1 discovery failed; 2 bad config or "
      "options. See doc/deployment.md.");

  // help [COMMAND]
  std::string help_topic;
  // lambda
  auto* lambda = app.add_subcommand("lambda", "AWS Lambda custom runtime (configured by environment variables)");
  lambda->footer(
      "Configuration: see doc/lambda.md (AWS_LAMBDA_RUNTIME_API, DLQ_ARCHIVE_DESTINATION, DLQ_ARCHIVE_QUEUES, ...)");

  auto* help = app.add_subcommand("help", "show the options of a command");
  help->add_option("command", help_topic, "a command");

  // Name an unknown command before CLI11 reads it as a stray argument.
  std::optional<std::string> command = CommandWord(app, argc, argv);
  UsageReporter usage(command, DoctorWantsJson(command, argc, argv));
  std::vector<std::string> commands = CommandNames(app);
  auto not_a_command = [&](const std::string& word) {
    std::string msg = fmt::format("'{}' is not a dlq-archive command", word);
    if (std::string best = ClosestMatch(word, commands); !best.empty())
      msg += fmt::format(" (did you mean '{}'?)", best);
    std::fprintf(stderr, "error: %s\n%s", TerminalSafe(msg).c_str(), CommandList(app).c_str());
    return kExitUsage;
  };
  if (command && std::find(commands.begin(), commands.end(), *command) == commands.end()) {
    return not_a_command(*command);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = command ? FindCommand(app, *command) : nullptr;
    return usage.Fail(DescribeParseError(e, app, sub));
  }

  if (*help) {
    if (help_topic.empty()) {
      // Not app.help(): with `help` selected it would describe `help`.
      std::fputs(app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal).c_str(), stdout);
      return 0;
    }
    const CLI::App* topic = FindCommand(app, help_topic);
    if (topic == nullptr || topic == help) return not_a_command(help_topic);
    std::fputs(topic->help(app.get_name()).c_str(), stdout);
    return 0;
  }
  if (!command) {
    std::fprintf(stderr, "error: name a command\n%s", CommandList(app).c_str());
    return kExitUsage;
  }
  if (*archive && ar.destination.empty()) return usage.Fail("--to is required (s3://BUCKET/PREFIX or file:///DIR)");
  if (*run && run_opts.config_path.empty()) return usage.Fail("--config is required");
  if (*run && !run_shard.empty()) {
    auto shard = ParseShardSpec(run_shard);
    if (!shard.ok()) return usage.Fail("--shard: " + shard.status().message());
    run_opts.shard = *shard;
  }
  if (*check && check_opts.config_path.empty()) return usage.Fail("--config is required");
  if (*stats) {
    if (Status st = ValidateStatsOptions(stats_opts, DefaultClock().Now()); !st.ok()) return usage.Fail(st.message());
  }
  if (*ddl && ddl_opts.ddl.from.empty()) return usage.Fail("--from is required (s3://BUCKET/PREFIX)");
  if (*stack && st.config_path.empty()) return usage.Fail("--config is required");
  if (*stack && st.stack.lambda_code.empty()) {
    return usage.Fail("--lambda-code is required (s3://BUCKET/KEY of the zip built by scripts/package-lambda)");
  }
  if (*archive) {
    if (all && (!older_than.empty() || !expiring_within.empty())) {
      return usage.Fail("--all cannot be combined with --older-than or --expiring-within");
    }
    if (!older_than.empty() && !expiring_within.empty()) {
      return usage.Fail("choose one of --older-than and --expiring-within");
    }
    if (ar.any_queue && ar.queue_prefix.empty()) return usage.Fail("--any-queue applies to --queue-prefix");
  }

  SetUpLogging(g);
  InstallSignalHandlers();

  // The commands that write local files (archive, replay, run) take their
  // permission bits from DLQ_FILE_MODE; a bad value is a usage error.
  if (*archive || *replay || *run) {
    Result<FileModes> modes = FileModesFromEnv(DefaultEnvironment());
    if (!modes.ok()) {
      std::fprintf(stderr, "error: %s\n", modes.status().message().c_str());
      return kExitUsage;
    }
    ar.file_modes = rp.file_modes = run_opts.file_modes = *modes;
  }

  if (*run || *check) {
    run_opts.services = check_opts.services = ToServicesOptions(g);
    // Flags given on the command line win over the config file's log section.
    if (log_level_opt->count() > 0) run_opts.log_level = g.log_level;
    if (log_format_opt->count() > 0) run_opts.log_format = g.log_format;
    return *run ? RunRunCommand(run_opts, g_stop) : RunCheckCommand(check_opts);
  }
  if (*lambda) return RunLambdaCommand(ToServicesOptions(g), g_stop);
  if (*doctor) return RunDoctorCommand(g, doctor_opts, doctor_output == "json");
  if (*ls) {
    return WithArchive(g, usage, ls_from, [&](ObjectStore& store, const Destination& from) {
      return RunLsCommand(ls_opts, store, from, DefaultClock().Now(), stdout, stderr, &g_stop);
    });
  }
  if (*search) {
    return WithArchive(g, usage, search_from, [&](ObjectStore& store, const Destination& from) {
      return RunSearchCommand(search_opts, store, from, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, stdout,
                              stderr, &g_stop);
    });
  }
  if (*show) {
    if (show_opts.message_id.empty() && show_opts.fingerprint.empty()) {
      return usage.Fail("name a MESSAGE_ID or a --fingerprint ID");
    }
    return WithArchive(g, usage, show_from, [&](ObjectStore& store, const Destination& from) {
      return RunShowCommand(show_opts, store, from, stdout, stderr, &g_stop);
    });
  }
  if (*audit_ls) {
    return WithArchive(g, usage, audit_from, [&](ObjectStore& store, const Destination& from) {
      return RunAuditLsCommand(audit_opts, store, from, stdout, stderr, &g_stop);
    });
  }
  if (*audit_show) {
    if (audit_opts.id.empty()) return usage.Fail("name an audit record ID (see `dlq-archive audit ls`)");
    return WithArchive(g, usage, audit_from, [&](ObjectStore& store, const Destination& from) {
      return RunAuditShowCommand(audit_opts, store, from, stdout, stderr);
    });
  }
  if (*replay) {
    int replay_exit = 1;
    auto replay_services = MakeServices(g, replay_exit);
    if (!replay_services.ok()) {
      std::fprintf(stderr, "error: %s\n", TerminalSafe(replay_services.status().message()).c_str());
      return replay_exit;
    }
    return RunReplayCommand(rp, **replay_services, g_stop);
  }
  if (*ddl) return RunDdlCommand(ddl_opts);
  if (*stack) {
    st.stack.vpc_endpoints = !no_vpc_endpoints;
    st.stack.athena = !no_athena;
    st.services = ToServicesOptions(g);
    return RunStackCommand(st);
  }

  if (*stats) {
    return WithArchive(g, usage, stats_from, [&](ObjectStore& store, const Destination& from) {
      return RunStatsCommand(stats_opts, store, from, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, g_stop, stdout,
                             stderr);
    });
  }

  int exit_code = 1;
  auto services = MakeServices(g, exit_code);
  if (!services.ok()) {
    std::fprintf(stderr, "error: %s\n", TerminalSafe(services.status().message()).c_str());
    return exit_code;
  }
  if (!older_than.empty()) ar.drain.selection = {SelectionKind::kOlderThan, *ParseDuration(older_than)};
  if (!expiring_within.empty()) ar.drain.selection = {SelectionKind::kExpiringWithin, *ParseDuration(expiring_within)};
  if (batch_max_messages) ar.drain.batch.max_messages = batch_max_messages;
  if (!batch_max_bytes.empty()) ar.drain.batch.max_bytes = static_cast<size_t>(*ParseByteSize(batch_max_bytes));
  if (!batch_max_age.empty()) ar.drain.batch.max_age = *ParseDuration(batch_max_age);
  if (gzip_level > 0) ar.drain.batch.gzip_level = gzip_level;
  ar.drain.visibility_timeout = *ParseDuration(visibility);
  ar.drain.adaptive_receivers = !fixed_concurrency;
  return RunArchiveCommand(ar, **services, g_stop);
}

}  // namespace dlq
