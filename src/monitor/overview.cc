#include "monitor/overview.h"

#include "common/json_writer.h"
#include "common/time_util.h"

namespace dlq {

std::string OverviewJson(const Overview& overview) {
  JsonWriter w;
  w.BeginObject().Key("queues").BeginArray();
  for (const OverviewQueue& q : overview.queues) {
    w.BeginObject();
    w.Key("group").String(q.group);
    w.Key("queue").String(q.queue);
    w.Key("region").String(q.region);
    w.Key("fifo").Bool(q.fifo);
    w.Key("retention_s").Int(q.retention_s);
    w.Key("source_retention_s").Int(q.source_retention_s);
    w.Key("visible").Int(q.visible).Key("not_visible").Int(q.not_visible).Key("delayed").Int(q.delayed);
    w.Key("nearest_expiry");
    if (q.nearest_expiry) {
      w.String(FormatIso8601(*q.nearest_expiry));
    } else {
      w.Null();
    }
    if (!q.expiry_unknown.empty()) w.Key("expiry_unknown").String(q.expiry_unknown);
    w.Key("collect_error").Bool(q.collect_error);
    w.Key("archived").Uint(q.archived);
    w.Key("running").Bool(q.running);
    w.Key("failing").Bool(q.failing);
    w.Key("error_code").String(q.error_code);
    w.Key("last_run");
    if (q.last_run) {
      w.BeginObject();
      w.Key("time").String(FormatIso8601(q.last_run->time));
      w.Key("archived").Uint(q.last_run->archived);
      w.Key("ok").Bool(q.last_run->ok);
      w.EndObject();
    } else {
      w.Null();
    }
    w.Key("alarms").BeginArray();
    for (const OverviewAlarm& a : q.alarms)
      w.BeginObject().Key("kind").String(a.kind).Key("state").String(a.state).EndObject();
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("groups").BeginArray();
  for (const OverviewGroup& g : overview.groups) {
    w.BeginObject().Key("name").String(g.name).Key("error").Bool(g.error).Key("problem").String(g.problem).EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace dlq
