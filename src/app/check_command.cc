#include "app/check_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
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

}  // namespace

int CheckConfig(const MonitorConfig& config, const GroupClientsFactory& factory, const std::string& output,
                std::string& out) {
  const bool json = output == "json";
  const AlarmPlanOptions plan_options;  // the daemon's defaults
  int unsafe = 0, queues = 0, failed_groups = 0, warnings = 0;
  std::string text;
  JsonWriter js;
  js.BeginObject().Key("groups").BeginArray();
  for (const GroupConfig& g : config.groups) {
    js.BeginObject().Key("name").String(g.name);
    text += fmt::format("group {} -> {}\n", g.name, g.destination);
    auto clients = factory(g);
    if (!clients.ok()) {
      ++failed_groups;
      text += fmt::format("  ERROR: {}\n", clients.status().ToString());
      js.Key("error").String(clients.status().ToString());
      js.Key("destination").Null();
      js.Key("warnings").BeginArray().EndArray();
      js.Key("queues").BeginArray().EndArray();
      js.EndObject();
      continue;
    }
    // The destination first: the daemon checks it before receiving anything.
    std::vector<std::string> group_warnings;
    std::string group_error;
    auto dest = clients->store != nullptr ? clients->store->CheckWritable()
                                          : Result<DestinationCheck>(FailedPrecondition("no object store"));
    const bool dest_failed = !dest.ok();
    js.Key("destination").BeginObject();
    js.Key("uri").String(g.destination);
    js.Key("ok").Bool(!dest_failed);
    js.Key("confirmed").Bool(!dest_failed && dest->confirmed);
    js.Key("error").String(dest_failed ? dest.status().ToString() : "");
    js.Key("note").String(dest_failed ? "" : dest->note);
    js.EndObject();
    if (dest_failed) {
      group_error = fmt::format("destination {} failed its check: {}; `run` would archive nothing for this group",
                                g.destination, dest.status().ToString());
      text += fmt::format("  ERROR: {}\n", group_error);
    } else if (!dest->confirmed) {
      group_warnings.push_back(fmt::format("destination {} not confirmed: {}", g.destination, dest->note));
      text += fmt::format("  WARNING: {}\n", group_warnings.back());
    } else {
      text += fmt::format("  destination {}: exists and can be written\n", g.destination);
    }
    auto found = DiscoverQueues(*clients->sqs, g);
    if (!found.ok()) {
      ++failed_groups;
      text += fmt::format("  ERROR: {}\n", found.status().ToString());
      if (!group_error.empty()) group_error += "; ";
      group_error += found.status().ToString();
      js.Key("error").String(group_error);
      js.Key("warnings").BeginArray();
      for (const std::string& w : group_warnings) js.String(w);
      js.EndArray();
      js.Key("queues").BeginArray().EndArray();
      js.EndObject();
      warnings += static_cast<int>(group_warnings.size());
      continue;
    }
    if (found->empty()) {
      if (g.allow_empty) {
        text += "  (no queue matches the selectors; allowed by allow_empty: true)\n";
      } else {
        std::string e =
            "no queue matches the group's selectors (queues, prefixes, regex, discover); set "
            "allow_empty: true if that is expected";
        text += fmt::format("  ERROR: {}\n", e);
        if (!group_error.empty()) group_error += "; ";
        group_error += e;
      }
    }
    if (!group_error.empty()) ++failed_groups;
    warnings += static_cast<int>(group_warnings.size());
    js.Key("error");
    if (group_error.empty()) {
      js.Null();
    } else {
      js.String(group_error);
    }
    js.Key("warnings").BeginArray();
    for (const std::string& w : group_warnings) js.String(w);
    js.EndArray();
    js.Key("queues").BeginArray();
    for (const DiscoveredQueue& q : *found) {
      ++queues;
      QueueAlarmPlan plan = PlanAlarms(config, g, q, plan_options);
      auto report = AnalyzeQueueSafety(plan.safety);
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
      if (!report.ok()) {
        ++unsafe;
        text += fmt::format("    {}: UNSAFE (analysis failed: {})\n", q.name, report.status().ToString());
        js.Key("safe").Bool(false).Key("error").String(report.status().ToString()).EndObject();
        continue;
      }
      const bool safe = report->safe && !dest_failed;
      if (!safe) ++unsafe;
      if (dest_failed) {
        // The timing analysis is moot: no run can store anything.
        text += fmt::format("    {}: UNSAFE: nothing can be archived, the destination {} failed its check\n", q.name,
                            g.destination);
        Indent(text, "were the destination writable: " + report->ToString(), "      ");
      } else {
        Indent(text, report->ToString(), "    ");
      }
      js.Key("safe").Bool(safe);
      const std::pair<std::string_view, double> timings[] = {
          {"margin_s", report->margin_s},
          {"required_margin_s", report->required_margin_s},
          {"worst_case_arrival_to_archive_s", report->worst_case_arrival_to_archive_s},
          {"earliest_expiry_after_arrival_s", report->earliest_expiry_after_arrival_s},
          {"detection_delay_s", report->detection_delay_s},
          {"drain_time_s", report->drain_time_s}};
      for (const auto& [key, value] : timings) {
        js.Key(key);
        WriteNum(js, value);
      }
      js.Key("clock_origin").String(report->clock_origin);
      js.Key("latest_archive_s");
      WriteNum(js, report->latest_archive_s);
      js.Key("expires_s");
      WriteNum(js, report->expires_s);
      js.Key("reasons").BeginArray();
      if (dest_failed) js.String(group_error);
      for (const std::string& r : report->reasons) js.String(r);
      js.EndArray();
      js.EndObject();
    }
    js.EndArray();
    js.EndObject();
  }
  js.EndArray();
  // The listener: message content readable by whoever reaches it.
  const std::string listen = HostForUrl(config.listen_host) + ":" + std::to_string(config.listen_port);
  const bool loopback = IsLoopbackHost(config.listen_host);
  std::string listener_warning;
  if (!loopback && config.dashboard_read_token.empty()) {
    ++warnings;
    listener_warning = fmt::format(
        "listen {} is not loopback and dashboard.read_token is not set: anyone who can reach it can read every "
        "archived message through the dashboard; set dashboard.read_token",
        listen);
    text += fmt::format("WARNING: {}\n", listener_warning);
  }
  js.Key("listener").BeginObject();
  js.Key("address").String(listen).Key("loopback").Bool(loopback);
  js.Key("read_token").Bool(!config.dashboard_read_token.empty()).Key("warning").String(listener_warning);
  js.EndObject();
  int code = (unsafe > 0 || failed_groups > 0) ? 1 : 0;
  text += fmt::format("{} queue(s), {} unsafe, {} group(s) failed, {} warning(s)\n", queues, unsafe, failed_groups,
                      warnings);
  js.Key("queues").Int(queues).Key("unsafe").Int(unsafe).Key("failed_groups").Int(failed_groups);
  js.Key("warnings").Int(warnings).Key("ok").Bool(code == 0);
  js.EndObject();
  out = json ? js.Take() + "\n" : text;
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
