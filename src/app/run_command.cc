#include "app/run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "app/command.h"
#include "app/dashboard_replay.h"
#include "app/flag_validators.h"
#include "aws/http_client_choice.h"
#include "common/log.h"
#include "dashboard/dashboard.h"
#include "monitor/daemon.h"
#include "monitor/notifier.h"
#include "monitor/shard.h"
#include "server/host_policy.h"
#include "server/metrics.h"

namespace dlq {
namespace {

std::atomic<bool> g_reload{false};

extern "C" void OnHangup(int) {
  g_reload = true;
}

// The process environment with AWS_ENDPOINT_URL_SQS set to a group's endpoint.
class SqsEndpointEnvironment final : public Environment {
 public:
  SqsEndpointEnvironment(const Environment& base, std::string endpoint) : base_(base), endpoint_(std::move(endpoint)) {}
  std::optional<std::string> GetEnv(std::string_view name) const override {
    if (!endpoint_.empty() && name == "AWS_ENDPOINT_URL_SQS") return endpoint_;
    return base_.GetEnv(name);
  }

 private:
  const Environment& base_;
  std::string endpoint_;
};

struct GroupResources {
  std::unique_ptr<SqsEndpointEnvironment> env;
  std::unique_ptr<AwsServices> services;
  std::unique_ptr<ObjectStore> store;
};

}  // namespace

GroupClientsFactory MakeAwsGroupClientsFactory(const ServicesOptions& base, DaemonMetrics* metrics,
                                               const FileModes& modes) {
  return [base, metrics, modes](const GroupConfig& g) -> Result<GroupClients> {
    auto res = std::make_shared<GroupResources>();
    res->env = std::make_unique<SqsEndpointEnvironment>(DefaultEnvironment(), g.endpoint_url);
    ServicesOptions o = base;
    if (!g.region.empty()) o.client.region = g.region;
    if (!g.profile.empty()) o.client.profile = g.profile;
    o.role_arn = g.role_arn;
    o.external_id = g.external_id;
    auto services = AwsServices::Create(o, *res->env, DefaultClock());
    if (!services.ok()) return services.status().WithContext("group " + g.name);
    res->services = std::move(*services);
    if (metrics != nullptr) res->services->SetObserver(MakeAwsCallObserver(*metrics));
    auto dest = ParseDestination(g.destination);
    if (!dest.ok()) return dest.status().WithContext("group " + g.name);
    auto store = OpenStore(*dest, res->services.get(), modes);
    if (!store.ok()) return store.status().WithContext(fmt::format("group {}: destination {}", g.name, g.destination));
    res->store = std::move(*store);
    GroupClients c;
    c.sqs = &res->services->sqs();
    c.store = res->store.get();
    c.cloudwatch = g.cloudwatch_age ? &res->services->cloudwatch() : nullptr;
    if (g.causes != GroupConfig::Causes::kOff) c.logs = &res->services->logs();
    c.lambda = &res->services->lambda();  // the cause lookups (with logs) and the replay to origin
    c.sns = &res->services->sns();
    c.events = &res->services->events();
    c.http = &res->services->transport();
    c.default_region = res->services->settings().region;
    c.destination_uri = g.destination;
    c.keepalive = res;
    return c;
  };
}

namespace {

void SetUpLogging(const RunCommandOptions& options, const MonitorConfig& config) {
  LogLevel level = config.log_level;
  LogFormat format = config.log_format;
  if (options.log_level) (void)ParseLogLevel(*options.log_level, level);  // validated by the CLI
  if (options.log_format) format = *options.log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  SetLogger(std::make_unique<StreamLogger>(stderr, format, level));
}

// SIGHUP asks the daemon to reload its configuration.
void CatchHangup() {
  struct sigaction sa {};
  sa.sa_handler = OnHangup;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGHUP, &sa, nullptr);
}

// The dashboard keeps the token of the configuration it started with; a
// reload (SIGHUP) does not change it.
DashboardOptions DashboardOptionsFor(const MonitorConfig& config, metrics::Registry& registry) {
  DashboardOptions dash;
  dash.registry = &registry;
  dash.write_token = config.dashboard_write_token;
  dash.read_token = config.dashboard_read_token;
  dash.replay = MakeDashboardReplay(DefaultClock());
  dash.poll_interval = config.collection_interval;
  dash.scan_deadline = config.dashboard_scan_deadline;
  dash.request_memory = static_cast<size_t>(config.dashboard_request_memory);
  dash.max_concurrent_scans = config.dashboard_max_scans;
  if (!config.dashboard_fingerprint_fields.empty()) dash.fingerprint.fields = config.dashboard_fingerprint_fields;
  return dash;
}

void LogDashboardAccess(const MonitorConfig& config) {
  Log().Log(LogLevel::kInfo, "dashboard",
            {{"actions", config.dashboard_write_token.empty() ? "disabled (no dashboard.write_token)" : "enabled"},
             {"message_content",
              config.dashboard_read_token.empty() ? "open (no dashboard.read_token)" : "needs the read token"}});
  if (!IsLoopbackHost(config.listen_host) && config.dashboard_read_token.empty()) {
    Log().Log(LogLevel::kWarn, "dashboard_unprotected",
              {{"listen", HostForUrl(config.listen_host) + ":" + std::to_string(config.listen_port)},
               {"message",
                "WARNING: the listener is not on loopback and dashboard.read_token is not set: anyone who "
                "can reach it can read every archived message (search, message detail); set "
                "dashboard.read_token, or listen on 127.0.0.1"}});
  }
}

}  // namespace

int RunRunCommand(const RunCommandOptions& options, std::atomic<bool>& stop) {
  auto load = [&]() -> Result<MonitorConfig> {
    DLQ_ASSIGN_OR_RETURN(MonitorConfig c, LoadMonitorConfig(options.config_path, DefaultEnvironment()));
    if (options.listen_port >= 0) c.listen_port = options.listen_port;
    if (options.shard) c.shard = *options.shard;
    return c;
  };
  if (auto client = ChooseHttpClient(DefaultEnvironment()); !client.ok()) {
    std::fprintf(stderr, "error: %s\n", client.status().message().c_str());
    return 2;
  }
  auto config = load();
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
    return 2;
  }
  SetUpLogging(options, *config);
  CatchHangup();

  metrics::Registry registry;
  DaemonMetrics metrics(registry, DLQ_VERSION);
  // Webhooks go over their own transport (no AWS signing).
  auto webhook_services = AwsServices::Create(options.services, DefaultEnvironment(), DefaultClock());
  if (!webhook_services.ok()) {
    std::fprintf(stderr, "error: %s\n", webhook_services.status().ToString().c_str());
    return 1;
  }
  // A queue and a worker per webhook; the daemon's Reload (SIGHUP) swaps the
  // set. Destroyed after the daemon: drains within its bound.
  WebhookSet webhooks((*webhook_services)->transport(), DefaultClock(), &metrics);
  if (Status applied = webhooks.Apply(config->webhooks); !applied.ok()) {
    std::fprintf(stderr, "error: %s\n", applied.ToString().c_str());
    return 2;
  }

  DaemonOptions dopts;
  dopts.host = LocalHostName();
  dopts.apply_webhooks = [&webhooks](const std::vector<WebhookConfig>& w) { return webhooks.Apply(w); };
  Log().Log(LogLevel::kInfo, "starting",
            {{"config", options.config_path},
             {"groups", static_cast<int64_t>(config->groups.size())},
             {"shard", FormatShardSpec(config->shard)},
             {"version", DLQ_VERSION}});
  Daemon daemon(*config, MakeAwsGroupClientsFactory(options.services, &metrics, options.file_modes), webhooks,
                DefaultClock(), registry, metrics, dopts);
  Dashboard dashboard(daemon, DefaultClock(), DashboardOptionsFor(*config, registry));
  daemon.SetExtraRoutes([&dashboard](HttpServer& server) { dashboard.Register(server); });
  LogDashboardAccess(*config);
  Status st = daemon.Run(stop, g_reload, load);
  if (!st.ok()) {
    Log().Log(LogLevel::kError, "run_failed", {{"error", st.ToString()}});
    std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
    return 1;
  }
  Log().Log(LogLevel::kInfo, "stopped", {});
  return 0;
}

namespace {

struct RunFlags {
  RunCommandOptions options;
  std::string shard;
};

int RunRunFlags(const RunFlags& f, const CommandContext& ctx) {
  RunCommandOptions o = f.options;
  if (o.config_path.empty()) return ctx.usage.Fail("--config is required");
  if (!f.shard.empty()) {
    auto shard = ParseShardSpec(f.shard);
    if (!shard.ok()) return ctx.usage.Fail("--shard: " + shard.status().message());
    o.shard = *shard;
  }
  std::optional<FileModes> modes = FileModesOrReport();
  if (!modes) return 2;
  o.file_modes = *modes;
  o.services = ctx.global.Services();
  // Flags given on the command line win over the config file's log section.
  if (ctx.global.log_level_given) o.log_level = ctx.global.log_level;
  if (ctx.global.log_format_given) o.log_format = ctx.global.log_format;
  return RunRunCommand(o, ctx.stop);
}

Runner AddRunFlags(CLI::App& cmd) {
  auto f = std::make_shared<RunFlags>();
  cmd.add_option("--config", f->options.config_path, "YAML config (doc/configuration.md) (required)");
  cmd.add_option("--listen-port", f->options.listen_port, "override the config's listen port (0: any free port)")
      ->check(IntegerValidator(0, 65535));
  cmd.add_option("--shard", f->shard,
                 "I/N: this replica is shard I of N and handles only the queues it owns (overrides the config's "
                 "shard)");
  return [f](const CommandContext& ctx) { return RunRunFlags(*f, ctx); };
}

}  // namespace

Command RunCommand() {
  return {"run", "monitor DLQs from a config file: metrics, alarms, archiving (daemon)",
          "Exit codes: 0 stopped by SIGTERM or SIGINT; 1 the daemon failed (e.g. its port cannot be bound); 2 usage "
          "error or a bad config (every problem listed). SIGHUP reloads the config. See doc/operations.md.",
          AddRunFlags};
}

}  // namespace dlq
