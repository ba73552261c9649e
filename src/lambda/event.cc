#include "lambda/event.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>

#include "common/json_writer.h"
#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;

constexpr std::string_view kLookedFor =
    "looked for: \"source\":\"aws.cloudwatch\" with \"alarmData\" (alarm Lambda action); "
    "\"Records\"[].\"Sns\".\"Message\" (alarm via SNS); \"detail-type\":\"CloudWatch Alarm State Change\" or "
    "\"Scheduled Event\" (EventBridge); \"queues\" or \"policy\" (direct invoke)";

std::optional<std::string_view> Str(const element& e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

void AddQueue(std::vector<std::string>& out, std::string_view q) {
  if (q.empty()) return;
  if (std::find(out.begin(), out.end(), q) == out.end()) out.emplace_back(q);
}

// Lambda action / EventBridge: configuration.metrics[].metricStat.metric.dimensions{QueueName}.
void QueuesFromConfiguration(const element& configuration, std::vector<std::string>& out) {
  array metrics;
  if (configuration["metrics"].get_array().get(metrics) != simdjson::SUCCESS) return;
  for (element m : metrics) {
    element dims;
    if (m.at_pointer("/metricStat/metric/dimensions").get(dims) != simdjson::SUCCESS) continue;
    if (auto q = Str(dims, "QueueName")) AddQueue(out, *q);
  }
}

// SNS alarm message: Dimensions is [{"name":...,"value":...}].
void QueuesFromSnsDimensions(const element& dims, std::vector<std::string>& out) {
  array list;
  if (dims.get_array().get(list) != simdjson::SUCCESS) return;
  for (element d : list) {
    auto name = Str(d, "name");
    auto value = Str(d, "value");
    if (name && value && *name == "QueueName") AddQueue(out, *value);
  }
}

Status NoQueue(std::string_view what, std::string_view alarm) {
  return InvalidArgument(
      fmt::format("{} event for alarm '{}' names no queue: looked for a \"QueueName\" dimension in "
                  "its metric or in any of its metrics",
                  what, alarm));
}

Result<LambdaEvent> ParseAlarmFields(LambdaEventKind kind, const element& data, std::string_view what) {
  LambdaEvent ev;
  ev.kind = kind;
  if (auto n = Str(data, "alarmName")) ev.alarm_name = std::string(*n);
  std::string_view state;
  if (data.at_pointer("/state/value").get_string().get(state) != simdjson::SUCCESS) {
    return InvalidArgument(fmt::format("{} event: missing state.value", what));
  }
  ev.alarm_state = std::string(state);
  element configuration;
  if (data["configuration"].get(configuration) == simdjson::SUCCESS) QueuesFromConfiguration(configuration, ev.queues);
  if (ev.queues.empty() && ev.ShouldArchive()) return NoQueue(what, ev.alarm_name);
  return ev;
}

Result<LambdaEvent> ParseSnsAlarm(std::string_view message) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(message);
  element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return InvalidArgument("alarm via SNS: Records[0].Sns.Message is not a JSON object");
  }
  LambdaEvent ev;
  ev.kind = LambdaEventKind::kAlarmSns;
  if (auto n = Str(root, "AlarmName")) ev.alarm_name = std::string(*n);
  auto state = Str(root, "NewStateValue");
  if (!state) {
    return InvalidArgument(
        "SNS message is not a CloudWatch alarm: looked for \"AlarmName\", \"NewStateValue\" and \"Trigger\"");
  }
  ev.alarm_state = std::string(*state);
  element trigger;
  if (root["Trigger"].get(trigger) == simdjson::SUCCESS) {
    element dims;
    if (trigger["Dimensions"].get(dims) == simdjson::SUCCESS) QueuesFromSnsDimensions(dims, ev.queues);
    array metrics;
    if (trigger["Metrics"].get_array().get(metrics) == simdjson::SUCCESS) {
      for (element m : metrics) {
        element d;
        if (m.at_pointer("/MetricStat/Metric/Dimensions").get(d) == simdjson::SUCCESS) {
          QueuesFromSnsDimensions(d, ev.queues);
        }
      }
    }
  }
  if (ev.queues.empty() && ev.ShouldArchive()) return NoQueue("alarm via SNS", ev.alarm_name);
  return ev;
}

Result<LambdaPolicy> ParsePolicy(const element& p) {
  if (!p.is_object()) return InvalidArgument("direct invoke: \"policy\" must be an object");
  LambdaPolicy policy;
  std::string_view select = "all";
  element sel;
  if (p["select"].get(sel) == simdjson::SUCCESS) {
    if (sel.get_string().get(select) != simdjson::SUCCESS) {
      return InvalidArgument("direct invoke: policy.select must be a string");
    }
  }
  if (select == "all") {
    policy.selection.kind = SelectionKind::kAll;
  } else if (select == "older_than" || select == "expiring_within") {
    policy.selection.kind = select == "older_than" ? SelectionKind::kOlderThan : SelectionKind::kExpiringWithin;
    auto window = Str(p, "window");
    auto parsed = window ? ParseDuration(*window) : std::nullopt;
    if (!parsed || parsed->count() <= 0) {
      return InvalidArgument(fmt::format(
          "direct invoke: policy.select \"{}\" needs \"window\", a duration such as \"1h\" or \"2d\"", select));
    }
    policy.selection.window = *parsed;
  } else {
    return InvalidArgument(fmt::format(
        "direct invoke: policy.select is \"{}\"; expected \"all\", \"older_than\" or \"expiring_within\"", select));
  }
  element max;
  if (p["max_messages"].get(max) == simdjson::SUCCESS) {
    uint64_t n = 0;
    if (max.get_uint64().get(n) != simdjson::SUCCESS) {
      return InvalidArgument("direct invoke: policy.max_messages must be a non-negative integer");
    }
    policy.max_messages = n;
  }
  return policy;
}

Result<LambdaEvent> ParseDirect(const element& root) {
  LambdaEvent ev;
  ev.kind = LambdaEventKind::kDirect;
  element queues;
  if (root["queues"].get(queues) == simdjson::SUCCESS) {
    array list;
    if (queues.get_array().get(list) != simdjson::SUCCESS) {
      return InvalidArgument("direct invoke: \"queues\" must be an array of queue names or URLs");
    }
    for (element q : list) {
      std::string_view s;
      if (q.get_string().get(s) != simdjson::SUCCESS || s.empty()) {
        return InvalidArgument("direct invoke: every entry of \"queues\" must be a non-empty string");
      }
      AddQueue(ev.queues, s);
    }
  }
  element policy;
  if (root["policy"].get(policy) == simdjson::SUCCESS) {
    DLQ_ASSIGN_OR_RETURN(LambdaPolicy p, ParsePolicy(policy));
    ev.policy = p;
  }
  element hop;
  if (root["hop"].get(hop) == simdjson::SUCCESS) {
    int64_t n = 0;
    if (hop.get_int64().get(n) != simdjson::SUCCESS || n < 0 || n > 1000) {
      return InvalidArgument("direct invoke: \"hop\" must be an integer from 0 to 1000");
    }
    ev.hop = static_cast<int>(n);
  }
  return ev;
}

}  // namespace

std::string_view LambdaEventKindName(LambdaEventKind kind) {
  switch (kind) {
    case LambdaEventKind::kAlarmAction: return "alarm";
    case LambdaEventKind::kAlarmSns: return "alarm_sns";
    case LambdaEventKind::kAlarmEventBridge: return "alarm_eventbridge";
    case LambdaEventKind::kSchedule: return "schedule";
    case LambdaEventKind::kDirect: return "direct";
  }
  return "unknown";
}

bool LambdaEvent::ShouldArchive() const {
  switch (kind) {
    case LambdaEventKind::kAlarmAction:
    case LambdaEventKind::kAlarmSns:
    case LambdaEventKind::kAlarmEventBridge: return alarm_state == "ALARM";
    default: return true;
  }
}

Result<LambdaEvent> ParseLambdaEvent(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return InvalidArgument(fmt::format("event is not valid JSON ({})", simdjson::error_message(err)));
  }
  if (!root.is_object()) return InvalidArgument(fmt::format("event is not a JSON object; {}", kLookedFor));

  auto source = Str(root, "source");
  auto detail_type = Str(root, "detail-type");
  if (detail_type) {
    element detail;
    if (root["detail"].get(detail) != simdjson::SUCCESS || !detail.is_object()) {
      return InvalidArgument(fmt::format("EventBridge event \"{}\" has no \"detail\" object", *detail_type));
    }
    if (*detail_type == "CloudWatch Alarm State Change") {
      return ParseAlarmFields(LambdaEventKind::kAlarmEventBridge, detail, "EventBridge alarm state change");
    }
    if (*detail_type == "Scheduled Event") {
      LambdaEvent ev;
      ev.kind = LambdaEventKind::kSchedule;
      return ev;
    }
    return InvalidArgument(fmt::format("unsupported EventBridge detail-type \"{}\"; {}", *detail_type, kLookedFor));
  }
  if (source && *source == "aws.cloudwatch") {
    element data;
    if (root["alarmData"].get(data) != simdjson::SUCCESS || !data.is_object()) {
      return InvalidArgument("CloudWatch alarm action event (source aws.cloudwatch) has no \"alarmData\" object");
    }
    return ParseAlarmFields(LambdaEventKind::kAlarmAction, data, "CloudWatch alarm action");
  }
  element records;
  if (root["Records"].get(records) == simdjson::SUCCESS) {
    std::string_view message;
    if (records.at_pointer("/0/Sns/Message").get_string().get(message) != simdjson::SUCCESS) {
      return InvalidArgument(fmt::format("\"Records\" without Records[0].Sns.Message (a string); {}", kLookedFor));
    }
    return ParseSnsAlarm(message);
  }
  element unused;
  if (root["queues"].get(unused) == simdjson::SUCCESS || root["policy"].get(unused) == simdjson::SUCCESS) {
    return ParseDirect(root);
  }
  return InvalidArgument(fmt::format("unrecognized event; {}", kLookedFor));
}

std::string BuildDirectInvokePayload(const std::vector<std::string>& queues, const std::optional<LambdaPolicy>& policy,
                                     int hop) {
  JsonWriter w;
  w.BeginObject().Key("queues").BeginArray();
  for (const std::string& q : queues) w.String(q);
  w.EndArray();
  if (policy) {
    const char* select = policy->selection.kind == SelectionKind::kAll         ? "all"
                         : policy->selection.kind == SelectionKind::kOlderThan ? "older_than"
                                                                               : "expiring_within";
    w.Key("policy").BeginObject().Key("select").String(select);
    if (policy->selection.kind != SelectionKind::kAll) {
      w.Key("window").String(fmt::format("{}s", policy->selection.window.count()));
    }
    w.Key("max_messages").Uint(policy->max_messages).EndObject();
  }
  w.Key("hop").Int(hop).EndObject();
  return w.Take();
}

}  // namespace dlq
