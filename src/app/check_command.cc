#include "app/check_command.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "common/log.h"
#include "common/time_util.h"
#include "monitor/alarm_plan.h"
#include "monitor/discovery.h"
#include "monitor/safety.h"

namespace dlq {
namespace {

std::string Num(double v) {
  return std::isfinite(v) ? fmt::format("{:.0f}", v) : (v > 0 ? "\"inf\"" : "\"-inf\"");
}

void AppendAlarmJson(std::string& out, const AlarmSpec& a) {
  out += "{\"name\":";
  AppendJsonString(out, a.name);
  out += ",\"metric\":";
  AppendJsonString(out, a.metric);
  out += fmt::format(",\"threshold\":{},\"period_s\":{},\"evaluation_periods\":{},\"datapoints_to_alarm\":{}",
                     Num(a.threshold), a.period.count(), a.evaluation_periods, a.datapoints_to_alarm);
  out += ",\"comparison\":";
  AppendJsonString(out, ComparisonName(a.comparison));
  out += ",\"treat_missing_data\":";
  AppendJsonString(out, MissingDataName(a.missing));
  out += '}';
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

std::string SelectionText(const Selection& s) {
  switch (s.kind) {
    case SelectionKind::kAll: return "every message";
    case SelectionKind::kOlderThan:
      return fmt::format("the messages sent more than {} ago", FormatSpan(static_cast<double>(s.window.count())));
    case SelectionKind::kExpiringWithin:
      return fmt::format("the messages expiring within {}", FormatSpan(static_cast<double>(s.window.count())));
  }
  return "every message";
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

void AppendActionJson(std::string& out, AlarmSettings::Action a, const Selection& s) {
  out += ",\"action\":";
  AppendJsonString(out, AlarmActionName(a));
  out += ",\"select\":";
  AppendJsonString(out, SelectName(s.kind));
  out += fmt::format(",\"window_s\":{}", s.window.count());
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
  std::string text, js = "{\"groups\":[";
  for (size_t gi = 0; gi < config.groups.size(); ++gi) {
    const GroupConfig& g = config.groups[gi];
    if (gi) js += ',';
    js += "{\"name\":";
    AppendJsonString(js, g.name);
    text += fmt::format("group {} -> {}\n", g.name, g.destination);
    auto clients = factory(g);
    if (!clients.ok()) {
      ++failed_groups;
      text += fmt::format("  ERROR: {}\n", clients.status().ToString());
      js += ",\"error\":";
      AppendJsonString(js, clients.status().ToString());
      js += ",\"destination\":null,\"warnings\":[],\"queues\":[]}";
      continue;
    }
    // The destination first: the daemon checks it before receiving anything.
    std::vector<std::string> group_warnings;
    std::string group_error;
    auto dest = clients->store != nullptr ? clients->store->CheckWritable()
                                          : Result<DestinationCheck>(FailedPrecondition("no object store"));
    const bool dest_failed = !dest.ok();
    js += ",\"destination\":{\"uri\":";
    AppendJsonString(js, g.destination);
    js += fmt::format(",\"ok\":{},\"confirmed\":{},\"error\":", !dest_failed, !dest_failed && dest->confirmed);
    AppendJsonString(js, dest_failed ? dest.status().ToString() : "");
    js += ",\"note\":";
    AppendJsonString(js, dest_failed ? "" : dest->note);
    js += '}';
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
      js += ",\"error\":";
      AppendJsonString(js, group_error);
      js += ",\"warnings\":[";
      for (size_t wi = 0; wi < group_warnings.size(); ++wi) {
        if (wi) js += ',';
        AppendJsonString(js, group_warnings[wi]);
      }
      js += "],\"queues\":[]}";
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
    js += ",\"error\":";
    if (group_error.empty()) {
      js += "null";
    } else {
      AppendJsonString(js, group_error);
    }
    js += ",\"warnings\":[";
    for (size_t wi = 0; wi < group_warnings.size(); ++wi) {
      if (wi) js += ',';
      AppendJsonString(js, group_warnings[wi]);
    }
    js += "],\"queues\":[";
    for (size_t qi = 0; qi < found->size(); ++qi) {
      const DiscoveredQueue& q = (*found)[qi];
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
      if (qi) js += ',';
      js += "{\"queue\":";
      AppendJsonString(js, q.name);
      js += ",\"url\":";
      AppendJsonString(js, q.url);
      js += fmt::format(",\"fifo\":{},\"retention_s\":{},\"sources\":[", q.fifo, q.retention.count());
      for (size_t si = 0; si < q.redrive_sources.size(); ++si) {
        if (si) js += ',';
        js += "{\"name\":";
        AppendJsonString(js, q.redrive_sources[si].name);
        js += fmt::format(",\"retention_s\":{}}}", q.redrive_sources[si].retention.count());
      }
      js += "],\"alarms\":[";
      bool first = true;
      if (plan.expiry) {
        AppendAlarmJson(js, *plan.expiry);
        js.pop_back();
        AppendActionJson(js, plan.expiry_action, plan.expiry_selection);
        js += '}';
        first = false;
      }
      if (plan.depth) {
        if (!first) js += ',';
        AppendAlarmJson(js, *plan.depth);
        js.pop_back();
        AppendActionJson(js, plan.depth_action, plan.depth_selection);
        js += '}';
      }
      js += "],\"threshold_source\":";
      AppendJsonString(js, plan.threshold_source);
      if (!report.ok()) {
        ++unsafe;
        text += fmt::format("    {}: UNSAFE (analysis failed: {})\n", q.name, report.status().ToString());
        js += ",\"safe\":false,\"error\":";
        AppendJsonString(js, report.status().ToString());
        js += '}';
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
      js += fmt::format(
          ",\"safe\":{},\"margin_s\":{},\"required_margin_s\":{},\"worst_case_arrival_to_archive_s\":{},"
          "\"earliest_expiry_after_arrival_s\":{},\"detection_delay_s\":{},\"drain_time_s\":{},"
          "\"clock_origin\":",
          safe, Num(report->margin_s), Num(report->required_margin_s), Num(report->worst_case_arrival_to_archive_s),
          Num(report->earliest_expiry_after_arrival_s), Num(report->detection_delay_s), Num(report->drain_time_s));
      AppendJsonString(js, report->clock_origin);
      js += fmt::format(",\"latest_archive_s\":{},\"expires_s\":{},\"reasons\":[", Num(report->latest_archive_s),
                        Num(report->expires_s));
      bool first_reason = true;
      if (dest_failed) {
        AppendJsonString(js, group_error);
        first_reason = false;
      }
      for (const std::string& r : report->reasons) {
        if (!first_reason) js += ',';
        first_reason = false;
        AppendJsonString(js, r);
      }
      js += "]}";
    }
    js += "]}";
  }
  int code = (unsafe > 0 || failed_groups > 0) ? 1 : 0;
  text += fmt::format("{} queue(s), {} unsafe, {} group(s) failed, {} warning(s)\n", queues, unsafe, failed_groups,
                      warnings);
  js += fmt::format("],\"queues\":{},\"unsafe\":{},\"failed_groups\":{},\"warnings\":{},\"ok\":{}}}\n", queues, unsafe,
                    failed_groups, warnings, code == 0);
  out = json ? js : text;
  return code;
}

int RunCheckCommand(const CheckCommandOptions& options) {
  auto config = LoadMonitorConfig(options.config_path, DefaultEnvironment());
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
    return 2;
  }
  std::string out;
  int code = CheckConfig(*config, MakeAwsGroupClientsFactory(options.services, nullptr), options.output, out);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return code;
}

}  // namespace dlq
