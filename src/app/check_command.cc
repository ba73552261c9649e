#include "app/check_command.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : (v > 0 ? "\"inf\"" : "\"-inf\""); }

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

}  // namespace

int CheckConfig(const MonitorConfig& config, const GroupClientsFactory& factory, const std::string& output,
                std::string& out) {
  const bool json = output == "json";
  DaemonOptions dopts;
  int unsafe = 0, queues = 0, failed_groups = 0;
  std::string text, js = "{\"groups\":[";
  for (size_t gi = 0; gi < config.groups.size(); ++gi) {
    const GroupConfig& g = config.groups[gi];
    if (gi) js += ',';
    js += "{\"name\":";
    AppendJsonString(js, g.name);
    text += fmt::format("group {} -> {}\n", g.name, g.destination);
    auto clients = factory(g);
    Result<std::vector<DiscoveredQueue>> found =
        clients.ok() ? DiscoverQueues(*clients->sqs, g) : Result<std::vector<DiscoveredQueue>>(clients.status());
    if (!found.ok()) {
      ++failed_groups;
      text += fmt::format("  ERROR: {}\n", found.status().ToString());
      js += ",\"error\":";
      AppendJsonString(js, found.status().ToString());
      js += ",\"queues\":[]}";
      continue;
    }
    js += ",\"error\":null,\"queues\":[";
    if (found->empty()) text += "  (no queues matched)\n";
    for (size_t qi = 0; qi < found->size(); ++qi) {
      const DiscoveredQueue& q = (*found)[qi];
      ++queues;
      QueueAlarmPlan plan = PlanAlarms(config, g, q, dopts);
      auto report = AnalyzeQueueSafety(plan.safety);
      text += fmt::format("  queue {} ({}) retention {} s ({})\n", q.name, q.fifo ? "fifo" : "standard",
                          q.retention.count(), FormatDuration(q.retention));
      if (q.redrive_sources.empty()) text += "    sources: none found (retention unknown)\n";
      for (const RedriveSource& s : q.redrive_sources) {
        text += fmt::format("    source {} retention {} s, maxReceiveCount {}\n", s.name, s.retention.count(),
                            s.max_receive_count);
      }
      if (plan.expiry) {
        text += fmt::format("    alarm {} [{}]\n", AlarmText(*plan.expiry), plan.threshold_source);
      } else {
        text += "    expiry alarm disabled\n";
      }
      if (plan.depth) text += fmt::format("    alarm {}\n", AlarmText(*plan.depth));
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
      for (const auto* a : {plan.expiry ? &*plan.expiry : nullptr, plan.depth ? &*plan.depth : nullptr}) {
        if (!a) continue;
        if (!first) js += ',';
        first = false;
        AppendAlarmJson(js, *a);
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
      if (!report->safe) ++unsafe;
      std::string rep = report->ToString();
      size_t start = 0;
      while (start < rep.size()) {
        size_t end = rep.find('\n', start);
        if (end == std::string::npos) end = rep.size();
        text += "    " + rep.substr(start, end - start) + "\n";
        start = end + 1;
      }
      js += fmt::format(",\"safe\":{},\"margin_s\":{},\"required_margin_s\":{},\"worst_case_arrival_to_archive_s\":{},"
                        "\"earliest_expiry_after_arrival_s\":{},\"detection_delay_s\":{},\"drain_time_s\":{},"
                        "\"reasons\":[",
                        report->safe, Num(report->margin_s), Num(report->required_margin_s),
                        Num(report->worst_case_arrival_to_archive_s), Num(report->earliest_expiry_after_arrival_s),
                        Num(report->detection_delay_s), Num(report->drain_time_s));
      for (size_t ri = 0; ri < report->reasons.size(); ++ri) {
        if (ri) js += ',';
        AppendJsonString(js, report->reasons[ri]);
      }
      js += "]}";
    }
    js += "]}";
  }
  int code = (unsafe > 0 || failed_groups > 0) ? 1 : 0;
  text += fmt::format("{} queue(s), {} unsafe, {} group(s) failed\n", queues, unsafe, failed_groups);
  js += fmt::format("],\"queues\":{},\"unsafe\":{},\"failed_groups\":{},\"ok\":{}}}\n", queues, unsafe, failed_groups,
                    code == 0);
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
