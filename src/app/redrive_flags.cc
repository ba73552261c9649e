#include "app/redrive_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

std::optional<double> ParseNumber(std::string_view text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<std::chrono::milliseconds> ParseWait(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d || *d <= std::chrono::seconds(0)) {
    return InvalidArgument(fmt::format("{} '{}' is not a duration (e.g. 90s, 5m)", flag, text));
  }
  return std::chrono::milliseconds(*d);
}

// --max-refailures N|P%.
Status ParseMaxRefailures(const std::string& text, RedrivePlan& plan) {
  if (EndsWith(text, "%")) {
    auto p = ParseNumber(std::string_view(text).substr(0, text.size() - 1));
    if (!p || *p < 0 || *p > 100) {
      return InvalidArgument(fmt::format("--max-refailures '{}': a percentage must be in 0..100", text));
    }
    plan.max_refailures_fraction = *p / 100;
    return Status::Ok();
  }
  auto n = AllDigits(text) ? ParseInt64(text) : std::nullopt;
  if (!n) return InvalidArgument(fmt::format("--max-refailures '{}': expected a count or a percentage (1%)", text));
  plan.max_refailures = static_cast<uint64_t>(*n);
  return Status::Ok();
}

// --max-backlog N|DURATION, repeatable: at most one of each.
Status ParseMaxBacklog(const std::vector<std::string>& values, RedrivePlan& plan) {
  for (const std::string& v : values) {
    if (AllDigits(v)) {
      auto n = ParseInt64(v);
      if (!n || *n < 1) return InvalidArgument(fmt::format("--max-backlog '{}': a count must be at least 1", v));
      if (plan.max_backlog) return InvalidArgument("--max-backlog: give at most one count");
      plan.max_backlog = *n;
      continue;
    }
    auto d = ParseDuration(v);
    if (!d || *d <= std::chrono::seconds(0)) {
      return InvalidArgument(fmt::format("--max-backlog '{}': expected a count (500) or an age (10m)", v));
    }
    if (plan.max_backlog_age > std::chrono::seconds(0)) return InvalidArgument("--max-backlog: give at most one age");
    plan.max_backlog_age = *d;
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> ParseRamp(const std::string& text) {
  std::vector<double> out;
  for (std::string_view part : Split(text, ',')) {
    auto p = ParseNumber(part);
    if (!p || !(*p > 0) || *p > 100 || (!out.empty() && *p / 100 <= out.back())) {
      return InvalidArgument(fmt::format("--ramp '{}': expected rising percentages in (0, 100], e.g. 5,25,100", text));
    }
    out.push_back(*p / 100);
  }
  if (out.empty()) return InvalidArgument("--ramp: expected rising percentages, e.g. 5,25,100");
  if (out.back() < 1) out.push_back(1);
  return out;
}

Result<RedrivePlan> ParseRedriveFlags(const RedriveFlags& flags, bool to_source) {
  RedrivePlan plan;
  if (flags.canary && flags.no_canary) return InvalidArgument("give one of --canary N and --no-canary");
  if (flags.canary && *flags.canary == 0) return InvalidArgument("--canary must be at least 1 (or --no-canary)");
  plan.guarded = !flags.no_canary && (flags.canary || to_source);
  plan.canary = flags.canary;
  if (!plan.guarded) {
    const std::pair<bool, const char*> canary_only[] = {
        {flags.ramp.has_value(), "--ramp"},
        {!flags.window.empty(), "--window"},
        {!flags.check.empty(), "--check"},
        {flags.max_refailures.has_value(), "--max-refailures"},
        {flags.canary_max_refailures.has_value(), "--canary-max-refailures"}};
    for (const auto& [given, flag] : canary_only) {
      if (!given) continue;
      return InvalidArgument(fmt::format(
          "{} applies to a guarded replay only, and this one has no canary ({}); give --canary N, or drop {}", flag,
          flags.no_canary ? "--no-canary" : "--to-queue without --canary", flag));
    }
  }
  DLQ_ASSIGN_OR_RETURN(plan.ramp, ParseRamp(flags.ramp.value_or("5,25,100")));
  if (!flags.window.empty()) {
    DLQ_ASSIGN_OR_RETURN(plan.window, ParseWait("--window", flags.window));
  }
  if (!flags.check.empty()) {
    DLQ_ASSIGN_OR_RETURN(plan.check, ParseWait("--check", flags.check));
  }
  DLQ_RETURN_IF_ERROR(ParseMaxRefailures(flags.max_refailures.value_or("1%"), plan));
  plan.canary_max_refailures = flags.canary_max_refailures.value_or(0);
  DLQ_RETURN_IF_ERROR(ParseMaxBacklog(flags.max_backlog, plan));
  plan.backpressure = !plan.guarded && !flags.max_backlog.empty();
  return plan;
}

}  // namespace dlq
