// A dlq-archive command as the command line (app/cli.h) sees it: a name, a
// one-line summary, the exit codes its help lists, and a function that adds
// the command's flags to its CLI11 subcommand and returns the runner that
// reads them once parsing is done. Each command's file defines its entry
// (ArchiveCommand() in archive_command.h, ...); cli.cc lists them in order.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "app/services.h"
#include "archive/destination.h"
#include "common/file_util.h"
#include "common/status.h"
#include "s3/object_store.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace dlq {

// The flags every command accepts (before or after the command word).
struct GlobalOptions {
  std::string region, profile, endpoint_url;
  std::string log_level = "info";
  std::string log_format = "text";
  bool log_level_given = false;   // --log-level was on the command line
  bool log_format_given = false;  // --log-format was on the command line
  double connect_timeout_s = 5;
  double read_timeout_s = 70;
  int max_attempts = 6;

  ServicesOptions Services() const;
};

// Reports usage errors: "error: COMMAND: message" and a pointer to the
// command's help on stderr, plus the JSON error document on stdout when the
// command was asked for JSON (doctor --output json).
class UsageReporter {
 public:
  UsageReporter(std::optional<std::string> command, bool json) : command_(std::move(command)), json_(json) {}

  // Prints the error and returns 2, the usage error's exit code.
  int Fail(const std::string& message) const;

 private:
  std::optional<std::string> command_;
  bool json_;
};

// What a runner gets: the parsed global flags, the usage reporter, and the
// flag a signal sets to ask for a graceful stop. Valid while the runner runs.
struct CommandContext {
  const GlobalOptions& global;
  const UsageReporter& usage;
  std::atomic<bool>& stop;
};

// Runs the command whose flags were parsed; returns the exit code (cli.h).
using Runner = std::function<int(const CommandContext&)>;

struct Command {
  std::string name;
  std::string summary;     // one line, in the command list
  std::string exit_codes;  // the footer of the command's help
  // Adds the command's flags (and subcommands) to `cmd`, which it may keep
  // for the runner; called once, before parsing. The runner owns the values
  // the flags write.
  std::function<Runner(CLI::App& cmd)> add_flags;
  // With --output json even a usage error is reported as a JSON document.
  bool json_usage_errors = false;
};

// Builds the AWS services for a command. A bad DLQ_HTTP_CLIENT or an unknown
// region given with --region is a usage error (2); other failures are 1. On
// failure prints the error and returns its exit code, else runs `run`.
int WithServices(const CommandContext& ctx, const std::function<int(AwsServices&)>& run);

// Opens the archive `from_uri` names (S3 through the AWS services, or a local
// directory) and runs `run` on it. A missing or malformed URL is a usage
// error; a store that cannot be opened is 1.
int WithArchive(const CommandContext& ctx, const std::string& from_uri,
                const std::function<int(ObjectStore&, const Destination&)>& run);

// As WithArchive, with the AWS services built whatever the archive's scheme
// (commands that call AWS beside reading the archive: `stats --causes`).
int WithArchiveAndServices(const CommandContext& ctx, const std::string& from_uri,
                           const std::function<int(ObjectStore&, const Destination&, AwsServices&)>& run);

// The permission bits of local files (DLQ_FILE_MODE). On a bad value prints
// the error and returns nullopt: the command exits with 2 (usage).
std::optional<FileModes> FileModesOrReport();

}  // namespace dlq
