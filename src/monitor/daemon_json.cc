#include "monitor/daemon_json.h"

#include <chrono>
#include <optional>

#include "common/time_util.h"

namespace dlq {
namespace {

// An ISO 8601 time or null.
void WriteOptTime(JsonWriter& w, const std::optional<SystemTime>& t) {
  if (t) {
    w.String(FormatIso8601(*t));
  } else {
    w.Null();
  }
}

// A queue's last archive run: {"time", "archived", "ok"}, or null before the first.
void WriteLastRun(JsonWriter& w, const std::optional<SystemTime>& at, uint64_t archived, bool ok) {
  if (!at) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("time").String(FormatIso8601(*at));
  w.Key("archived").Uint(archived);
  w.Key("ok").Bool(ok);
  w.EndObject();
}

void WriteLastError(JsonWriter& w, const std::optional<ArchiveError>& e) {
  if (!e) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("time").String(FormatIso8601(e->time));
  w.Key("code").String(e->code);
  w.Key("class").String(e->error_class);
  w.Key("message").String(e->message);
  w.EndObject();
}

// The queue's identity and what the collections saw.
void WriteQueueSeen(JsonWriter& w, const QueueIdentity& id, const QueueObservation& seen) {
  w.Key("group").String(id.group);
  w.Key("queue").String(id.dq.name);
  w.Key("url").String(id.dq.url);
  w.Key("region").String(id.dq.region);
  w.Key("fifo").Bool(id.dq.fifo);
  w.Key("retention_s").Int(id.dq.retention.count());
  w.Key("source_retention_s").Int(id.dq.MaxSourceRetention().count());
  w.Key("sources").BeginArray();
  for (const RedriveSource& src : id.dq.redrive_sources) {
    w.BeginObject().Key("name").String(src.name).Key("retention_s").Int(src.retention.count()).EndObject();
  }
  w.EndArray();
  w.Key("messages").BeginObject();
  w.Key("visible").Int(seen.visible).Key("not_visible").Int(seen.not_visible).Key("delayed").Int(seen.delayed);
  w.EndObject();
  w.Key("nearest_expiry");
  WriteOptTime(w, seen.nearest_expiry);
  if (!seen.expiry_unknown.empty()) w.Key("expiry_unknown").String(seen.expiry_unknown);
  w.Key("oldest_sent");
  WriteOptTime(w, seen.oldest_sent);
  w.Key("last_empty");
  WriteOptTime(w, seen.last_empty);
  w.Key("collect_error").String(seen.collect_error);
}

void WriteArchiveRuns(JsonWriter& w, const QueueArchiveRuns& a) {
  w.Key("archive").BeginObject();
  w.Key("runs").Uint(a.runs);
  w.Key("archived").Uint(a.archived);
  w.Key("failed_runs").Uint(a.failed_runs);
  w.Key("consecutive_failures").Uint(a.consecutive_failures);
  w.Key("failing").Bool(a.consecutive_failures > 0);
  w.Key("running").Bool(a.queued);
  w.Key("more").Bool(a.more);
  WriteLastRun(w.Key("last_run"), a.last_run_at, a.last_run_archived, a.last_run_ok);
  w.Key("last_error");
  WriteLastError(w, a.last_error);
  w.EndObject();
}

void WriteGroup(JsonWriter& w, const QueuesJsonGroup& g) {
  w.BeginObject();
  w.Key("name").String(g.name);
  w.Key("error").String(g.error);
  w.Key("queues").Uint(g.queues);
  w.Key("other_shards").Uint(g.other_shards);
  w.Key("warning").String(g.empty ? "the group's selectors match no queue" : "");
  w.Key("destination").BeginObject();
  w.Key("uri").String(g.destination_uri);
  w.Key("checked").Bool(g.destination.checked);
  w.Key("ok").Bool(g.destination.ok);
  w.Key("confirmed").Bool(g.destination.confirmed);
  w.Key("checked_at");
  WriteOptTime(w, g.destination.checked_at);
  w.Key("code").String(g.destination.code);
  w.Key("error").String(g.destination.error);
  w.Key("note").String(g.destination.note);
  w.EndObject();
  w.EndObject();
}

// The overview shows times to the millisecond, as its JSON does, so the page's
// order (by nearest expiry) is the same whether it comes from the JSON or not.
SystemTime WholeMillis(SystemTime t) {
  return std::chrono::floor<std::chrono::milliseconds>(t);
}

}  // namespace

QueuesJsonWriter::QueuesJsonWriter(bool history) : history_(history) {
  w_.BeginObject().Key("queues").BeginArray();
}

void QueuesJsonWriter::AddQueue(const QueueIdentity& id, const QueueObservation& seen, const QueueAlarms& alarms,
                                const QueueArchiveRuns& archive) {
  w_.BeginObject();
  WriteQueueSeen(w_, id, seen);
  WriteArchiveRuns(w_, archive);
  if (archive.consecutive_failures > 0) failing_.emplace_back(id.group, id.dq.name);
  WriteAlarms(alarms);
  w_.EndObject();
}

void QueuesJsonWriter::WriteAlarms(const QueueAlarms& alarms) {
  w_.Key("alarms").BeginArray();
  for (const Alarm* a : {alarms.expiry.get(), alarms.depth.get()}) {
    if (a == nullptr) continue;
    w_.BeginObject();
    w_.Key("name").String(a->spec().name);
    w_.Key("metric").String(a->spec().metric);
    w_.Key("state").String(AlarmStateName(a->state()));
    w_.Key("threshold").Double(a->spec().threshold);
    w_.Key("period_s").Int(a->spec().period.count());
    w_.Key("evaluation_periods").Int(a->spec().evaluation_periods);
    w_.Key("datapoints_to_alarm").Int(a->spec().datapoints_to_alarm);
    w_.Key("comparison").String(ComparisonName(a->spec().comparison));
    w_.Key("action").String(AlarmActionName(a == alarms.expiry.get() ? alarms.expiry_action : alarms.depth_action));
    w_.Key("reason").String(a->last_reason());
    if (history_) {
      w_.Key("history").BeginArray();
      for (const Transition& t : a->history()) {
        w_.BeginObject();
        w_.Key("from").String(AlarmStateName(t.from));
        w_.Key("to").String(AlarmStateName(t.to));
        w_.Key("time").String(FormatIso8601(t.time));
        w_.Key("reason").String(t.reason);
        w_.EndObject();
      }
      w_.EndArray();
    }
    w_.EndObject();
  }
  w_.EndArray();
}

std::string QueuesJsonWriter::Finish(const std::vector<QueuesJsonGroup>& groups, const ShardSpec& shard) {
  w_.EndArray();
  w_.Key("failing").BeginArray();
  for (const auto& [group, queue] : failing_)
    w_.BeginObject().Key("group").String(group).Key("queue").String(queue).EndObject();
  w_.EndArray();
  w_.Key("groups").BeginArray();
  for (const QueuesJsonGroup& g : groups) WriteGroup(w_, g);
  w_.EndArray();
  w_.Key("shard").BeginObject();
  w_.Key("index").Int(shard.index).Key("count").Int(shard.count);
  w_.EndObject();
  w_.EndObject();
  return w_.Take();
}

OverviewQueue OverviewRow(const QueueIdentity& id, const QueueObservation& seen, const QueueAlarms& alarms,
                          const QueueArchiveRuns& archive) {
  OverviewQueue o;
  o.group = id.group;
  o.queue = id.dq.name;
  o.region = id.dq.region;
  o.fifo = id.dq.fifo;
  o.retention_s = id.dq.retention.count();
  o.source_retention_s = id.dq.MaxSourceRetention().count();
  o.visible = seen.visible;
  o.not_visible = seen.not_visible;
  o.delayed = seen.delayed;
  if (seen.nearest_expiry) o.nearest_expiry = WholeMillis(*seen.nearest_expiry);
  o.expiry_unknown = seen.expiry_unknown;
  o.collect_error = !seen.collect_error.empty();
  o.archived = archive.archived;
  o.running = archive.queued;
  o.failing = archive.consecutive_failures > 0;
  if (o.failing && archive.last_error) o.error_code = archive.last_error->code;
  if (archive.last_run_at) {
    o.last_run = OverviewLastRun{
        .time = WholeMillis(*archive.last_run_at), .archived = archive.last_run_archived, .ok = archive.last_run_ok};
  }
  if (alarms.expiry)
    o.alarms.push_back({.kind = "expiry", .state = std::string(AlarmStateName(alarms.expiry->state()))});
  if (alarms.depth) o.alarms.push_back({.kind = "depth", .state = std::string(AlarmStateName(alarms.depth->state()))});
  return o;
}

}  // namespace dlq
