#include "app/ddl_command.h"

#include <fmt/format.h>

#include <cstdio>

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

}  // namespace dlq
