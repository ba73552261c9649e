#include "app/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/archive_command.h"
#include "app/audit_command.h"
#include "app/check_command.h"
#include "app/command.h"
#include "app/ddl_command.h"
#include "app/doctor_command.h"
#include "app/flag_validators.h"
#include "app/lambda_command.h"
#include "app/ls_command.h"
#include "app/replay_command.h"
#include "app/run_command.h"
#include "app/search_command.h"
#include "app/show_command.h"
#include "app/stack_command.h"
#include "app/stats_command.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/text.h"

namespace dlq {
namespace {

constexpr int kExitUsage = 2;

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

// `lambda` has no flags. Its entry is here rather than in lambda_command.cc,
// which dlq-archive-lambda links without the rest of the command line.
Command LambdaCommand() {
  return {"lambda", "AWS Lambda custom runtime (configured by environment variables)",
          "Configuration: see doc/lambda.md (AWS_LAMBDA_RUNTIME_API, DLQ_ARCHIVE_DESTINATION, DLQ_ARCHIVE_QUEUES, "
          "...)\nExit codes: 0 the Runtime API went away; 1 the Runtime API failed; 2 bad configuration (also "
          "reported to the Runtime API as an init error)",
          [](CLI::App&) -> Runner {
            return [](const CommandContext& ctx) { return RunLambdaCommand(ctx.global.Services(), ctx.stop); };
          }};
}

// Every command, in the order the help lists them.
std::vector<Command> Commands() {
  return {DoctorCommand(), ArchiveCommand(), RunCommand(),    CheckCommand(), LsCommand(),
          SearchCommand(), ShowCommand(),    ReplayCommand(), AuditCommand(), StatsCommand(),
          DdlCommand(),    StackCommand(),   LambdaCommand()};
}

void AddGlobalFlags(CLI::App& app, GlobalOptions& g) {
  app.add_option("--region", g.region,
                 "AWS region (else AWS_REGION, AWS_DEFAULT_REGION, profile); must be a known AWS region unless "
                 "--endpoint-url is set or DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1");
  app.add_option("--profile", g.profile, "profile in ~/.aws/config and ~/.aws/credentials (else AWS_PROFILE)");
  app.add_option("--endpoint-url", g.endpoint_url,
                 "endpoint for every service (else AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL)");
  app.add_option("--log-level", g.log_level, "debug, info, warn, error, off (wins over a config file's log.level)")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
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
}

void SetUpLogging(const GlobalOptions& g) {
  LogLevel level = LogLevel::kInfo;
  (void)ParseLogLevel(g.log_level, level);  // validated by the parser
  SetLogger(
      std::make_unique<StreamLogger>(stderr, g.log_format == "json" ? LogFormat::kJson : LogFormat::kText, level));
}

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

// True when the command reports usage errors as JSON (Command::json_usage_errors)
// and the arguments ask for --output json.
bool WantsJsonErrors(const std::vector<Command>& commands, const std::optional<std::string>& command, int argc,
                     char** argv) {
  auto entry = std::find_if(commands.begin(), commands.end(), [&](const Command& c) { return c.name == command; });
  if (entry == commands.end() || !entry->json_usage_errors) return false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--output=json" || (a == "--output" && i + 1 < argc && std::string_view(argv[i + 1]) == "json")) {
      return true;
    }
  }
  return false;
}

// "error: 'WORD' is not a dlq-archive command" with a suggestion and the list.
int NotACommand(const CLI::App& app, const std::string& word) {
  std::string msg = fmt::format("'{}' is not a dlq-archive command", word);
  if (std::string best = ClosestMatch(word, CommandNames(app)); !best.empty()) {
    msg += fmt::format(" (did you mean '{}'?)", best);
  }
  std::fprintf(stderr, "error: %s\n%s", TerminalSafe(msg).c_str(), CommandList(app).c_str());
  return kExitUsage;
}

// The command line: the global flags, every command's flags and runner, and
// `help [COMMAND]`.
struct CommandLine {
  CLI::App app{"dlq-archive: archive SQS dead-letter queues to S3 before messages expire, with no loss", "dlq-archive"};
  GlobalOptions global;
  std::vector<Command> commands = Commands();
  std::vector<std::pair<const CLI::App*, Runner>> runners;
  CLI::App* help = nullptr;
  std::string help_topic;

  CommandLine() {
    app.set_version_flag("--version", std::string(DLQ_VERSION));
    app.require_subcommand(0, 1);
    app.fallthrough();
    AddGlobalFlags(app, global);
    for (const Command& c : commands) {
      CLI::App* sub = app.add_subcommand(c.name, c.summary);
      runners.emplace_back(sub, c.add_flags(*sub));
      if (!c.exit_codes.empty()) sub->footer(c.exit_codes);
    }
    help = app.add_subcommand("help", "show the options of a command");
    help->add_option("command", help_topic, "a command");
  }

  // `help` or `help COMMAND`: the help text on stdout (0), or 2 for an unknown COMMAND.
  int PrintHelp() const {
    if (help_topic.empty()) {
      // Not app.help(): with `help` selected it would describe `help`.
      std::fputs(app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal).c_str(), stdout);
      return 0;
    }
    const CLI::App* topic = FindCommand(app, help_topic);
    if (topic == nullptr || topic == help) return NotACommand(app, help_topic);
    std::fputs(topic->help(app.get_name()).c_str(), stdout);
    return 0;
  }

  // The runner of the command the parsed arguments selected, if any.
  const Runner* Selected() const {
    for (const auto& [sub, runner] : runners) {
      if (sub->parsed()) return &runner;
    }
    return nullptr;
  }
};

}  // namespace

int RunCli(int argc, char** argv) {
  CommandLine cli;
  const CLI::App& app = cli.app;
  // Name an unknown command before CLI11 reads it as a stray argument.
  std::optional<std::string> command = CommandWord(app, argc, argv);
  if (command && FindCommand(app, *command) == nullptr) return NotACommand(app, *command);
  UsageReporter usage(command, WantsJsonErrors(cli.commands, command, argc, argv));

  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = command ? FindCommand(app, *command) : nullptr;
    return usage.Fail(DescribeParseError(e, app, sub));
  }

  if (cli.help->parsed()) return cli.PrintHelp();
  const Runner* runner = cli.Selected();
  if (runner == nullptr) {
    std::fprintf(stderr, "error: name a command\n%s", CommandList(app).c_str());
    return kExitUsage;
  }
  cli.global.log_level_given = app.get_option("--log-level")->count() > 0;
  cli.global.log_format_given = app.get_option("--log-format")->count() > 0;
  SetUpLogging(cli.global);
  InstallSignalHandlers();
  return (*runner)(CommandContext{cli.global, usage, g_stop});
}

}  // namespace dlq
