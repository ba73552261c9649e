// The command line in-process (app/cli.h): every command is listed, its help
// lists its exit codes, and an unknown command or flag, a missing value or a
// conflicting pair of flags exits 2 with a message naming it, before any
// work starts.
#include "app/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dlq {
namespace {

struct CliOutput {
  int exit_code = -1;
  std::string out, err;
};

CliOutput RunCliCaptured(const std::vector<std::string>& args) {
  std::vector<std::string> storage = {"dlq-archive"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  CliOutput r;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  r.exit_code = RunCli(static_cast<int>(storage.size()), argv.data());
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

// The command names under "Subcommands:" in the top-level help.
std::vector<std::string> ListedCommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help.substr(help.find("Subcommands:\n") + 13));
  for (std::string line; std::getline(in, line) && line.rfind("  ", 0) == 0;) {
    names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

const std::vector<std::string> kCommands = {"doctor", "archive", "run",   "check", "ls",    "search", "show",
                                            "replay", "audit",   "stats", "ddl",   "stack", "lambda"};

TEST(CliTest, HelpListsEveryCommandInOrder) {
  CliOutput r = RunCliCaptured({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> expected = kCommands;
  expected.push_back("help");
  EXPECT_EQ(ListedCommands(r.out), expected) << r.out;
  EXPECT_EQ(RunCliCaptured({"help"}).out, r.out);
}

TEST(CliTest, EveryCommandsHelpShowsItsOptionsAndExitCodes) {
  for (const std::string& cmd : kCommands) {
    CliOutput r = RunCliCaptured({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    EXPECT_NE(r.out.find("Usage: dlq-archive " + cmd + " [OPTIONS]"), std::string::npos) << r.out;
    bool lists_exit_codes =
        r.out.find("Exit codes: 0 ") != std::string::npos || r.out.find("Exit codes:\n  0 ") != std::string::npos;
    EXPECT_TRUE(lists_exit_codes) << cmd << "\n" << r.out;
    EXPECT_EQ(RunCliCaptured({"help", cmd}).out, r.out) << cmd;
  }
}

TEST(CliTest, UnknownCommandExitsTwoNamingItAndSuggestingTheClosest) {
  CliOutput r = RunCliCaptured({"--region", "us-east-1", "archiv", "--to", "file:///tmp/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("error: 'archiv' is not a dlq-archive command (did you mean 'archive'?)\ncommands:\n", 0), 0u)
      << r.err;
  for (const std::string& cmd : kCommands) EXPECT_NE(r.err.find("\n  " + cmd + " "), std::string::npos) << cmd;

  EXPECT_EQ(RunCliCaptured({"help", "bogus"}).exit_code, 2);
  CliOutput none = RunCliCaptured({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.rfind("error: name a command\n", 0), 0u) << none.err;
}

TEST(CliTest, UnknownFlagExitsTwoNamingItForEveryCommand) {
  for (const std::string& cmd : kCommands) {
    std::vector<std::string> args = {cmd};
    if (cmd == "audit") args.push_back("ls");
    // A word no flag is near (`--bogus` is two edits from stats' `--logs`, which the suggestion names).
    args.push_back("--nonexistent-flag");
    CliOutput r = RunCliCaptured(args);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.err,
              "error: " + cmd + ": unknown option --nonexistent-flag\nrun 'dlq-archive help " + cmd + "' for usage\n");
  }
  CliOutput global = RunCliCaptured({"--bogus"});
  EXPECT_EQ(global.exit_code, 2);
  EXPECT_EQ(global.err, "error: unknown option --bogus\n");
  CliOutput typo = RunCliCaptured({"doctor", "--queu", "q"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown option --queu (did you mean --queue?)"), std::string::npos) << typo.err;
}

TEST(CliTest, MissingValuesAndConflictingFlagsExitTwoBeforeAnyWork) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"archive", "--to"}, "error: archive: --to: 1 required TEXT missing\n"},
      {{"archive", "--queue", "q"}, "error: archive: --to is required (s3://BUCKET/PREFIX or file:///DIR)\n"},
      {{"archive", "--queue", "q", "--to", "file:///tmp/x", "--all", "--older-than", "2d"},
       "error: archive: --all cannot be combined with --older-than or --expiring-within\n"},
      {{"archive", "--queue", "q", "--to", "file:///tmp/x", "--older-than", "2d", "--expiring-within", "1d"},
       "error: archive: choose one of --older-than and --expiring-within\n"},
      {{"archive", "--queue", "q", "--to", "file:///tmp/x", "--any-queue"},
       "error: archive: --any-queue applies to --queue-prefix\n"},
      {{"run"}, "error: run: --config is required\n"},
      {{"run", "--config", "x.yaml", "--shard", "3/2"}, "error: run: --shard: "},
      {{"check"}, "error: check: --config is required\n"},
      {{"stack", "--config", "x.yaml"}, "error: stack: --lambda-code is required"},
      {{"ddl"}, "error: ddl: --from is required (s3://BUCKET/PREFIX)\n"},
      {{"ls"}, "error: ls: --from is required (s3://BUCKET/PREFIX or file:///DIR)\n"},
      {{"search", "--from", "notaurl"}, "error: search: --from: "},
      {{"show", "--from", "file:///tmp/x"}, "error: show: name a MESSAGE_ID or a --fingerprint ID\n"},
      {{"show", "m", "--from", "file:///tmp/x", "--raw", "--output", "json"}, "error: show: --output excludes --raw"},
      {{"stats", "--from", "file:///tmp/x"}, "error: stats: --group-by is required"},
      {{"audit", "show", "--from", "file:///tmp/x"}, "error: audit: name an audit record ID"},
      {{"audit"}, "error: audit: A subcommand is required\n"},
  };
  for (const Case& c : cases) {
    CliOutput r = RunCliCaptured(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.front() << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(c.message, 0), 0u) << r.err;
  }
}

TEST(CliTest, ShowTakesTheWordAfterAQueueAsTheMessageIdNotAsASecondQueue) {
  const auto dir = std::filesystem::temp_directory_path() / ("cli_show_queue_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CliOutput r = RunCliCaptured({"show", "--from", "file://" + dir.string(), "--queue", "orders-dlq", "m-1"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("m-1 is not in"), std::string::npos) << r.err;
}

TEST(CliTest, CheckPrintsEachConfigProblemOnALineOfItsOwn) {
  const auto path = std::filesystem::temp_directory_path() / ("cli_check_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream f(path);
    f << "bogus_one: 1\nbogus_two: 2\n";
  }
  CliOutput r = RunCliCaptured({"check", "--config", path.string()});
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: " + path.string() + ":1:1: unknown field 'bogus_one'\n", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("\n" + path.string() + ":2:1: unknown field 'bogus_two'\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\\n"), std::string::npos) << r.err;
}

TEST(CliTest, DoctorReportsAUsageErrorAsJsonWhenAskedForJson) {
  CliOutput r = RunCliCaptured({"doctor", "--output", "json", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "{\"ok\":false,\"error\":{\"code\":\"InvalidArgument\",\"exit_code\":2,\"message\":\"doctor: unknown "
            "option --bogus\"}}\n");
  // Other commands' --output json does not change how usage errors look.
  CliOutput check = RunCliCaptured({"check", "--output", "json"});
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_EQ(check.out, "");
}

}  // namespace
}  // namespace dlq
