#include "app/stack_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "app/command.h"
#include "app/flag_validators.h"
#include "app/run_command.h"
#include "common/time_util.h"
#include "monitor/discovery.h"
#include "s3/object_store.h"

namespace dlq {

namespace {

// The stack either creates the destination bucket (--create-bucket) or uses
// one that exists. A mismatch deploys a function whose every archive run
// fails, or a stack whose creation fails: say so before anyone deploys it.
void CheckBucket(const GroupConfig& g, ObjectStore& store, bool create_bucket, std::string& err) {
  auto check = store.CheckWritable();
  if (check.ok() && !check->confirmed) return;  // HeadBucket denied: nothing to tell
  if (!check.ok() && check.status().code() != ErrorCode::kNotFound) {
    err += fmt::format("warning: group {}: the destination {} could not be checked: {}\n", g.name, g.destination,
                       check.status().ToString());
  } else if (!check.ok() && !create_bucket) {
    err += fmt::format(
        "warning: group {}: {}; the stack uses an existing bucket, so every archive run would fail: deploy with "
        "--create-bucket, or create the bucket first\n",
        g.name, check.status().message());
  } else if (check.ok() && create_bucket) {
    err += fmt::format(
        "warning: group {}: the destination {} already exists, and --create-bucket makes the stack create it: "
        "CloudFormation will fail with 'already exists'; leave --create-bucket out to use it\n",
        g.name, g.destination);
  }
}

// What an unset variable reads as while `stack` loads the config: valid for
// the settings the stack ignores (a URL, a token), and recognisable after.
constexpr std::string_view kUnsetMark = "https://unset.invalid/";

class StackEnvironment final : public Environment {
 public:
  explicit StackEnvironment(const Environment& base) : base_(base) {}
  std::optional<std::string> GetEnv(std::string_view name) const override {
    if (auto v = base_.GetEnv(name)) return v;
    return std::string(kUnsetMark) + std::string(name);
  }

 private:
  const Environment& base_;
};

// The settings of one group the stack reads, by field name.
std::vector<std::pair<std::string, std::string>> UsedSettings(const GroupConfig& g) {
  std::vector<std::pair<std::string, std::string>> out = {{"name", g.name},
                                                          {"destination", g.destination},
                                                          {"key_template", g.key_template_text},
                                                          {"sse_kms_key_id", g.put.sse_kms_key_id},
                                                          {"storage_class", g.put.storage_class},
                                                          {"region", g.region},
                                                          {"endpoint_url", g.endpoint_url},
                                                          {"profile", g.profile},
                                                          {"role_arn", g.role_arn},
                                                          {"external_id", g.external_id},
                                                          {"regex", g.regex}};
  for (const auto& [field, list] :
       {std::pair{"queues", &g.queues}, {"prefixes", &g.prefixes}, {"exclude", &g.exclude}}) {
    for (const std::string& v : *list) out.emplace_back(field, v);
  }
  return out;
}

}  // namespace

Result<MonitorConfig> LoadStackConfig(const std::string& path, const Environment& env) {
  StackEnvironment lenient(env);
  auto config = LoadMonitorConfig(path, lenient);
  // A placeholder may fail a check a real value would pass: report as without it.
  if (!config.ok()) return LoadMonitorConfig(path, env);
  for (const GroupConfig& g : config->groups) {
    for (const auto& [field, value] : UsedSettings(g)) {
      size_t at = value.find(kUnsetMark);
      if (at == std::string::npos) continue;
      std::string_view rest = std::string_view(value).substr(at + kUnsetMark.size());
      size_t end = 0;
      while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
      return InvalidArgument(fmt::format("{}: environment variable {} is not set (group {}'s {} uses it)", path,
                                         rest.substr(0, end), g.name, field));
    }
  }
  return config;
}

int RunStack(const StackCommandOptions& options, const MonitorConfig& config, const GroupClientsFactory& factory,
             std::string& out, std::string& err) {
  if (options.output != "yaml" && options.output != "json") {
    err += fmt::format("error: --output '{}': expected yaml or json\n", options.output);
    return 2;
  }
  for (const std::string& name : options.groups) {
    if (std::none_of(config.groups.begin(), config.groups.end(),
                     [&](const GroupConfig& g) { return g.name == name; })) {
      err += fmt::format("error: --group {}: the config has no such group\n", name);
      return 2;
    }
  }
  auto retention = ParseDuration(options.assumed_retention);
  auto source_retention = options.assumed_source_retention.empty()
                              ? std::optional<std::chrono::seconds>(std::chrono::seconds(0))
                              : ParseDuration(options.assumed_source_retention);
  if (!retention || retention->count() <= 0 || !source_retention) {
    err += "error: --assume-retention and --assume-source-retention take durations such as 4d or 14d\n";
    return 2;
  }
  std::vector<StackQueue> queues;
  for (const GroupConfig& g : config.groups) {
    if (!options.groups.empty() &&
        std::find(options.groups.begin(), options.groups.end(), g.name) == options.groups.end()) {
      continue;
    }
    if (options.no_discovery) {
      if (!g.prefixes.empty() || !g.regex.empty() || g.discover) {
        err += fmt::format(
            "warning: group {}: prefixes, regex and discover are not evaluated with --no-discovery; only the queues "
            "it names are in the stack\n",
            g.name);
      }
      auto configured = StackQueuesFromConfig(g, *retention, *source_retention);
      if (!configured.ok()) {
        err += fmt::format("error: {}\n", configured.status().message());
        return 2;
      }
      queues.insert(queues.end(), configured->begin(), configured->end());
      continue;
    }
    auto clients = factory(g);
    if (!clients.ok()) {
      err += fmt::format("error: group {}: {}\n", g.name, clients.status().ToString());
      return 1;
    }
    auto found = DiscoverQueues(*clients->sqs, g);
    if (!found.ok()) {
      err += fmt::format("error: group {}: discovery failed: {} (--no-discovery uses only the named queues)\n", g.name,
                         found.status().ToString());
      return 1;
    }
    for (const DiscoveredQueue& q : *found) queues.push_back(StackQueueFromDiscovery(g, q));
    if (clients->store != nullptr) CheckBucket(g, *clients->store, options.stack.create_bucket, err);
  }
  auto stack = GenerateStack(config, queues, options.stack);
  if (!stack.ok()) {
    err += fmt::format("error: stack: {}\n", stack.status().message());
    return 2;
  }
  for (const std::string& w : stack->warnings) err += fmt::format("warning: {}\n", w);
  out = options.output == "json" ? ToJson(stack->tmpl) : ToYaml(stack->tmpl);
  return 0;
}

int RunStackCommand(const StackCommandOptions& options) {
  auto config = LoadStackConfig(options.config_path, DefaultEnvironment());
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
    return 2;
  }
  std::string out, err;
  int code = RunStack(options, *config, MakeAwsGroupClientsFactory(options.services, nullptr), out, err);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return code;
}

namespace {

struct StackFlags {
  StackCommandOptions options;
  bool no_vpc_endpoints = false;
  bool no_athena = false;
};

int RunStackFlags(const StackFlags& f, const CommandContext& ctx) {
  StackCommandOptions o = f.options;
  if (o.config_path.empty()) return ctx.usage.Fail("--config is required");
  if (o.stack.lambda_code.empty()) {
    return ctx.usage.Fail("--lambda-code is required (s3://BUCKET/KEY of the zip built by scripts/package-lambda)");
  }
  o.stack.vpc_endpoints = !f.no_vpc_endpoints;
  o.stack.athena = !f.no_athena;
  o.services = ctx.global.Services();
  return RunStackCommand(o);
}

Runner AddStackFlags(CLI::App& cmd) {
  auto f = std::make_shared<StackFlags>();
  StackCommandOptions& st = f->options;
  cmd.add_option("--config", st.config_path, "YAML config (doc/configuration.md) (required)");
  cmd.add_option("--lambda-code", st.stack.lambda_code, "s3://BUCKET/KEY of the package-lambda zip (required)");
  cmd.add_option("--group", st.groups, "only this config group (repeatable; default: every group)");
  cmd.add_flag("--no-discovery", st.no_discovery,
               "no AWS call: only the queues the config names, with assumed retention periods");
  cmd.add_option("--assume-retention", st.assumed_retention, "with --no-discovery: each DLQ's retention")
      ->capture_default_str()
      ->check(DurationValidator());
  cmd.add_option("--assume-source-retention", st.assumed_source_retention,
                 "with --no-discovery: the source queues' retention (default: unknown)")
      ->check(DurationValidator());
  cmd.add_option("--function-name", st.stack.function_name, "Lambda function name, prefix of alarm names")
      ->capture_default_str();
  cmd.add_option("--architecture", st.stack.architecture, "x86_64 or arm64 (the zip's)")
      ->capture_default_str()
      ->check(CLI::IsMember({"x86_64", "arm64"}));
  cmd.add_option("--timeout", st.stack.timeout_s, "function timeout, seconds")
      ->capture_default_str()
      ->check(IntegerValidator(30, 900));
  cmd.add_option("--memory", st.stack.memory_mb, "function memory, MB")
      ->capture_default_str()
      ->check(IntegerValidator(128, 10240));
  cmd.add_option("--reserved-concurrency", st.stack.reserved_concurrency, "reserved concurrent executions")
      ->capture_default_str()
      ->check(IntegerValidator(1, 1000));
  cmd.add_option("--schedule", st.stack.schedule,
                 "sweep schedule, e.g. 'rate(15 minutes)' (default: the config's sweep_interval)");
  cmd.add_option("--policy", st.stack.policy,
                 "what every invocation archives: auto (the default: what the daemon archives, the messages nearing "
                 "expiry), all, older_than:D, expiring_within:D")
      ->capture_default_str();
  cmd.add_option("--log-retention-days", st.stack.log_retention_days, "function log retention")->capture_default_str();
  cmd.add_flag("--create-bucket", st.stack.create_bucket,
               "create the destination bucket (encrypted, private, TLS only, lifecycle); default: it exists");
  cmd.add_option("--transition-storage-class", st.stack.transition_storage_class,
                 "lifecycle target: GLACIER_IR, GLACIER or DEEP_ARCHIVE")
      ->capture_default_str()
      ->check(CLI::IsMember({"GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"}));
  cmd.add_option("--transition-days", st.stack.transition_days, "days before the transition (0: none)")
      ->capture_default_str()
      ->check(IntegerValidator(0, 36500));
  cmd.add_option("--expiration-days", st.stack.expiration_days, "days before archives are deleted (0: never)")
      ->capture_default_str()
      ->check(IntegerValidator(0, 36500));
  cmd.add_option("--abort-multipart-days", st.stack.abort_multipart_days, "abort incomplete uploads after")
      ->capture_default_str()
      ->check(IntegerValidator(1, 36500));
  cmd.add_option("--vpc-subnets", st.stack.vpc_subnets, "run the function in these subnets (comma-separated)")
      ->delimiter(',');
  cmd.add_option("--vpc-security-groups", st.stack.vpc_security_groups, "its security groups (comma-separated)")
      ->delimiter(',');
  cmd.add_option("--vpc-id", st.stack.vpc_id, "the subnets' VPC (for the endpoints)");
  cmd.add_option("--vpc-route-tables", st.stack.vpc_route_tables, "route tables for the S3 gateway endpoint")
      ->delimiter(',');
  cmd.add_flag("--no-vpc-endpoints", f->no_vpc_endpoints, "the VPC already has S3, SQS, Lambda (and STS) endpoints");
  cmd.add_flag("--no-athena", f->no_athena, "no Glue database and table");
  cmd.add_flag("--replay-policy", st.stack.replay_policy,
               "add an IAM managed policy for the people who replay (the archive, these DLQs, and the queues, "
               "functions, topics and buses of the account and region), output ReplayPolicyArn");
  cmd.add_option("--athena-database", st.stack.athena_database, "Glue database")->capture_default_str();
  cmd.add_option("--athena-table", st.stack.athena_table, "Glue table")->capture_default_str();
  cmd.add_option("--first-day", st.stack.first_day, "YYYY-MM-DD: first day of the date projection")
      ->capture_default_str();
  cmd.add_option("--output", st.output, "yaml or json")->capture_default_str()->check(CLI::IsMember({"yaml", "json"}));
  return [f](const CommandContext& ctx) { return RunStackFlags(*f, ctx); };
}

}  // namespace

Command StackCommand() {
  return {"stack", "print a CloudFormation template that runs the archiver on AWS Lambda",
          "Exit codes: 0 printed (warnings such as unsafe queues on stderr); 1 discovery failed; 2 bad config or "
          "options. See doc/deployment.md.",
          AddStackFlags};
}

}  // namespace dlq
