#include "app/ddl_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/command.h"
#include "common/strings.h"

namespace dlq {

int RunDdl(const DdlCommandOptions& options, std::string& out, std::string& err) {
  AthenaDdlOptions ddl_options = options.ddl;
  if (options.layout == "hive") {
    ddl_options.layout = ArchiveLayout::kHive;
  } else if (options.layout == "default") {
    ddl_options.layout = ArchiveLayout::kDefault;
  } else {
    err = fmt::format("error: --layout '{}': expected default or hive\n", options.layout);
    return 2;
  }
  ddl_options.queues.clear();
  if (!options.queues.empty()) {
    for (std::string_view q : Split(options.queues, ',')) ddl_options.queues.emplace_back(Trim(q));
  }
  auto ddl = GenerateAthenaDdl(ddl_options);
  if (!ddl.ok()) {
    err = fmt::format("error: ddl: {}\n", ddl.status().message());
    return 2;
  }
  out = ddl->create_table + "\n" + ddl->create_view;
  return 0;
}

int RunDdlCommand(const DdlCommandOptions& options) {
  std::string out, err;
  int code = RunDdl(options, out, err);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return code;
}

namespace {

Runner AddDdlFlags(CLI::App& cmd) {
  auto o = std::make_shared<DdlCommandOptions>();
  cmd.add_option("--from", o->ddl.from, "s3://BUCKET/PREFIX, as given to archive --to (required)");
  cmd.add_option("--layout", o->layout, "key layout the archive was written with: default or hive")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "hive"}));
  cmd.add_option("--database", o->ddl.database, "Athena database")->capture_default_str();
  cmd.add_option("--table", o->ddl.table, "table name; the view is TABLE_dedup")->capture_default_str();
  cmd.add_option("--queues", o->queues, "comma-separated queues: enum projection (default: injected)");
  cmd.add_option("--first-day", o->ddl.first_day, "YYYY-MM-DD: first day of the date projection")
      ->capture_default_str();
  return [o](const CommandContext& ctx) {
    if (o->ddl.from.empty()) return ctx.usage.Fail("--from is required (s3://BUCKET/PREFIX)");
    return RunDdlCommand(*o);
  };
}

}  // namespace

Command DdlCommand() {
  return {"ddl", "print Athena DDL (table with partition projection, de-duplicating view)",
          "Exit codes: 0 printed; 2 usage error (e.g. a file:// archive: Athena reads only S3)", AddDdlFlags};
}

}  // namespace dlq
