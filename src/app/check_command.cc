#include "app/check_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/command.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/text.h"
#include "common/time_util.h"
#include "monitor/alarm_plan.h"
#include "monitor/discovery.h"
#include "monitor/safety.h"
#include "server/http_server.h"

namespace dlq {
namespace {

// Seconds and thresholds as whole numbers; infinities as the strings "inf" and "-inf".
void WriteNum(JsonWriter& w, double v) {
  if (std::isfinite(v)) {
    w.Raw(fmt::format("{:.0f}", v));
  } else {
    w.String(v > 0 ? "inf" : "-inf");
  }
}

std::string AlarmText(const AlarmSpec& a) {
  return fmt::format("{} {} {} {:.0f} ({} of {} x {}s, {}, missing data {})", a.name, a.metric,
                     ComparisonName(a.comparison), a.threshold, a.datapoints_to_alarm, a.evaluation_periods,
                     a.period.count(), StatisticName(a.statistic), MissingDataName(a.missing));
}

std::string_view SelectName(SelectionKind k) {
  switch (k) {
    case SelectionKind::kAll: return "all";
    case SelectionKind::kOlderThan: return "older-than";
    case SelectionKind::kExpiringWithin: return "expiring-within";
  }
  return "all";
}

// What the daemon does while the alarm is in ALARM.
std::string ActionText(AlarmSettings::Action a, const Selection& s) {
  switch (a) {
    case AlarmSettings::Action::kNotify: return "notify: webhook and log only, nothing is archived";
    case AlarmSettings::Action::kCopy:
      return fmt::format("copy: once per transition into ALARM, archive a copy of {}; nothing is deleted",
                         SelectionText(s));
    case AlarmSettings::Action::kArchive:
      return fmt::format("archive: archive, then delete, {}; again every sweep while in ALARM", SelectionText(s));
  }
  return "";
}

void WriteAlarm(JsonWriter& w, const AlarmSpec& a, AlarmSettings::Action action, const Selection& s) {
  w.BeginObject();
  w.Key("name").String(a.name);
  w.Key("metric").String(a.metric);
  w.Key("threshold");
  WriteNum(w, a.threshold);
  w.Key("period_s").Int(a.period.count());
  w.Key("evaluation_periods").Int(a.evaluation_periods);
  w.Key("datapoints_to_alarm").Int(a.datapoints_to_alarm);
  w.Key("comparison").String(ComparisonName(a.comparison));
  w.Key("treat_missing_data").String(MissingDataName(a.missing));
  w.Key("action").String(AlarmActionName(action));
  w.Key("select").String(SelectName(s.kind));
  w.Key("window_s").Int(s.window.count());
  w.EndObject();
}

void Indent(std::string& text, const std::string& block, std::string_view prefix) {
  size_t start = 0;
  while (start < block.size()) {
    size_t end = block.find('\n', start);
    if (end == std::string::npos) end = block.size();
    text += std::string(prefix) + block.substr(start, end - start) + "\n";
    start = end + 1;
  }
}

// The report `check` prints, built group by group: the text and the JSON side by side.
struct CheckReport {
  std::string text;
  JsonWriter js;
  int unsafe = 0, queues = 0, failed_groups = 0, warnings = 0;
};

// One group's state while its queues are reported.
struct GroupCheck {
  std::vector<std::string> warnings;
  std::string error;         // "" while nothing failed
  bool dest_failed = false;  // no run can store anything
};

void WriteStrings(JsonWriter& js, const std::vector<std::string>& items) {
  js.BeginArray();
  for (const std::string& s : items) js.String(s);
  js.EndArray();
}

void AddError(std::string& error, const std::string& more) {
  if (!error.empty()) error += "; ";
  error += more;
}

// The destination first: the daemon checks it before receiving anything.
void CheckDestination(const GroupConfig& g, ObjectStore* store, GroupCheck& gc, CheckReport& r) {
  auto dest =
      store != nullptr ? store->CheckWritable() : Result<DestinationCheck>(FailedPrecondition("no object store"));
  gc.dest_failed = !dest.ok();
  r.js.Key("destination").BeginObject();
  r.js.Key("uri").String(g.destination);
  r.js.Key("ok").Bool(!gc.dest_failed);
  r.js.Key("confirmed").Bool(!gc.dest_failed && dest->confirmed);
  r.js.Key("error").String(gc.dest_failed ? dest.status().ToString() : "");
  r.js.Key("note").String(gc.dest_failed ? "" : dest->note);
  r.js.EndObject();
  if (gc.dest_failed) {
    gc.error = fmt::format("destination {} failed its check: {}; `run` would archive nothing for this group",
                           g.destination, dest.status().ToString());
    r.text += fmt::format("  ERROR: {}\n", gc.error);
  } else if (!dest->confirmed) {
    gc.warnings.push_back(fmt::format("destination {} not confirmed: {}", g.destination, dest->note));
    r.text += fmt::format("  WARNING: {}\n", gc.warnings.back());
  } else {
    r.text += fmt::format("  destination {}: exists and can be written\n", g.destination);
  }
}

// The queue, its sources and its alarms, as text.
void QueuePlanText(const DiscoveredQueue& q, const QueueAlarmPlan& plan, std::string& text) {
  text += fmt::format("  queue {} ({}) retention {}\n", q.name, q.fifo ? "fifo" : "standard",
                      FormatSpan(static_cast<double>(q.retention.count())));
  if (q.redrive_sources.empty()) text += "    sources: none found (retention unknown)\n";
  for (const RedriveSource& s : q.redrive_sources) {
    text += fmt::format("    source {} retention {}, maxReceiveCount {}\n", s.name,
                        FormatSpan(static_cast<double>(s.retention.count())), s.max_receive_count);
  }
  if (plan.expiry) {
    text += fmt::format("    alarm {} [{}]\n", AlarmText(*plan.expiry), plan.threshold_source);
    text += fmt::format("      action {}\n", ActionText(plan.expiry_action, plan.expiry_selection));
  } else {
    text += "    expiry alarm disabled\n";
  }
  if (plan.depth) {
    text += fmt::format("    alarm {}\n", AlarmText(*plan.depth));
    text += fmt::format("      action {}\n", ActionText(plan.depth_action, plan.depth_selection));
  }
}

// The queue, its sources and its alarms, as the start of its JSON object.
void BeginQueueJson(JsonWriter& js, const DiscoveredQueue& q, const QueueAlarmPlan& plan) {
  js.BeginObject();
  js.Key("queue").String(q.name);
  js.Key("url").String(q.url);
  js.Key("fifo").Bool(q.fifo);
  js.Key("retention_s").Int(q.retention.count());
  js.Key("sources").BeginArray();
  for (const RedriveSource& s : q.redrive_sources) {
    js.BeginObject().Key("name").String(s.name).Key("retention_s").Int(s.retention.count()).EndObject();
  }
  js.EndArray();
  js.Key("alarms").BeginArray();
  if (plan.expiry) WriteAlarm(js, *plan.expiry, plan.expiry_action, plan.expiry_selection);
  if (plan.depth) WriteAlarm(js, *plan.depth, plan.depth_action, plan.depth_selection);
  js.EndArray();
  js.Key("threshold_source").String(plan.threshold_source);
}

// The safety analysis's timings and reasons (the rest of the queue's JSON object).
void WriteSafetyJson(JsonWriter& js, const SafetyReport& report, const GroupCheck& gc) {
  const std::pair<std::string_view, double> timings[] = {
      {"margin_s", report.margin_s},
      {"required_margin_s", report.required_margin_s},
      {"worst_case_arrival_to_archive_s", report.worst_case_arrival_to_archive_s},
      {"earliest_expiry_after_arrival_s", report.earliest_expiry_after_arrival_s},
      {"detection_delay_s", report.detection_delay_s},
      {"drain_time_s", report.drain_time_s}};
  for (const auto& [key, value] : timings) {
    js.Key(key);
    WriteNum(js, value);
  }
  js.Key("clock_origin").String(report.clock_origin);
  js.Key("latest_archive_s");
  WriteNum(js, report.latest_archive_s);
  js.Key("expires_s");
  WriteNum(js, report.expires_s);
  js.Key("reasons").BeginArray();
  if (gc.dest_failed) js.String(gc.error);
  for (const std::string& reason : report.reasons) js.String(reason);
  js.EndArray();
}

void CheckQueue(const MonitorConfig& config, const GroupConfig& g, const DiscoveredQueue& q, const GroupCheck& gc,
                CheckReport& r) {
  ++r.queues;
  QueueAlarmPlan plan = PlanAlarms(config, g, q, AlarmPlanOptions());  // the daemon's defaults
  auto report = AnalyzeQueueSafety(plan.safety);
  QueuePlanText(q, plan, r.text);
  BeginQueueJson(r.js, q, plan);
  if (!report.ok()) {
    ++r.unsafe;
    r.text += fmt::format("    {}: UNSAFE (analysis failed: {})\n", q.name, report.status().ToString());
    r.js.Key("safe").Bool(false).Key("error").String(report.status().ToString()).EndObject();
    return;
  }
  const bool safe = report->safe && !gc.dest_failed;
  if (!safe) ++r.unsafe;
  if (gc.dest_failed) {
    // The timing analysis is moot: no run can store anything.
    r.text += fmt::format("    {}: UNSAFE: nothing can be archived, the destination {} failed its check\n", q.name,
                          g.destination);
    Indent(r.text, "were the destination writable: " + report->ToString(), "      ");
  } else {
    Indent(r.text, report->ToString(), "    ");
  }
  r.js.Key("safe").Bool(safe);
  WriteSafetyJson(r.js, *report, gc);
  r.js.EndObject();
}

// Ends a group's JSON object after an error that left no queue to report.
void EndFailedGroup(CheckReport& r, const std::string& error, const std::vector<std::string>& warnings,
                    bool with_destination) {
  ++r.failed_groups;
  r.js.Key("error").String(error);
  if (with_destination) r.js.Key("destination").Null();
  r.js.Key("warnings");
  WriteStrings(r.js, warnings);
  r.js.Key("queues").BeginArray().EndArray();
  r.js.EndObject();
}

// A group's clients and what its selectors matched, found for every group
// before any is reported: a queue matched by two groups is known only then.
struct GroupDiscovery {
  Result<GroupClients> clients = FailedPrecondition("not created");
  Result<std::vector<DiscoveredQueue>> found = FailedPrecondition("not discovered");
};

std::vector<GroupDiscovery> DiscoverGroups(const MonitorConfig& config, const GroupClientsFactory& factory,
                                           std::vector<GroupOverlap>& overlaps) {
  std::vector<GroupDiscovery> out(config.groups.size());
  std::vector<const GroupConfig*> groups;
  std::vector<std::vector<DiscoveredQueue>*> found;
  for (size_t i = 0; i < config.groups.size(); ++i) {
    const GroupConfig& g = config.groups[i];
    out[i].clients = factory(g);
    if (out[i].clients.ok()) out[i].found = DiscoverQueues(*out[i].clients->sqs, g);
    groups.push_back(&g);
    found.push_back(out[i].found.ok() ? &*out[i].found : nullptr);
  }
  overlaps = ResolveGroupOverlaps(groups, found);
  return out;
}

// The queues of `g` that another group watches: an error on equal priorities.
void ReportOverlaps(const GroupConfig& g, const std::vector<GroupOverlap>& overlaps, GroupCheck& gc, CheckReport& r) {
  for (const GroupOverlap& o : overlaps) {
    if (o.dropped != g.name) continue;
    if (o.error()) {
      r.text += fmt::format("  ERROR: {}\n", o.Message());
      AddError(gc.error, o.Message());
    } else {
      r.text += fmt::format("  {}\n", o.Message());
    }
  }
}

void CheckGroup(const MonitorConfig& config, const GroupConfig& g, GroupDiscovery& d,
                const std::vector<GroupOverlap>& overlaps, CheckReport& r) {
  r.js.BeginObject().Key("name").String(g.name);
  r.text += fmt::format("group {} -> {}\n", g.name, g.destination);
  const Result<GroupClients>& clients = d.clients;
  if (!clients.ok()) {
    r.text += fmt::format("  ERROR: {}\n", clients.status().ToString());
    EndFailedGroup(r, clients.status().ToString(), {}, /*with_destination=*/true);
    return;
  }
  GroupCheck gc;
  CheckDestination(g, clients->store, gc, r);
  Result<std::vector<DiscoveredQueue>>& found = d.found;
  if (!found.ok()) {
    r.text += fmt::format("  ERROR: {}\n", found.status().ToString());
    AddError(gc.error, found.status().ToString());
    EndFailedGroup(r, gc.error, gc.warnings, /*with_destination=*/false);
    r.warnings += static_cast<int>(gc.warnings.size());
    return;
  }
  ReportOverlaps(g, overlaps, gc, r);
  // A group whose every queue another group watches is not empty.
  const bool all_elsewhere =
      std::any_of(overlaps.begin(), overlaps.end(), [&](const GroupOverlap& o) { return o.dropped == g.name; });
  if (found->empty() && !all_elsewhere) {
    if (g.allow_empty) {
      r.text += "  (no queue matches the selectors; allowed by allow_empty: true)\n";
    } else {
      std::string e =
          "no queue matches the group's selectors (queues, prefixes, regex, discover); set "
          "allow_empty: true if that is expected";
      r.text += fmt::format("  ERROR: {}\n", e);
      AddError(gc.error, e);
    }
  }
  if (!gc.error.empty()) ++r.failed_groups;
  r.warnings += static_cast<int>(gc.warnings.size());
  r.js.Key("error");
  if (gc.error.empty()) {
    r.js.Null();
  } else {
    r.js.String(gc.error);
  }
  r.js.Key("warnings");
  WriteStrings(r.js, gc.warnings);
  r.js.Key("queues").BeginArray();
  for (const DiscoveredQueue& q : *found) CheckQueue(config, g, q, gc, r);
  r.js.EndArray();
  r.js.EndObject();
}

// The listener: message content readable by whoever reaches it.
void CheckListener(const MonitorConfig& config, CheckReport& r) {
  const std::string listen = HostForUrl(config.listen_host) + ":" + std::to_string(config.listen_port);
  const bool loopback = IsLoopbackHost(config.listen_host);
  std::string listener_warning;
  if (!loopback && config.dashboard_read_token.empty()) {
    ++r.warnings;
    listener_warning = fmt::format(
        "listen {} is not loopback and dashboard.read_token is not set: anyone who can reach it can read every "
        "archived message through the dashboard; set dashboard.read_token",
        listen);
    r.text += fmt::format("WARNING: {}\n", listener_warning);
  }
  r.js.Key("listener").BeginObject();
  r.js.Key("address").String(listen).Key("loopback").Bool(loopback);
  r.js.Key("read_token").Bool(!config.dashboard_read_token.empty()).Key("warning").String(listener_warning);
  r.js.EndObject();
}

}  // namespace

int CheckConfig(const MonitorConfig& config, const GroupClientsFactory& factory, const std::string& output,
                std::string& out) {
  CheckReport r;
  r.js.BeginObject().Key("groups").BeginArray();
  std::vector<GroupOverlap> overlaps;
  std::vector<GroupDiscovery> discovered = DiscoverGroups(config, factory, overlaps);
  for (size_t i = 0; i < config.groups.size(); ++i) CheckGroup(config, config.groups[i], discovered[i], overlaps, r);
  r.js.EndArray();
  CheckListener(config, r);
  int code = (r.unsafe > 0 || r.failed_groups > 0) ? 1 : 0;
  r.text += fmt::format("{} queue(s), {} unsafe, {} group(s) failed, {} warning(s)\n", r.queues, r.unsafe,
                        r.failed_groups, r.warnings);
  r.js.Key("queues").Int(r.queues).Key("unsafe").Int(r.unsafe).Key("failed_groups").Int(r.failed_groups);
  r.js.Key("warnings").Int(r.warnings).Key("ok").Bool(code == 0);
  r.js.EndObject();
  out = output == "json" ? r.js.Take() + "\n" : r.text;
  return code;
}

int RunCheckCommand(const CheckCommandOptions& options) {
  auto config = LoadMonitorConfig(options.config_path, DefaultEnvironment());
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", TerminalSafe(config.status().message()).c_str());
    return 2;
  }
  std::string out;
  int code = CheckConfig(*config, MakeAwsGroupClientsFactory(options.services, nullptr), options.output, out);
  // The text report names queues and errors from AWS, one per line.
  if (options.output != "json") out = TerminalSafe(out, TextLines::kMulti);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return code;
}

namespace {

Runner AddCheckFlags(CLI::App& cmd) {
  auto o = std::make_shared<CheckCommandOptions>();
  cmd.add_option("--config", o->config_path, "YAML config (doc/configuration.md) (required)");
  cmd.add_option("--output", o->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  return [o](const CommandContext& ctx) {
    if (o->config_path.empty()) return ctx.usage.Fail("--config is required");
    CheckCommandOptions options = *o;
    options.services = ctx.global.Services();
    return RunCheckCommand(options);
  };
}

}  // namespace

Command CheckCommand() {
  return {"check", "print the resolved plan and a safety analysis per queue",
          "Exit codes: 0 every queue is safe; 1 some queue is unsafe or the config is invalid; 2 usage error",
          AddCheckFlags};
}

}  // namespace dlq
