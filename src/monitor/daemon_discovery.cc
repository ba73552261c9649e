#include "monitor/daemon_discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "common/log.h"
#include "monitor/alarm_plan.h"
#include "monitor/daemon_state.h"
#include "monitor/shard.h"
#include "monitor/state_store.h"

namespace dlq {

using daemon_internal::GroupState;
using daemon_internal::QueueState;

namespace {

// How far an (auto) expiry threshold may move before alarm_configured is
// logged again: a backlog of 300 messages at the assumed 5 msg/s.
constexpr double kConfiguredThresholdTolerance = 60;

// Whether the alarms planned as `key` (the specs less the expiry threshold)
// with `threshold` differ enough from what alarm_configured last said to say it again.
bool ConfigurationChanged(const QueueAlarms& alarms, const std::string& key, double threshold) {
  return alarms.logged_key != key || std::abs(threshold - alarms.logged_threshold) > kConfiguredThresholdTolerance;
}

std::string SpecKeyLessThreshold(const AlarmSpec& s) {
  AlarmSpec copy = s;
  copy.threshold = 0;
  return SpecKey(copy);
}

// The webhook of a destination check that starts failing (`ok` false) or
// recovers (doc/metrics.md): the group stands where a queue would.
AlarmNotification DestinationNotification(const GroupConfig& g, const std::string& uri, const DestinationStatus& now,
                                          bool was_checked, const std::string& region) {
  AlarmNotification n;
  n.group = g.name;
  n.destination = uri;
  n.region = region;
  n.alarm_name = g.name + "-destination";
  n.alarm_description = fmt::format("dlq-archive destination check of group {} ({})", g.name, uri);
  n.old_state = !was_checked ? "INSUFFICIENT_DATA" : now.ok ? "ALARM" : "OK";
  n.new_state = now.ok ? "OK" : "ALARM";
  n.reason = now.ok ? fmt::format("destination {} can be written again", uri)
                    : fmt::format(
                          "destination {} failed its check ({}): {}; this group archives nothing until it "
                          "passes",
                          uri, now.code, now.error);
  n.time = now.checked_at.value_or(SystemTime{});
  n.metric_name = "DestinationWritable";
  n.metric_value = now.ok ? 1 : 0;
  n.threshold = 1;
  n.comparison = "LessThanThreshold";
  return n;
}

// A spec key with its threshold (the second field from the end) left out.
std::string KeyWithoutThreshold(std::string_view key) {
  const size_t last = key.rfind('|');
  if (last == std::string_view::npos || last == 0) return std::string(key);
  const size_t before = key.rfind('|', last - 1);
  if (before == std::string_view::npos) return std::string(key);
  return std::string(key.substr(0, before)).append(key.substr(last));
}

// Whether an alarm kept under `kept_key` is `spec`'s (with `any_threshold`,
// whatever its threshold).
bool SameSpec(std::string_view kept_key, const AlarmSpec& spec, bool any_threshold) {
  const std::string key = SpecKey(spec);
  return any_threshold ? KeyWithoutThreshold(kept_key) == KeyWithoutThreshold(key) : kept_key == key;
}

// A new alarm for `spec`, with `old`'s state, periods and history when it is
// the same alarm (any threshold with `any_threshold`).
std::unique_ptr<Alarm> Renewed(const std::optional<AlarmSpec>& spec, const Alarm* old, bool any_threshold) {
  if (!spec) return nullptr;
  auto fresh = std::make_unique<Alarm>(*spec);
  if (old != nullptr && SameSpec(SpecKey(old->spec()), *spec, any_threshold)) fresh->Restore(old->Snapshot());
  return fresh;
}

// Puts back the kept state of `alarm` when it was kept under the same spec
// (with `any_threshold`, an auto threshold, whatever its threshold was: it
// follows the queue's depth).
void RestoreAlarm(Alarm* alarm, const QueueRecord& kept, bool any_threshold = false) {
  if (alarm == nullptr) return;
  for (const StoredAlarm& a : kept.alarms) {
    if (a.name == alarm->spec().name && SameSpec(a.spec_key, alarm->spec(), any_threshold)) alarm->Restore(a.snapshot);
  }
}

// The queue's count at its last collection (kept across restarts in its
// history): the backlog an auto threshold's drain time is derived from.
QueueLoad LoadOf(const QueueObservation& seen) {
  const std::optional<QueueSample> s = seen.history.Newest();
  if (!s || s->visible < 0 || s->not_visible < 0) return {};
  return {s->visible + s->not_visible + std::max<int64_t>(s->delayed, 0), "queued at the last collection"};
}

}  // namespace

DaemonDiscovery::DaemonDiscovery(const MonitorConfig& config, const DaemonOptions& options, Notifier& notifier,
                                 DaemonMetrics& metrics, daemon_internal::WatchedGroups& watched,
                                 DaemonStateKeeper& state)
    : config_(config), options_(options), notifier_(notifier), metrics_(metrics), watched_(watched), state_(state) {}

void DaemonDiscovery::CheckDestination(GroupState& g, SystemTime now, bool locked) {
  DestinationStatus d;
  d.checked = true;
  d.checked_at = now;
  Status error;
  const std::string uri = g.clients->destination_uri.empty() ? g.config.destination : g.clients->destination_uri;
  auto check = g.clients->store != nullptr ? g.clients->store->CheckWritable()
                                           : Result<DestinationCheck>(FailedPrecondition("no object store"));
  if (!check.ok()) {
    error = check.status();
    d.ok = false;
    d.error = error.ToString();
    d.error_class = std::string(ErrorCodeName(error.code()));
    d.code = error.aws() && !error.aws()->error_code.empty() ? error.aws()->error_code : d.error_class;
    Log().Log(LogLevel::kError, "destination_check_failed",
              {{"group", g.config.name},
               {"destination", uri},
               {"code", d.code},
               {"error", d.error},
               {"consequence", "this group archives nothing until the check passes (re-checked every discovery)"}});
  } else {
    d.confirmed = check->confirmed;
    d.note = check->note;
    if (!d.confirmed) {
      Log().Log(LogLevel::kWarn, "destination_unconfirmed",
                {{"group", g.config.name}, {"destination", uri}, {"note", d.note}});
    } else if (g.destination.checked && !g.destination.ok) {
      Log().Log(LogLevel::kInfo, "destination_recovered", {{"group", g.config.name}, {"destination", uri}});
    }
  }
  metrics_.destination_up.WithLabels({g.config.name}).Set(d.ok ? 1 : 0);
  // A webhook on the first failure and on recovery, not on every repeat.
  const bool was_failing = g.destination.checked && !g.destination.ok;
  if (d.ok == was_failing) {
    AlarmNotification n = DestinationNotification(g.config, uri, d, g.destination.checked, g.clients->default_region);
    if (Status st = notifier_.Notify(n); !st.ok()) {
      Log().Log(LogLevel::kError, "notify_failed",
                {{"group", g.config.name}, {"alarm", n.alarm_name}, {"error", st.ToString()}});
    }
  }
  if (locked) {
    g.destination = std::move(d);
    g.destination_error = error;
    return;
  }
  MutexLock lock(watched_.mu);
  g.destination = std::move(d);
  g.destination_error = error;
}

void DaemonDiscovery::Discover(GroupState& g, SystemTime now) {
  if (g.destination.checked && !g.destination.ok && g.destination.checked_at &&
      now - *g.destination.checked_at >= config_.discovery_interval) {
    CheckDestination(g, now, /*locked=*/false);
  }
  const bool first_discovery = !g.last_discovery;
  auto found = DiscoverQueues(*g.clients->sqs, g.config);
  if (!found.ok()) {
    const std::string error = found.status().ToString();
    {
      MutexLock lock(watched_.mu);  // QueuesJson reads it
      g.error = error;
    }
    Log().Log(LogLevel::kError, "discovery_failed", {{"group", g.config.name}, {"error", error}});
    return;  // keep watching what was found before
  }
  g.last_discovery = now;
  if (found->empty() && (first_discovery || !g.empty)) {
    Log().Log(LogLevel::kWarn, "group_empty",
              {{"group", g.config.name},
               {"warning", "the group's selectors (queues, prefixes, regex, discover) match no queue"}});
  }
  std::string overlap_error = ResolveOverlaps(g, *found);
  {
    MutexLock lock(watched_.mu);
    g.error = std::move(overlap_error);
  }
  std::map<std::string, std::shared_ptr<QueueState>> next;
  size_t other_shards = 0;
  for (DiscoveredQueue& dq : *found) {
    if (dq.region.empty()) dq.region = g.clients->default_region;
    // Another replica watches, alarms, archives and notifies for it.
    if (!OwnsKey(config_.shard, ShardKey(dq))) {
      ++other_shards;
      continue;
    }
    next[dq.url] = Watch(g, dq);
  }
  Replace(g, std::move(next), other_shards);
}

std::string DaemonDiscovery::ResolveOverlaps(GroupState& g, std::vector<DiscoveredQueue>& found) {
  std::vector<GroupState*> all;
  {
    MutexLock lock(watched_.mu);
    for (auto& other : watched_.groups) all.push_back(other.get());
  }
  // What the other groups watch now, and what this one found.
  std::vector<const GroupConfig*> configs;
  std::vector<std::vector<DiscoveredQueue>> watched(all.size());
  std::vector<std::vector<DiscoveredQueue>*> lists;
  for (size_t i = 0; i < all.size(); ++i) {
    configs.push_back(&all[i]->config);
    if (all[i] == &g) {
      lists.push_back(&found);
      continue;
    }
    for (auto& [url, q] : all[i]->queues) {
      MutexLock lock(q->mu);
      watched[i].push_back(q->id.dq);
    }
    lists.push_back(&watched[i]);
  }
  std::string error;
  for (const GroupOverlap& o : ResolveGroupOverlaps(configs, lists)) {
    if (o.kept != g.config.name && o.dropped != g.config.name) continue;
    Log().Log(o.error() ? LogLevel::kError : LogLevel::kInfo, "queue_in_two_groups",
              {{"queue", o.queue}, {"group", o.kept}, {"other_group", o.dropped}, {"message", o.Message()}});
    if (o.error() && o.dropped == g.config.name) error += (error.empty() ? "" : "; ") + o.Message();
    if (o.kept != g.config.name) continue;
    // This group wins a queue another group watched: it carries on with its state.
    for (GroupState* other : all) {
      if (other->config.name != o.dropped) continue;
      MutexLock lock(watched_.mu);
      if (auto it = other->queues.find(o.url); it != other->queues.end()) {
        g.queues.emplace(o.url, it->second);
        other->queues.erase(it);
      }
    }
  }
  return error;
}

std::shared_ptr<QueueState> DaemonDiscovery::Watch(const GroupState& g, const DiscoveredQueue& dq) {
  std::shared_ptr<QueueState> q;
  if (auto it = g.queues.find(dq.url); it != g.queues.end()) {
    q = it->second;
  } else {
    q = NewQueue(g.config.name, dq);
  }
  QueueLoad load;
  {
    MutexLock lock(q->mu);
    load = LoadOf(q->seen);
  }
  QueueAlarmPlan plan = PlanAlarms(config_, g.config, dq, options_.plan, load);
  std::string key = (plan.expiry ? SpecKey(*plan.expiry) : "-") + "/" + (plan.depth ? SpecKey(*plan.depth) : "-");
  // An auto threshold follows the queue's depth: when only it moved, the
  // alarm keeps its state and history (evaluated against the new threshold
  // from the next cycle on); so does an alarm whose spec did not change.
  const bool auto_threshold = g.config.alarms.expiry.threshold_auto;
  MutexLock lock(q->mu);
  q->id.group = g.config.name;
  q->id.dq = dq;
  q->id.clients = *g.clients;
  q->id.drain = g.config.ToDrainOptions();
  q->id.drain.max_messages = options_.plan.max_messages_per_run;
  q->alarms.expiry_action = plan.expiry_action;
  q->alarms.depth_action = plan.depth_action;
  q->alarms.expiry_selection = plan.expiry_selection;
  q->alarms.depth_selection = plan.depth_selection;
  q->id.safety_margin = g.config.alarms.expiry.safety_margin;
  const bool fresh_alarms = q->alarms.spec_key != key;
  if (fresh_alarms) {
    q->alarms.spec_key = key;
    q->alarms.expiry = Renewed(plan.expiry, q->alarms.expiry.get(), auto_threshold);
    q->alarms.depth = Renewed(plan.depth, q->alarms.depth.get(), /*any_threshold=*/false);
    q->id.expiry_threshold = plan.expiry ? plan.expiry->threshold : 0;
    const std::string logged_key =
        (plan.expiry ? SpecKeyLessThreshold(*plan.expiry) : "-") + "/" + (plan.depth ? SpecKey(*plan.depth) : "-");
    if (plan.expiry && ConfigurationChanged(q->alarms, logged_key, plan.expiry->threshold)) {
      q->alarms.logged_key = logged_key;
      q->alarms.logged_threshold = plan.expiry->threshold;
      Log().Log(LogLevel::kInfo, "alarm_configured",
                {{"queue", dq.name},
                 {"alarm", plan.expiry->name},
                 {"threshold", plan.expiry->threshold},
                 {"threshold_source", plan.threshold_source}});
    }
  }
  if (q->restored) {
    if (fresh_alarms) {
      RestoreAlarm(q->alarms.expiry.get(), *q->restored, auto_threshold);
      RestoreAlarm(q->alarms.depth.get(), *q->restored);
    }
    q->restored.reset();
  }
  return q;
}

std::shared_ptr<QueueState> DaemonDiscovery::NewQueue(const std::string& group, const DiscoveredQueue& dq) {
  auto q = std::make_shared<QueueState>();
  {
    MutexLock lock(q->mu);
    q->seen.history = QueueHistory(options_.history_samples);
  }
  const bool restored = state_.Restore(*q, group, dq);
  // Both outcomes exist from the start, so increase() sees the first failure.
  metrics_.archive_runs_total.WithLabels({dq.name, dq.region, "ok"});
  metrics_.archive_runs_total.WithLabels({dq.name, dq.region, "error"});
  Log().Log(LogLevel::kInfo, "queue_watched",
            {{"group", group},
             {"queue", dq.name},
             {"retention_s", static_cast<int64_t>(dq.retention.count())},
             {"source_retention_s", static_cast<int64_t>(dq.MaxSourceRetention().count())},
             {"state", restored ? "restored" : "new"}});
  return q;
}

void DaemonDiscovery::Replace(GroupState& g, QueueMap next, size_t other_shards) {
  for (auto& [url, q] : g.queues) {
    if (!next.count(url)) {
      Log().Log(LogLevel::kInfo, "queue_unwatched", {{"group", g.config.name}, {"queue", q->id.dq.name}});
      metrics_.RemoveQueue(q->id.dq.name, q->id.dq.region);
    }
  }
  if (config_.shard.count > 1) {
    Log().Log(LogLevel::kInfo, "shard_assignment",
              {{"group", g.config.name},
               {"shard", FormatShardSpec(config_.shard)},
               {"owned", static_cast<int64_t>(next.size())},
               {"other_shards", static_cast<int64_t>(other_shards)}});
  }
  MutexLock lock(watched_.mu);
  g.empty = next.empty() && other_shards == 0;
  g.other_shards = other_shards;
  g.queues = std::move(next);
}

}  // namespace dlq
