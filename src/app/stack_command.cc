#include "app/stack_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

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

}  // namespace dlq
