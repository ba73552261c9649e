#include "app/cause_flags.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/flag_validators.h"
#include "common/text.h"
#include "common/time_util.h"

namespace dlq {

std::vector<NamedLogGroup> CauseFlags::NamedLogGroups() const {
  std::vector<NamedLogGroup> out;
  for (const std::string& g : logs) out.push_back({g, "--logs"});
  return out;
}

void AddCauseFlags(CLI::App& cmd, CauseFlags& flags) {
  cmd.add_flag("--causes", flags.look_up,
               "look up why the sampled messages of each group failed in their consumers' logs (CloudWatch Logs) "
               "and keep the answers in the archive's _causes/");
  cmd.add_option("--logs", flags.logs,
                 "GROUP: a consumer log group to search besides the Lambda consumers found (repeatable; implies "
                 "--causes)")
      ->allow_extra_args(false);
  cmd.add_option("--cause-samples", flags.samples, "messages looked up per group")
      ->capture_default_str()
      ->check(IntegerValidator(1, 1000));
  cmd.add_option("--cause-max-calls", flags.max_calls, "FilterLogEvents calls at most per run")
      ->capture_default_str()
      ->check(IntegerValidator(1, 100000));
}

Status ValidateCauseFlags(const CauseFlags& flags) {
  if (flags.samples < 1) return InvalidArgument("--cause-samples must be at least 1");
  if (flags.max_calls < 1) return InvalidArgument("--cause-max-calls must be at least 1");
  for (const std::string& g : flags.logs) {
    if (g.empty()) return InvalidArgument("--logs: a log group name is empty");
  }
  return Status::Ok();
}

void PrintCauseText(std::FILE* out, const CauseRecord* record) {
  auto field = [&](std::string_view name, std::string_view value) {
    fmt::print(out, "{:<26} {}\n", name, TerminalSafe(value));
  };
  fmt::print(out, "\ncause:\n");
  if (record == nullptr) {
    field("  status", "not looked up (`stats --causes` looks causes up and keeps them in the archive)");
    return;
  }
  const std::string looked_up = FormatIso8601(record->looked_up_at);
  if (record->status != CauseStatus::kFound || !record->cause) {
    field("  status", fmt::format("none found ({})", CauseStatusName(record->status)));
    field("  why", record->reason);
    if (!record->log_groups.empty())
      field("  log groups searched", fmt::format("{}", fmt::join(record->log_groups, ", ")));
    field("  looked up", looked_up);
    return;
  }
  const Cause& c = *record->cause;
  field("  error", c.type.empty() ? c.message : c.message.empty() ? c.type : c.type + ": " + c.message);
  field("  key", c.key);
  if (c.batch_partial) field("  batch", "this message's own failure within its batch");
  field("  log group", c.log_group);
  field("  log stream", c.log_stream);
  field("  request id", c.request_id.empty() ? "-" : c.request_id);
  field("  logged at", FormatIso8601(FromUnixMillis(c.timestamp_ms)));
  field("  looked up", looked_up);
  if (!c.stack.empty()) fmt::print(out, "\n  stack:\n{}\n", TerminalSafe(c.stack, TextLines::kMulti));
  if (!c.context_lines.empty()) {
    fmt::print(out, "\n  log lines:\n");
    for (const std::string& line : c.context_lines) fmt::print(out, "    {}\n", TerminalSafe(line));
  }
}

}  // namespace dlq
