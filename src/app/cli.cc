#include "app/cli.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "app/archive_command.h"
#include "app/check_command.h"
#include "app/run_command.h"
#include "app/doctor.h"
#include "app/services.h"
#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop = true; }

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

Result<std::unique_ptr<AwsServices>> MakeServices(const GlobalFlags& g) {
  ServicesOptions o;
  if (!g.region.empty()) o.client.region = g.region;
  if (!g.profile.empty()) o.client.profile = g.profile;
  if (!g.endpoint_url.empty()) o.client.endpoint_url = g.endpoint_url;
  o.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.connect_timeout_s * 1000));
  o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.read_timeout_s * 1000));
  o.retry.max_attempts = g.max_attempts;
  return AwsServices::Create(o, DefaultEnvironment(), DefaultClock());
}

int SetUpLogging(const GlobalFlags& g) {
  LogLevel level;
  if (!ParseLogLevel(g.log_level, level)) {
    std::fprintf(stderr, "error: --log-level must be debug, info, warn, error or off\n");
    return 2;
  }
  if (g.log_format != "text" && g.log_format != "json") {
    std::fprintf(stderr, "error: --log-format must be text or json\n");
    return 2;
  }
  SetLogger(std::make_unique<StreamLogger>(stderr, g.log_format == "json" ? LogFormat::kJson : LogFormat::kText,
                                           level));
  return 0;
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"dlq-archive: archive SQS dead-letter queues to S3 before messages expire, with no loss", "dlq-archive"};
  app.set_version_flag("--version", std::string(DLQ_VERSION));
  app.require_subcommand(1);
  app.fallthrough();
  GlobalFlags g;
  app.add_option("--region", g.region, "AWS region (else AWS_REGION, AWS_DEFAULT_REGION, profile)");
  app.add_option("--profile", g.profile, "profile in ~/.aws/config and ~/.aws/credentials (else AWS_PROFILE)");
  app.add_option("--endpoint-url", g.endpoint_url,
                 "endpoint for every service (else AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL)");
  app.add_option("--log-level", g.log_level, "debug, info, warn, error, off")->capture_default_str();
  app.add_option("--log-format", g.log_format, "text or json (structured lines on stderr)")->capture_default_str();
  app.add_option("--connect-timeout", g.connect_timeout_s, "seconds")->capture_default_str();
  app.add_option("--read-timeout", g.read_timeout_s, "seconds")->capture_default_str();
  app.add_option("--max-attempts", g.max_attempts, "attempts per AWS call (retries use backoff with full jitter)")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));

  // doctor
  DoctorOptions doctor_opts;
  std::string doctor_output = "text";
  auto* doctor = app.add_subcommand("doctor", "check credentials, region, endpoints and access to SQS and S3");
  doctor->add_option("--queue", doctor_opts.queue, "also check this queue (name or URL)");
  doctor->add_option("--bucket", doctor_opts.bucket, "also check this bucket");
  doctor->add_option("--output", doctor_output, "text or json")->check(CLI::IsMember({"text", "json"}));

  // archive
  ArchiveCommandOptions ar;
  std::string older_than, expiring_within, batch_max_age, visibility = "2m";
  uint64_t batch_max_bytes = 0;
  size_t batch_max_messages = 0;
  int gzip_level = -1;
  bool all = false;
  auto* archive = app.add_subcommand("archive", "archive DLQ messages, deleting each only after its object is stored");
  archive->add_option("--queue", ar.queues, "queue name or URL (repeatable)");
  archive->add_option("--queue-prefix", ar.queue_prefix, "every queue whose name starts with this");
  archive->add_option("--to", ar.destination, "s3://BUCKET/PREFIX or file:///DIR")->required();
  archive->add_flag("--all", all, "archive every message (default)");
  archive->add_option("--older-than", older_than, "only messages sent longer ago than this (by SentTimestamp)")
      ->check(DurationValidator());
  archive->add_option("--expiring-within", expiring_within,
                      "only messages that expire within this (standard: SentTimestamp + retention)")
      ->check(DurationValidator());
  archive->add_option("--max-messages", ar.drain.max_messages, "stop after this many messages (0: no limit)");
  archive->add_option("--batch-max-messages", batch_max_messages, "messages per object (default 10000)");
  archive->add_option("--batch-max-bytes", batch_max_bytes, "uncompressed bytes per object (default 8 MiB)");
  archive->add_option("--batch-max-age", batch_max_age, "seal a batch after this long (default 30s)")
      ->check(DurationValidator());
  archive->add_option("--gzip-level", gzip_level, "1 (fast, default) .. 12 (small)")->check(CLI::Range(1, 12));
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
  archive->add_option("--concurrency", ar.drain.receivers, "concurrent receivers per queue")->capture_default_str();
  archive->add_option("--output", ar.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  archive->add_option("--progress", ar.progress, "auto, always or never")->check(CLI::IsMember({"auto", "always", "never"}));

  // run / check
  RunCommandOptions run_opts;
  auto* run = app.add_subcommand("run", "monitor DLQs from a config file: metrics, alarms, archiving (daemon)");
  run->add_option("--config", run_opts.config_path, "YAML config (doc/configuration.md)")->required();
  run->add_option("--listen-port", run_opts.listen_port, "override the config's listen port (0: any free port)");
  CheckCommandOptions check_opts;
  auto* check = app.add_subcommand("check", "print the resolved plan and a safety analysis per queue");
  check->add_option("--config", check_opts.config_path, "YAML config (doc/configuration.md)")->required();
  check->add_option("--output", check_opts.output, "text or json")->check(CLI::IsMember({"text", "json"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (int rc = SetUpLogging(g); rc != 0) return rc;
  InstallSignalHandlers();

  if (*run || *check) {
    ServicesOptions so;
    if (!g.region.empty()) so.client.region = g.region;
    if (!g.profile.empty()) so.client.profile = g.profile;
    if (!g.endpoint_url.empty()) so.client.endpoint_url = g.endpoint_url;
    so.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.connect_timeout_s * 1000));
    so.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(g.read_timeout_s * 1000));
    so.retry.max_attempts = g.max_attempts;
    run_opts.services = check_opts.services = so;
    return *run ? RunRunCommand(run_opts, g_stop) : RunCheckCommand(check_opts);
  }

  auto services = MakeServices(g);
  if (!services.ok()) {
    std::fprintf(stderr, "error: %s\n", services.status().message().c_str());
    return 1;
  }
  AwsServices& svc = **services;

  if (*doctor) {
    auto head_bucket = [&](const std::string& b) -> Status {
      Status st = svc.s3_for(b).HeadBucket(b);
      if (st.ok() || st.code() == ErrorCode::kNotFound) return st;
      // HEAD errors carry no body, so a 403 cannot say whether the signature
      // or the permissions are wrong: a one-key listing tells.
      ListObjectsV2Request req;
      req.max_keys = 1;
      auto list = svc.s3_for(b).ListObjectsV2(b, req);
      return list.ok() ? st : list.status();
    };
    DoctorDeps deps{svc.settings(), svc.credentials(), [&] { return svc.sts().GetCallerIdentity(); }, svc.sqs(),
                    head_bucket};
    DoctorReport report = RunDoctor(deps, doctor_opts);
    std::string out = doctor_output == "json" ? report.ToJson() + "\n" : report.ToText();
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.ok() ? 0 : 1;
  }
  if (*archive) {
    if (all && (!older_than.empty() || !expiring_within.empty())) {
      std::fprintf(stderr, "error: --all cannot be combined with --older-than or --expiring-within\n");
      return 2;
    }
    if (!older_than.empty() && !expiring_within.empty()) {
      std::fprintf(stderr, "error: choose one of --older-than and --expiring-within\n");
      return 2;
    }
    if (!older_than.empty()) ar.drain.selection = {SelectionKind::kOlderThan, *ParseDuration(older_than)};
    if (!expiring_within.empty()) ar.drain.selection = {SelectionKind::kExpiringWithin, *ParseDuration(expiring_within)};
    if (batch_max_messages) ar.drain.batch.max_messages = batch_max_messages;
    if (batch_max_bytes) ar.drain.batch.max_bytes = batch_max_bytes;
    if (!batch_max_age.empty()) ar.drain.batch.max_age = *ParseDuration(batch_max_age);
    if (gzip_level > 0) ar.drain.batch.gzip_level = gzip_level;
    ar.drain.visibility_timeout = *ParseDuration(visibility);
    return RunArchiveCommand(ar, svc, g_stop);
  }
  return 2;
}

}  // namespace dlq
