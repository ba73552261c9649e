#include "app/check_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "app/command.h"
#include "causes/consumers.h"
#include "common/count_noun.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/text.h"
#include "common/time_util.h"
#include "monitor/alarm_plan.h"
#include "monitor/cause_worker.h"
#include "monitor/discovery.h"
#include "monitor/safety.h"
#include "server/host_policy.h"
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
  double drain_rate = kAssumedDrainRate;
  std::string drain_rate_source;
};

std::string DrainRateSource(double configured) {
  if (configured > 0) return "configured: --drain-rate";
  return fmt::format(
      "assumed: bench/drain measured ~6,600 msg/s against a loopback stand-in, {:.0f} allows for SQS round trips; "
      "set --drain-rate",
      kAssumedDrainRate);
}

// Messages in the DLQ now (visible, in flight and delayed): what a run started
// now would have ahead of a new arrival.
Result<int64_t> QueuedNow(QueueClient& sqs, const std::string& url) {
  static const std::vector<std::string> kCounts = {
      "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"};
  DLQ_ASSIGN_OR_RETURN(auto attrs, sqs.GetQueueAttributes(url, kCounts));
  int64_t total = 0;
  for (const std::string& name : kCounts) {
    auto it = attrs.find(name);
    if (it != attrs.end()) total += std::strtoll(it->second.c_str(), nullptr, 10);
  }
  return total;
}

// The plan's safety input with the depth read now and the check's drain rate;
// the plan's assumptions (and why) when the depth cannot be read.
QueueSafetyInput MeasuredSafetyInput(QueueClient& sqs, const DiscoveredQueue& q, const QueueSafetyInput& planned,
                                     double drain_rate, const std::string& drain_rate_source) {
  QueueSafetyInput in = planned;
  in.drain_rate = drain_rate;
  in.drain_rate_source = drain_rate_source;
  auto depth = QueuedNow(sqs, q.url);
  if (depth.ok()) {
    in.depth = *depth;
    in.depth_source = "queued now";
  } else {
    in.depth_source = "assumed backlog; the depth could not be read: " + depth.status().ToString();
  }
  return in;
}

// The advice that needs the longer retention: the daemon sizes its auto
// threshold for its own assumed backlog, the analysis for the depth now.
RetentionAdvice StricterAdvice(const QueueSafetyInput& planned, const QueueSafetyInput& measured) {
  RetentionAdvice a = AdviseRetention(planned), b = AdviseRetention(measured);
  return a.margin >= b.margin ? a : b;
}

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

void WriteRetentionJson(JsonWriter& js, const RetentionAdvice& a) {
  js.Key("retention_fix").BeginObject();
  js.Key("needed").Bool(a.needed).Key("fixable").Bool(a.fixable);
  js.Key("current_s").Int(a.current.count()).Key("proposed_s").Int(a.proposed.count());
  js.Key("source_s").Int(a.source.count()).Key("source_known").Bool(a.source_known);
  js.Key("margin_s").Int(a.margin.count()).Key("message").String(a.line);
  js.EndObject();
}

// One line about the retention in the report: the stricter advice replaces
// the analysis's own (drawn from the depth now).
void UseAdvice(SafetyReport& report, const RetentionAdvice& measured, const RetentionAdvice& chosen) {
  auto& reasons = report.reasons;
  if (measured.needed) reasons.erase(std::remove(reasons.begin(), reasons.end(), measured.line), reasons.end());
  if (chosen.needed) reasons.push_back(chosen.line);
}

// Where the queue's causes would come from (doc/causes.md): its sources, their
// consumers' log groups and how each was found, or why none is known. Only
// when the group looks causes up (causes: auto|on).
void CheckConsumers(const GroupConfig& g, const DiscoveredQueue& q, const GroupClients& clients, CheckReport& r) {
  if (g.causes == GroupConfig::Causes::kOff || clients.logs == nullptr || clients.lambda == nullptr) return;
  const ConsumerMap map = DiscoverConsumers(*clients.sqs, *clients.lambda, q, NamedConsumerLogs(g, q.name));
  r.text += "      causes:\n";
  for (const std::string& line : map.Describe()) r.text += fmt::format("        {}\n", TerminalSafe(line));
  if (map.log_groups.empty()) {
    r.text += fmt::format(
        "        (no cause can be looked up: name the consumer's log groups with consumer_logs: [\"{}=LOG_GROUP\"])\n",
        TerminalSafe(q.name));
  }
  r.js.Key("consumers").BeginArray();
  for (const ConsumerLogGroup& c : map.log_groups) {
    r.js.BeginObject().Key("log_group").String(c.log_group).Key("how").String(c.how);
    r.js.Key("function").String(c.function_name).EndObject();
  }
  r.js.EndArray();
  r.js.Key("consumer_notes");
  WriteStrings(r.js, map.notes);
}

void CheckQueue(const MonitorConfig& config, const GroupConfig& g, const DiscoveredQueue& q,
                const GroupClients& clients, const GroupCheck& gc, CheckReport& r) {
  QueueClient& sqs = *clients.sqs;
  ++r.queues;
  QueueAlarmPlan plan = PlanAlarms(config, g, q, AlarmPlanOptions());  // the daemon's defaults
  const QueueSafetyInput measured = MeasuredSafetyInput(sqs, q, plan.safety, r.drain_rate, r.drain_rate_source);
  const RetentionAdvice advice = StricterAdvice(plan.safety, measured);
  auto report = AnalyzeQueueSafety(measured);
  QueuePlanText(q, plan, r.text);
  BeginQueueJson(r.js, q, plan);
  WriteRetentionJson(r.js, advice);
  if (!report.ok()) {
    ++r.unsafe;
    r.text += fmt::format("    {}: UNSAFE (analysis failed: {})\n", q.name, report.status().ToString());
    r.js.Key("safe").Bool(false).Key("error").String(report.status().ToString()).EndObject();
    return;
  }
  UseAdvice(*report, AdviseRetention(measured), advice);
  const bool safe = report->safe && !gc.dest_failed && !advice.needed;
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
  CheckConsumers(g, q, clients, r);
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
  for (const DiscoveredQueue& q : *found) CheckQueue(config, g, q, *clients, gc, r);
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
                std::string& out, double drain_rate) {
  CheckReport r;
  if (drain_rate > 0) r.drain_rate = drain_rate;
  r.drain_rate_source = DrainRateSource(drain_rate);
  r.js.BeginObject().Key("groups").BeginArray();
  std::vector<GroupOverlap> overlaps;
  std::vector<GroupDiscovery> discovered = DiscoverGroups(config, factory, overlaps);
  for (size_t i = 0; i < config.groups.size(); ++i) CheckGroup(config, config.groups[i], discovered[i], overlaps, r);
  r.js.EndArray();
  CheckListener(config, r);
  int code = (r.unsafe > 0 || r.failed_groups > 0) ? 1 : 0;
  r.text += fmt::format("{}, {} unsafe, {} failed, {}\n", CountNoun(r.queues, "queue", "queues"), r.unsafe,
                        CountNoun(r.failed_groups, "group", "groups"), CountNoun(r.warnings, "warning", "warnings"));
  r.js.Key("queues").Int(r.queues).Key("unsafe").Int(r.unsafe).Key("failed_groups").Int(r.failed_groups);
  r.js.Key("warnings").Int(r.warnings).Key("ok").Bool(code == 0);
  r.js.EndObject();
  out = output == "json" ? r.js.Take() + "\n" : r.text;
  return code;
}

namespace {

// One DLQ of the retention plan.
struct RetentionRow {
  DiscoveredQueue q;
  RetentionAdvice advice;
  std::string blocked;  // why it is not changed although it needs it ("" = it may be changed)
};

// One group's DLQs as read now, with the clients that read them.
struct GroupRetention {
  std::string name;
  GroupClients clients;
  std::vector<RetentionRow> rows;
  std::string error;  // the group could not be read
};

// Why a DLQ must not be changed although it is short: it is itself a source
// (it has a RedrivePolicy), or that could not be read. "" = it may be changed.
std::string SourceBlock(QueueClient& sqs, const DiscoveredQueue& q) {
  auto attrs = sqs.GetQueueAttributes(q.url, {"RedrivePolicy"});
  if (!attrs.ok())
    return "could not read its RedrivePolicy to rule out that it is a source: " + attrs.status().ToString();
  auto it = attrs->find("RedrivePolicy");
  if (it == attrs->end() || it->second.empty()) return "";
  auto policy = ParseRedrivePolicy(it->second);
  const std::string target = policy.ok() ? policy->dead_letter_target_arn : it->second;
  return fmt::format(
      "it is also the redrive source of {}, and --fix-retention never changes a source queue (a longer source "
      "retention shortens its DLQ's margin)",
      target);
}

std::vector<GroupRetention> ReadRetention(const MonitorConfig& config, const GroupClientsFactory& factory) {
  std::vector<GroupRetention> groups;
  std::set<std::string> seen;
  const std::string rate_source = DrainRateSource(0);
  for (const GroupConfig& g : config.groups) {
    GroupRetention& gr = groups.emplace_back();
    gr.name = g.name;
    auto clients = factory(g);
    if (!clients.ok()) {
      gr.error = clients.status().ToString();
      continue;
    }
    gr.clients = *clients;
    auto found = DiscoverQueues(*gr.clients.sqs, g);
    if (!found.ok()) {
      gr.error = found.status().ToString();
      continue;
    }
    for (const DiscoveredQueue& q : *found) {
      if (!seen.insert(q.url).second) continue;  // in an earlier group: planned there
      QueueAlarmPlan plan = PlanAlarms(config, g, q, AlarmPlanOptions());
      const QueueSafetyInput measured =
          MeasuredSafetyInput(*gr.clients.sqs, q, plan.safety, kAssumedDrainRate, rate_source);
      RetentionRow row{q, StricterAdvice(plan.safety, measured), ""};
      if (row.advice.needed) {
        row.blocked = row.advice.fixable ? SourceBlock(*gr.clients.sqs, q) : row.advice.line;
      }
      gr.rows.push_back(std::move(row));
    }
  }
  return groups;
}

void PrintPlan(const std::vector<GroupRetention>& groups, std::string& out, int& to_change, int& blocked) {
  out += fmt::format("{:<40} {:<24} {}\n", "QUEUE", "CURRENT", "PROPOSED");
  std::string not_changed;
  for (const GroupRetention& gr : groups) {
    if (!gr.error.empty()) out += fmt::format("group {}: ERROR: {}\n", gr.name, gr.error);
    for (const RetentionRow& row : gr.rows) {
      if (!row.advice.needed) continue;
      if (!row.blocked.empty()) {
        ++blocked;
        not_changed += fmt::format("  {}: not changed: {}\n", row.q.name, row.blocked);
        continue;
      }
      ++to_change;
      out += fmt::format("{:<40} {:<24} {}\n", row.q.name, FormatSpan(static_cast<double>(row.advice.current.count())),
                         FormatSpan(static_cast<double>(row.advice.proposed.count())));
    }
  }
  out += not_changed;
}

// Sets the proposed retention on each DLQ of the plan; returns how many failed
// (those a stop request left unchanged included: each is named).
int ApplyPlan(const std::vector<GroupRetention>& groups, const std::atomic<bool>* stop, std::string& out) {
  std::string changed, failed, stopped;
  int failures = 0;
  for (const GroupRetention& gr : groups) {
    for (const RetentionRow& row : gr.rows) {
      if (!row.advice.needed || !row.blocked.empty()) continue;
      const std::string seconds = std::to_string(row.advice.proposed.count());
      if (stop != nullptr && stop->load()) {
        ++failures;
        stopped += fmt::format("  {}: still {} s\n", row.q.name, row.advice.current.count());
        continue;
      }
      Status st = gr.clients.sqs->SetQueueAttributes(row.q.url, {{"MessageRetentionPeriod", seconds}});
      if (st.ok()) {
        changed +=
            fmt::format("  {}: MessageRetentionPeriod {} -> {}\n", row.q.name, row.advice.current.count(), seconds);
      } else {
        ++failures;
        failed += fmt::format("  {}: still {} s: {}\n", row.q.name, row.advice.current.count(), st.ToString());
      }
    }
  }
  out += "changed:\n" + (changed.empty() ? std::string("  (none)\n") : changed);
  if (!failed.empty()) out += "not changed (SetQueueAttributes failed):\n" + failed;
  if (!stopped.empty()) out += "not changed (stopped by a signal before its turn):\n" + stopped;
  return failures;
}

// The DLQs whose retention is still too short, one line each; the count.
int Recheck(const std::vector<GroupRetention>& groups, std::string& out) {
  int short_ones = 0;
  for (const GroupRetention& gr : groups) {
    if (!gr.error.empty()) out += fmt::format("  group {}: ERROR: {}\n", gr.name, gr.error);
    for (const RetentionRow& row : gr.rows) {
      if (!row.advice.needed) continue;
      ++short_ones;
      out += fmt::format("  {}: {}\n", row.q.name, row.advice.line);
    }
  }
  if (short_ones == 0) out += "  every DLQ keeps messages long enough after they arrive\n";
  return short_ones;
}

bool AnyGroupFailed(const std::vector<GroupRetention>& groups) {
  return std::any_of(groups.begin(), groups.end(), [](const GroupRetention& g) { return !g.error.empty(); });
}

}  // namespace

int FixRetention(const MonitorConfig& config, const GroupClientsFactory& factory, bool apply, std::string& out,
                 const std::atomic<bool>* stop) {
  const std::vector<GroupRetention> groups = ReadRetention(config, factory);
  int to_change = 0, blocked = 0;
  PrintPlan(groups, out, to_change, blocked);
  const bool group_failed = AnyGroupFailed(groups);
  if (to_change == 0) {
    out += blocked == 0 ? "nothing to change" : "nothing --fix-retention can change";
    out += group_failed ? " in the groups that could be read\n" : "\n";
    if (group_failed) return kFixPartial;
    return blocked == 0 ? kFixNothingToDo : kFixPending;
  }
  if (!apply) {
    out += fmt::format("{} to change; nothing changed: run again with --yes to apply\n",
                       CountNoun(to_change, "DLQ", "DLQs"));
    return group_failed ? kFixPartial : kFixPending;
  }
  const int failures = ApplyPlan(groups, stop, out);
  if (stop != nullptr && stop->load()) {
    out += "stopped by a signal: the DLQs under \"changed\" were changed, the others were not; run again to finish\n";
    return kFixStopped;
  }
  out += "check again:\n";
  const int still_short = Recheck(ReadRetention(config, factory), out);
  if (failures > 0 || group_failed) return kFixPartial;
  return still_short > 0 ? kFixPending : kFixNothingToDo;
}

int RunCheckCommand(const CheckCommandOptions& options) {
  auto config = LoadMonitorConfig(options.config_path, DefaultEnvironment());
  if (!config.ok()) {
    // One problem a line: the parser joins them with line feeds.
    std::fprintf(stderr, "error: %s\n", TerminalSafe(config.status().message(), TextLines::kMulti).c_str());
    return 2;
  }
  std::string out;
  auto factory = MakeAwsGroupClientsFactory(options.services, nullptr);
  int code = options.fix_retention ? FixRetention(*config, factory, options.yes, out, options.stop)
                                   : CheckConfig(*config, factory, options.output, out, options.drain_rate);
  // The text report names queues and errors from AWS, one per line.
  if (options.output != "json" || options.fix_retention) out = TerminalSafe(out, TextLines::kMulti);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return code;
}

namespace {

Runner AddCheckFlags(CLI::App& cmd) {
  auto o = std::make_shared<CheckCommandOptions>();
  cmd.add_option("--config", o->config_path, "YAML config (doc/configuration.md) (required)");
  cmd.add_option("--output", o->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd.add_option(
         "--drain-rate", o->drain_rate,
         fmt::format("messages per second an archive run sustains, for the drain time (default: assumed {:.0f})",
                     kAssumedDrainRate))
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--fix-retention", o->fix_retention,
               "print the DLQs whose retention is too short for their sources, with the retention proposed; "
               "changes nothing without --yes");
  cmd.add_flag("--yes", o->yes, "with --fix-retention: set MessageRetentionPeriod on those DLQs, then check again");
  return [o](const CommandContext& ctx) {
    if (o->config_path.empty()) return ctx.usage.Fail("--config is required");
    if (o->yes && !o->fix_retention) return ctx.usage.Fail("--yes applies --fix-retention's plan: give both");
    CheckCommandOptions options = *o;
    options.services = ctx.global.Services();
    options.stop = &ctx.stop;
    return RunCheckCommand(options);
  };
}

}  // namespace

Command CheckCommand() {
  return {"check", "print the resolved plan and a safety analysis per queue",
          "Exit codes: 0 every queue is safe; 1 some queue is unsafe or a group failed; 2 usage error or a config "
          "that does not load.\n"
          "With --fix-retention: 0 nothing to change (with --yes: every change made and the check again passes); "
          "1 changes planned but not made (no --yes), or a DLQ no retention can fix; 2 usage error or invalid "
          "config; 3 some change failed or a group could not be read (the report names each queue changed and "
          "not changed); 130 a signal stopped --yes between two changes (the report names the DLQs changed and "
          "those left as they were)",
          AddCheckFlags};
}

}  // namespace dlq
