// The checks that span several keys of the daemon's config (config_internal.h).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "common/aws_regions.h"
#include "common/time_util.h"
#include "monitor/config_internal.h"

namespace dlq::config_internal {
namespace {

// Reports problems of one settings block, at the key that holds the value
// when one of them was set, otherwise where the block starts.
class SettingsReporter {
 public:
  SettingsReporter(const Origins& origins, const std::string& base, Loc fallback, bool in_group, Problems& out)
      : origins_(origins), base_(base), fallback_(fallback), in_group_(in_group), out_(out) {}

  // `involved`: the keys (relative to the block) whose values make the
  // problem; `primary`: the one it is reported at.
  void Report(std::initializer_list<std::string> involved, const std::string& primary, std::string msg) {
    if (in_group_ && !AnySetInGroup(involved)) return;  // reported under defaults already
    std::string field = Join(base_, primary);
    if (auto it = origins_.find(primary); it != origins_.end()) {
      if (it->second.path != field) msg += fmt::format(" (value from {})", it->second.path);
      out_.push_back({it->second.loc, field, std::move(msg)});
      return;
    }
    // The primary field has its built-in default: point at a field that was set.
    Loc loc = fallback_;
    for (const std::string& rel : involved) {
      auto it = origins_.find(rel);
      if (it != origins_.end() && (!in_group_ || it->second.from_group)) {
        loc = it->second.loc;
        break;
      }
    }
    out_.push_back({loc, field, std::move(msg)});
  }

 private:
  bool AnySetInGroup(std::initializer_list<std::string> involved) const {
    return std::any_of(involved.begin(), involved.end(), [&](const std::string& rel) {
      auto it = origins_.find(rel);
      return it != origins_.end() && it->second.from_group;
    });
  }

  const Origins& origins_;
  const std::string& base_;
  Loc fallback_;
  bool in_group_;
  Problems& out_;
};

void CheckPolicy(const GroupSettings& s, SettingsReporter& r) {
  if (s.policy_by_alarm && s.policy.window.count() > 0) {
    r.Report({"policy.select", "policy.window"}, "policy.window",
             "is only used with select: older-than or expiring-within (select: auto takes the expiry alarm's lead "
             "window)");
  }
  if (!s.policy_by_alarm && s.policy.kind != SelectionKind::kAll && s.policy.window.count() <= 0) {
    r.Report({"policy.select", "policy.window"}, "policy.window",
             fmt::format("a positive window is required with select: {}",
                         s.policy.kind == SelectionKind::kOlderThan ? "older-than" : "expiring-within"));
  }
}

void CheckAlarm(const GroupSettings& s, bool expiry, const MonitorConfig& config, SettingsReporter& r) {
  const AlarmSettings& a = expiry ? s.alarms.expiry : s.alarms.depth;
  if (!a.enabled) return;
  const std::string rel = expiry ? "alarms.expiry" : "alarms.depth";
  const std::string enabled = rel + ".enabled", period = rel + ".period", evals = rel + ".evaluation_periods",
                    dta = rel + ".datapoints_to_alarm";
  if (a.datapoints_to_alarm > a.evaluation_periods) {
    r.Report({enabled, dta, evals}, dta,
             fmt::format("{} is more than evaluation_periods ({})", a.datapoints_to_alarm, a.evaluation_periods));
  }
  if (!(expiry && s.cloudwatch_age)) {
    if (a.period < config.collection_interval) {
      r.Report({enabled, period}, period,
               fmt::format("{} is shorter than collection_interval ({})", FormatDuration(a.period),
                           FormatDuration(config.collection_interval)));
    }
    return;
  }
  if (a.period.count() % 60 != 0) {
    r.Report({enabled, period, "cloudwatch_age"}, period,
             fmt::format("{} is not a multiple of 60s (CloudWatch standard resolution; this alarm reads CloudWatch "
                         "because cloudwatch_age is true)",
                         FormatDuration(a.period)));
  }
  if (a.period * a.evaluation_periods > std::chrono::hours(24)) {
    r.Report({enabled, period, evals, "cloudwatch_age"}, evals,
             "period x evaluation_periods exceeds 1 day (CloudWatch limit)");
  }
}

// The location of the first of `keys` that was set, else `fallback`.
Loc FirstSet(const Origins& origins, std::initializer_list<std::string_view> keys, Loc fallback) {
  for (std::string_view k : keys) {
    if (auto it = origins.find(std::string(k)); it != origins.end()) return it->second.loc;
  }
  return fallback;
}

}  // namespace

void CheckTop(const MonitorConfig& config, const Origins& origins, Loc root, Problems& out) {
  if (config.concurrency_per_queue > config.concurrency_global) {
    out.push_back({FirstSet(origins, {"concurrency.per_queue", "concurrency.global"}, root), "concurrency.per_queue",
                   fmt::format("{} is more than concurrency.global ({})", config.concurrency_per_queue,
                               config.concurrency_global)});
  }
  if (config.shard.index >= config.shard.count) {
    out.push_back({FirstSet(origins, {"shard.index", "shard.count"}, root), "shard.index",
                   fmt::format("{} is not below shard.count ({}); shards are numbered from 0", config.shard.index,
                               config.shard.count)});
  }
}

void CheckSettings(const GroupSettings& s, const Origins& origins, const std::string& base, Loc fallback, bool in_group,
                   const MonitorConfig& config, Problems& out) {
  if (in_group && s.destination.empty()) {
    out.push_back({fallback, base, "destination is required (set it here or in defaults)"});
  }
  SettingsReporter r(origins, base, fallback, in_group, out);
  if (!s.put.sse_kms_key_id.empty() && s.put.sse != "aws:kms") {
    r.Report({"sse", "sse_kms_key_id"}, "sse_kms_key_id", "needs sse: aws:kms");
  }
  CheckPolicy(s, r);
  CheckAlarm(s, /*expiry=*/true, config, r);
  CheckAlarm(s, /*expiry=*/false, config, r);
}

void CheckGroup(const GroupConfig& g, const Origins& origins, const std::set<std::string>& present,
                const std::string& base, Loc at, std::set<std::string>& names, Problems& out) {
  if (!present.contains("name")) out.push_back({at, base, "name is required"});
  if (auto it = origins.find("name"); it != origins.end() && !names.insert(g.name).second) {
    out.push_back({it->second.loc, it->second.path, fmt::format("duplicate group name '{}'", g.name)});
  }
  // A selector that failed to parse counts as given: "selects no queues" would only repeat its error.
  bool selects = !g.queues.empty() || !g.prefixes.empty() || !g.regex.empty() || g.discover;
  for (const char* key : {"queues", "prefixes", "regex", "discover"}) {
    if (present.contains(key) && !origins.contains(key)) selects = true;
  }
  if (!selects) out.push_back({at, base, "selects no queues: set queues, prefixes, regex or discover: true"});
  if (auto it = origins.find("external_id"); it != origins.end() && g.role_arn.empty()) {
    out.push_back({it->second.loc, it->second.path, "needs role_arn"});
  }
}

void CheckGroupRegion(const GroupConfig& g, const Origins& origins, bool allow_unknown, Problems& out) {
  auto it = origins.find("region");
  if (it == origins.end() || g.region.empty() || allow_unknown || IsKnownAwsRegion(g.region)) return;
  std::string msg = fmt::format("unknown region '{}'", g.region);
  if (std::string s = SuggestAwsRegion(g.region); !s.empty()) msg += fmt::format(": did you mean '{}'?", s);
  msg += " (a region not in dlq-archive's table needs DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1)";
  out.push_back({it->second.loc, it->second.path, std::move(msg)});
}

}  // namespace dlq::config_internal
