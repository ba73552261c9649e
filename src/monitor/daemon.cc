#include "monitor/daemon.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stop_token>
#include <unordered_map>

#include "archive/destination.h"
#include "cloudwatch/cloudwatch_client.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "monitor/daemon_archive_job.h"
#include "monitor/daemon_discovery.h"
#include "monitor/daemon_internal.h"
#include "monitor/daemon_saved_state.h"
#include "monitor/daemon_state.h"
#include "monitor/daemon_submit.h"
#include "monitor/safety.h"
#include "monitor/state_store.h"
#include "query/fingerprint.h"

namespace dlq {

using daemon_internal::GroupState;
using daemon_internal::QueueState;
using daemon_internal::WatchedGroups;

std::string SpecKey(const AlarmSpec& s) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}", s.name, s.metric, s.period.count(), s.evaluation_periods,
                     s.datapoints_to_alarm, s.threshold, static_cast<int>(s.missing));
}

namespace {

using std::chrono::seconds;

double Secs(Duration d) {
  return std::chrono::duration<double>(d).count();
}

int64_t IntAttr(const std::map<std::string, std::string>& a, const std::string& name) {
  auto it = a.find(name);
  if (it == a.end()) return -1;
  return ParseInt64(it->second).value_or(-1);
}

// A collection's message counts (-1: not reported).
struct Counts {
  int64_t visible = -1, not_visible = -1, delayed = -1;
};

// The age of the queue's oldest message per CloudWatch, when the group asks
// for it (a cloudwatch client is present) and CloudWatch has a datapoint.
std::optional<double> CloudWatchAge(const QueueIdentity& id, SystemTime now) {
  if (id.clients.cloudwatch == nullptr) return std::nullopt;
  auto query = SqsQueueMetricQuery("age", id.dq.name, "ApproximateAgeOfOldestMessage", "Maximum", seconds(60));
  auto data = id.clients.cloudwatch->GetMetricData({query}, now - seconds(900), now);
  if (data.ok() && data->count("age") && !data->at("age").values.empty()) return data->at("age").values.back();
  return std::nullopt;
}

// The earliest a message can expire after arriving in the DLQ: the retention
// for FIFO (its clock restarts), retention - longest source retention for
// standard queues (unknown sources: the SQS maximum).
seconds EarliestAfterArrival(const DiscoveredQueue& dq) {
  const seconds src = dq.MaxSourceRetention().count() > 0 ? dq.MaxSourceRetention() : kSqsMaxRetention;
  return dq.fifo ? dq.retention : std::max(seconds(0), dq.retention - src);
}

std::optional<SystemTime> Later(std::optional<SystemTime> a, std::optional<SystemTime> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

// The nearest expiry of the messages the ledger does not know, when their
// arrival bounds it: they arrived after the queue was last seen empty, after
// the last complete pass started, and (CloudWatch) no earlier than the
// oldest message's age ago. With E = EarliestAfterArrival, the bound is that
// time + E; it is only used when E exceeds the alarm's margin (else a message
// can arrive with no time left, and only its SentTimestamp tells).
std::optional<SystemTime> ArrivalBound(const QueueObservation& seen, const QueueIdentity& id,
                                       std::optional<double> cw_age, SystemTime now) {
  const seconds earliest = EarliestAfterArrival(id.dq);
  if (earliest <= id.safety_margin) return std::nullopt;
  std::optional<SystemTime> arrived_after = Later(seen.last_empty, seen.learned_at);
  if (cw_age) {
    arrived_after =
        Later(arrived_after,
              now - std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(0.0, *cw_age))));
  }
  if (!arrived_after) return std::nullopt;
  return *arrived_after + earliest;
}

std::string UnknownReason(const QueueObservation& seen, const QueueIdentity& id) {
  if (!seen.learned_at && !seen.last_empty && id.dq.fifo) {
    return "not yet observed: the FIFO queue held messages when the daemon started and nothing bounds when they "
           "moved in (a FIFO DLQ is not received to learn: that would hold its groups)";
  }
  if (!seen.learned_at && !seen.last_empty) {
    return "not yet observed: the queue held messages when the daemon started and nothing bounds their arrival";
  }
  if (EarliestAfterArrival(id.dq) <= id.safety_margin) {
    return "not yet observed: messages arrived since the last look, and the DLQ keeps them no longer than their "
           "source plus the margin, so one can arrive with no time left";
  }
  return "not yet observed: messages arrived since the last look";
}

// Records a collection's counts and updates the nearest-expiry estimate from
// the ledger (exact for the messages it knows) and the arrival bound (for
// the others). Returns the expiry alarm's sample, the age the oldest message
// may have, or nullopt while a learning pass is about to make a wholly
// unknown expiry known.
std::optional<double> Observe(QueueObservation& seen, const QueueIdentity& id, const Counts& c,
                              std::optional<double> cw_age, SystemTime now) {
  const DiscoveredQueue& dq = id.dq;
  const double retention = static_cast<double>(dq.retention.count());
  seen.visible = c.visible;
  seen.not_visible = c.not_visible;
  seen.delayed = c.delayed;
  seen.collect_error.clear();
  seen.expiry_unknown.clear();
  seen.learn_due = false;
  const bool counted = c.visible >= 0 && c.not_visible >= 0;
  const int64_t total = counted ? c.visible + c.not_visible + std::max<int64_t>(c.delayed, 0) : -1;
  std::optional<double> age_sample = 0.0;
  if (total == 0) {
    seen.last_empty = now;
    seen.nearest_expiry.reset();
    seen.oldest_sent.reset();
    seen.ledger.Clear();
    seen.pass_baseline = 0;
  } else {
    seen.ledger.PruneExpired(dq.retention, now);
    // Messages the ledger does not know: all of them until a complete pass,
    // then only when the count rose above its lowest since that pass.
    const bool unknown_arrivals = total < 0 || !seen.learned_at || total > seen.pass_baseline;
    if (total >= 0 && seen.pass_baseline >= 0) seen.pass_baseline = std::min(seen.pass_baseline, total);
    std::optional<SystemTime> nearest = seen.ledger.NearestExpiry(dq.retention);
    if (unknown_arrivals) {
      if (auto bound = ArrivalBound(seen, id, cw_age, now)) {
        nearest = nearest ? std::min(*nearest, *bound) : *bound;
      } else if (id.clients.store != nullptr && !seen.learn_failed && !dq.fifo) {
        // A learning pass runs now; until it reports, the alarm sees what is known.
        // Never for FIFO: the pass would hold each group it receives from
        // (FIFO delivers nothing more of a group with messages in flight),
        // and the clock restarts at the move, which receiving does not show.
        seen.learn_due = true;
        seen.expiry_unknown = UnknownReason(seen, id);
        if (!nearest && !seen.last_empty && !seen.learned_at) age_sample.reset();
      } else {
        // No way to look without archiving (no store, a failed pass, or a
        // FIFO DLQ with nothing that bounds its moves): a message may expire now.
        seen.expiry_unknown = UnknownReason(seen, id);
        nearest = now;
      }
    }
    if (!nearest && !seen.learn_due) {
      // Queued messages no pass saw (held by another consumer): a message may expire now.
      nearest = now;
      if (seen.expiry_unknown.empty()) seen.expiry_unknown = "not yet observed: the last pass saw none of them";
    }
    // Unknown: shown as "any moment (not yet observed)" with the reason.
    seen.nearest_expiry = nearest ? nearest : std::optional<SystemTime>(now);
    if (age_sample && nearest) age_sample = std::clamp(retention - Secs(*nearest - now), 0.0, retention);
    if (auto sent = seen.ledger.OldestSent()) seen.oldest_sent = sent;
  }
  seen.history.Add(
      {.time = now,
       .visible = c.visible,
       .not_visible = c.not_visible,
       .delayed = c.delayed,
       .expiry_in_s = seen.nearest_expiry ? std::optional<double>(Secs(*seen.nearest_expiry - now)) : std::nullopt});
  return age_sample;
}

void ExportQueueMetrics(DaemonMetrics& m, const DiscoveredQueue& dq, const QueueObservation& seen,
                        std::optional<double> cw_age, SystemTime now) {
  const std::string& name = dq.name;
  const std::string& region = dq.region;
  const double retention = static_cast<double>(dq.retention.count());
  m.queue_messages.WithLabels({name, region, "visible"}).Set(static_cast<double>(seen.visible));
  m.queue_messages.WithLabels({name, region, "not_visible"}).Set(static_cast<double>(seen.not_visible));
  m.queue_messages.WithLabels({name, region, "delayed"}).Set(static_cast<double>(seen.delayed));
  m.queue_retention_seconds.WithLabels({name, region}).Set(retention);
  m.queue_seconds_to_expiry.WithLabels({name, region})
      .Set(seen.nearest_expiry ? Secs(*seen.nearest_expiry - now) : retention);
  if (seen.oldest_sent)
    m.queue_oldest_age_seconds.WithLabels({name, region, "observed"}).Set(Secs(now - *seen.oldest_sent));
  if (cw_age) m.queue_oldest_age_seconds.WithLabels({name, region, "cloudwatch"}).Set(*cw_age);
}

struct FiredAlarm {
  const Alarm* alarm;
  Transition t;
};

// Evaluates one alarm (its sample already added); a copy-action alarm
// entering ALARM makes a copy due.
void EvaluateAlarm(QueueAlarms& alarms, Alarm& alarm, AlarmSettings::Action action, const Selection& selection,
                   SystemTime now, std::vector<FiredAlarm>& fired) {
  if (auto t = alarm.Evaluate(now)) {
    fired.push_back({&alarm, *t});
    if (t->to == AlarmState::kAlarm && action == AlarmSettings::Action::kCopy) {
      alarms.copy_selection = alarms.copy_due ? Selection{} : selection;  // both: the union, all
      alarms.copy_due = true;
    }
  }
}

// Feeds the queue's alarms a collection's samples, evaluates them and exports
// their states; returns their transitions, expiry first.
std::vector<FiredAlarm> EvaluateAlarms(DaemonMetrics& m, const DiscoveredQueue& dq, QueueAlarms& alarms,
                                       std::optional<double> age_sample, int64_t visible, SystemTime now) {
  std::vector<FiredAlarm> fired;
  if (alarms.expiry) {
    if (age_sample) alarms.expiry->AddSample(now, *age_sample);
    EvaluateAlarm(alarms, *alarms.expiry, alarms.expiry_action, alarms.expiry_selection, now, fired);
    m.SetAlarmState(dq.name, dq.region, alarms.expiry->spec().name,
                    std::string(AlarmStateName(alarms.expiry->state())));
  }
  if (alarms.depth) {
    if (visible >= 0) alarms.depth->AddSample(now, static_cast<double>(visible));
    EvaluateAlarm(alarms, *alarms.depth, alarms.depth_action, alarms.depth_selection, now, fired);
    m.SetAlarmState(dq.name, dq.region, alarms.depth->spec().name, std::string(AlarmStateName(alarms.depth->state())));
  }
  return fired;
}

// What the submit decision reads of a queue (its parts under its mutex).
SubmitState SubmitStateOf(const QueueIdentity& id, const QueueObservation& seen, const QueueAlarms& alarms,
                          const QueueArchiveRuns& archive, bool destination_ok, bool transitioned) {
  return SubmitState{.expiry_alarm = alarms.expiry && alarms.expiry->state() == AlarmState::kAlarm,
                     .depth_alarm = alarms.depth && alarms.depth->state() == AlarmState::kAlarm,
                     .expiry_action = alarms.expiry_action,
                     .depth_action = alarms.depth_action,
                     .expiry_selection = alarms.expiry_selection,
                     .depth_selection = alarms.depth_selection,
                     .archive_requested = archive.requested,
                     .copy_due = alarms.copy_due,
                     .copy_selection = alarms.copy_selection,
                     .queued = archive.queued,
                     .has_store = id.clients.store != nullptr,
                     .more = archive.more,
                     .last_submit = archive.last_submit,
                     .visible = seen.visible,
                     .not_visible = seen.not_visible,
                     .delayed = seen.delayed,
                     .destination_ok = destination_ok,
                     .transitioned = transitioned,
                     .learn_due = seen.learn_due && alarms.expiry != nullptr};
}

// Adds what a receive pass (learning or archiving) saw to the ledger; a
// complete pass saw every message queued at its start, so from then on only
// a count above the one at its submission means messages the ledger lacks.
void LearnFrom(QueueObservation& seen, const DiscoveredQueue& dq, const DaemonArchiveRunReport& r, SystemTime now) {
  seen.ledger.Merge(r.received, dq.retention, now);
  if (r.learn) seen.learn_failed = r.failed || (!r.complete && !r.result.stopped);
  if (!r.complete) return;
  seen.learned_at = r.started;
  seen.pass_baseline = seen.submitted_count;
  seen.oldest_sent = seen.ledger.OldestSent();
}

// What the ledger knows of our own receives, for the records of a run.
std::function<int(const std::string&)> PriorOwnReceives(const ArrivalLedger& ledger) {
  auto own = std::make_shared<std::unordered_map<std::string, int>>();
  for (const LedgerEntry& e : ledger.Save()) (*own)[e.message_id] = e.own_receives;
  return [own](const std::string& id) {
    auto it = own->find(id);
    return it == own->end() ? 0 : it->second;
  };
}

const char* SelectionName(SelectionKind kind) {
  return kind == SelectionKind::kAll ? "all" : kind == SelectionKind::kOlderThan ? "older-than" : "expiring-within";
}

// Logs an alarm transition and sends its notification.
void NotifyTransition(Notifier& notifier, const QueueState& q, const Alarm& alarm, const Transition& t,
                      const std::function<void(AlarmNotification&)>& add) {
  AlarmNotification n;
  n.queue = q.id.dq.name;
  n.queue_url = q.id.dq.url;
  n.region = q.id.dq.region;
  n.account_id = q.id.dq.account_id;
  n.alarm_name = alarm.spec().name;
  n.alarm_description = fmt::format("dlq-archive {} alarm of {}", alarm.spec().metric, q.id.dq.name);
  n.old_state = std::string(AlarmStateName(t.from));
  n.new_state = std::string(AlarmStateName(t.to));
  n.reason = t.reason;
  n.time = t.time;
  n.metric_name = alarm.spec().metric;
  n.metric_value = t.value;  // the datapoint cited in t.reason
  n.initial = t.initial;
  n.threshold = alarm.spec().threshold;
  n.comparison = std::string(ComparisonName(alarm.spec().comparison));
  if (add) add(n);
  Log().Log(
      t.to == AlarmState::kAlarm ? LogLevel::kWarn : LogLevel::kInfo, "alarm_transition",
      {{"queue", n.queue}, {"alarm", n.alarm_name}, {"from", n.old_state}, {"to", n.new_state}, {"reason", n.reason}});
  if (Status st = notifier.Notify(n); !st.ok()) {
    Log().Log(LogLevel::kError, "notify_failed",
              {{"queue", n.queue}, {"alarm", n.alarm_name}, {"error", st.ToString()}});
  }
}

}  // namespace

// ---- Daemon state.

Daemon::Daemon(MonitorConfig config, GroupClientsFactory factory, Notifier& notifier, Clock& clock,
               metrics::Registry& registry, DaemonMetrics& metrics, DaemonOptions options)
    : config_(std::move(config)),
      factory_(std::move(factory)),
      notifier_(notifier),
      clock_(clock),
      registry_(registry),
      metrics_(metrics),
      options_(std::move(options)),
      health_(clock, std::max<seconds>(seconds(60), config_.collection_interval * 5)),
      watched_(std::make_unique<WatchedGroups>()),
      view_(*watched_),
      state_(std::make_unique<DaemonStateKeeper>(options_, clock_, *watched_)),
      discovery_(std::make_unique<DaemonDiscovery>(config_, options_, notifier_, metrics_, *watched_, *state_)),
      causes_(std::make_unique<CauseWorker>(clock_, &metrics_)) {
  causes_->Start();
  SchedulerOptions so;
  so.global_concurrency = config_.concurrency_global;
  so.per_queue_concurrency = config_.concurrency_per_queue;
  scheduler_ = std::make_unique<Scheduler>(so, clock_);
  scheduler_->Start();
  state_->Open(config_);
  Reload(config_);
}

Daemon::~Daemon() {
  Stop();
  if (http_) http_->Stop();
}

void Daemon::Stop() {
  if (scheduler_) scheduler_->Stop();
  if (causes_) causes_->Stop();
}

void Daemon::WaitIdle() {
  scheduler_->WaitIdle();
  causes_->WaitIdle();
}

std::optional<CauseJob> Daemon::CauseJobFor(const GroupState& g, const QueueInfo& q) const {
  if (g.config.causes == GroupConfig::Causes::kOff || !g.clients || g.clients->logs == nullptr ||
      g.clients->lambda == nullptr || causes_->Disabled(g.config.name)) {
    return std::nullopt;
  }
  auto dest = ParseDestination(g.clients->destination_uri.empty() ? g.config.destination : g.clients->destination_uri);
  if (!dest.ok()) return std::nullopt;
  CauseJob job;
  job.group = g.config.name;
  job.dlq = q;
  job.archive_prefix = ArchivePrefix(*dest);
  job.named_log_groups = NamedConsumerLogs(g.config, q.name);
  job.samples = static_cast<size_t>(std::max(1, g.config.cause_samples));
  job.auto_mode = g.config.causes == GroupConfig::Causes::kAuto;
  job.clients = *g.clients;
  return job;
}

void Daemon::AddCauses(AlarmNotification& n, int64_t messages) const {
  if (messages >= 0) n.messages = messages;
  std::string base = config_.dashboard_url;  // control thread: config_ is its own
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (!base.empty()) n.dashboard_url = fmt::format("{}/#/queue/{}", base, UriEncode(n.queue));
  for (const CauseGroupSummary& g : causes_->TopGroups(n.queue, 3)) {
    NotificationGroup out;
    out.id = GroupId(g.key);
    out.key = g.key;
    out.messages = g.messages;
    if (!g.cause_type.empty() || !g.cause_message.empty()) {
      std::string first_line = g.cause_message.substr(0, g.cause_message.find('\n'));
      if (first_line.size() > 200) first_line = first_line.substr(0, 200) + "...";
      out.cause = g.cause_type.empty() ? first_line : g.cause_type + ": " + first_line;
    }
    out.no_cause = g.absence;
    out.answered = g.answered;
    out.found = g.found;
    if (!base.empty() && !g.example_id.empty()) {
      out.url = fmt::format("{}/message/{}", n.dashboard_url, UriEncode(g.example_id));
    }
    n.top_groups.push_back(std::move(out));
  }
}

int Daemon::http_port() const {
  return http_ ? http_->port() : 0;
}

void Daemon::Reload(MonitorConfig config) {
  if (causes_) causes_->EnableAll();  // causes: auto tries again: the permissions may be there now
  std::vector<std::unique_ptr<GroupState>> fresh;
  WatchedGroups& w = *watched_;
  MutexLock lock(w.mu);
  for (const GroupConfig& g : config.groups) {
    auto gs = std::make_unique<GroupState>();
    gs->config = g;
    auto clients = factory_(g);
    if (clients.ok()) {
      gs->clients = *clients;
      // The previous check of this group: a destination still failing is not notified again.
      for (auto& old : w.groups) {
        if (old->config.name == g.name) gs->destination = old->destination;
      }
      discovery_->CheckDestination(*gs, clock_.Now(), /*locked=*/true);
    } else {
      gs->error = clients.status().ToString();
      Log().Log(LogLevel::kError, "group_clients_failed", {{"group", g.name}, {"error", gs->error}});
    }
    // Keep the state (alarms, history, what runs saw) of queues still watched.
    for (auto& old : w.groups) {
      if (old->config.name == g.name) gs->queues = old->queues;
    }
    fresh.push_back(std::move(gs));
  }
  // Queues of groups that are gone stop being watched.
  for (auto& old : w.groups) {
    bool kept = std::any_of(fresh.begin(), fresh.end(), [&](auto& f) { return f->config.name == old->config.name; });
    if (kept) continue;
    metrics_.destination_up.RemoveLabels({old->config.name});
    for (auto& [url, q] : old->queues) metrics_.RemoveQueue(q->id.dq.name, q->id.dq.region);
  }
  w.groups = std::move(fresh);
  (void)metrics_.shard_info.RemoveLabels({std::to_string(w.shard.index), std::to_string(w.shard.count)});
  w.shard = config.shard;
  metrics_.shard_info.WithLabels({std::to_string(config.shard.index), std::to_string(config.shard.count)}).Set(1);
  config_ = std::move(config);
  ++generation_;
  if (options_.apply_webhooks) {
    if (Status st = options_.apply_webhooks(config_.webhooks); !st.ok()) {
      Log().Log(LogLevel::kError, "webhooks_reload_failed", {{"error", st.ToString()}, {"kept", "previous webhooks"}});
    }
  }
}

Status Daemon::ArchiveNow(const std::string& queue, const std::string& requested_by) {
  {
    MutexLock lock(watched_->mu);
    bool found = false;
    for (const auto& g : watched_->groups) {
      for (const auto& [url, q] : g->queues) {
        MutexLock l(q->mu);
        if (q->id.dq.name != queue) continue;
        q->archive.requested = true;
        q->archive.requested_by = requested_by;
        found = true;
      }
    }
    if (!found) return NotFound(fmt::format("queue {} is not watched by this daemon", queue));
  }
  ++generation_;
  wake_ = true;
  return Status::Ok();
}

void Daemon::RecordFailure(const std::string& group, QueueState& q, const Status& status, SystemTime now,
                           std::string_view event) {
  ArchiveError e;
  e.time = now;
  e.error_class = std::string(ErrorCodeName(status.code()));
  e.code = status.aws() && !status.aws()->error_code.empty() ? status.aws()->error_code : e.error_class;
  e.message = status.ToString();
  uint64_t consecutive = 0;
  std::string name, region;
  {
    MutexLock lock(q.mu);
    ++q.archive.failed_runs;
    consecutive = ++q.archive.consecutive_failures;
    q.archive.last_error = e;
    name = q.id.dq.name;
    region = q.id.dq.region;
  }
  ++generation_;
  metrics_.archive_failures_total.WithLabels({name, region, e.error_class}).Inc();
  Log().Log(LogLevel::kError, std::string(event),
            {{"group", group},
             {"queue", name},
             {"code", e.code},
             {"class", e.error_class},
             {"consecutive_failures", consecutive},
             {"error", e.message}});
}

void Daemon::Collect(GroupState& g, QueueState& q, SystemTime now) {
  (void)g;
  auto attrs = q.id.clients.sqs->GetQueueAttributes(
      q.id.dq.url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed", "MessageRetentionPeriod"});
  if (!attrs.ok()) {
    MutexLock lock(q.mu);
    q.seen.collect_error = attrs.status().ToString();
    Log().Log(LogLevel::kError, "collect_failed", {{"queue", q.id.dq.name}, {"error", q.seen.collect_error}});
    return;  // no sample: the alarm's missing-data rule applies
  }
  const Counts counts{.visible = IntAttr(*attrs, "ApproximateNumberOfMessages"),
                      .not_visible = IntAttr(*attrs, "ApproximateNumberOfMessagesNotVisible"),
                      .delayed = IntAttr(*attrs, "ApproximateNumberOfMessagesDelayed")};
  if (int64_t r = IntAttr(*attrs, "MessageRetentionPeriod"); r > 0) {
    MutexLock lock(q.mu);
    q.id.dq.retention = seconds(r);
  }
  const std::optional<double> cw_age = CloudWatchAge(q.id, now);
  std::vector<FiredAlarm> fired;
  {
    MutexLock lock(q.mu);
    const std::optional<double> age_sample = Observe(q.seen, q.id, counts, cw_age, now);
    ExportQueueMetrics(metrics_, q.id.dq, q.seen, cw_age, now);
    fired = EvaluateAlarms(metrics_, q.id.dq, q.alarms, age_sample, counts.visible, now);
    // For the state store.
    if (auto sample = q.seen.history.Newest()) q.unsaved_samples.push_back(*sample);
    for (const FiredAlarm& f : fired) q.unsaved_transitions[f.alarm->spec().name].push_back(f.t);
    if (q.seen.last_empty == now) {
      q.nonempty_since.reset();
    } else if (!q.nonempty_since) {
      q.nonempty_since = now;
    }
  }
  // Alarms are only mutated on this thread, so reading them unlocked is safe.
  const int64_t messages = counts.visible >= 0 && counts.not_visible >= 0
                               ? counts.visible + counts.not_visible + std::max<int64_t>(counts.delayed, 0)
                               : -1;
  for (const FiredAlarm& f : fired) {
    NotifyTransition(notifier_, q, *f.alarm, f.t, [&](AlarmNotification& n) { AddCauses(n, messages); });
  }
}

void Daemon::MaybeSubmit(GroupState& g, const std::shared_ptr<QueueState>& q, SystemTime now, bool transitioned) {
  MutexLock lock(q->mu);
  const SubmitDecision decision =
      DecideSubmit(SubmitStateOf(q->id, q->seen, q->alarms, q->archive, g.destination.ok, transitioned), now,
                   config_.sweep_interval);
  if (decision.verdict == SubmitVerdict::kNone) return;
  if (decision.verdict == SubmitVerdict::kBlocked) {
    q->archive.last_submit = now;
    ++q->archive.runs;
    const std::string name = q->id.dq.name, region = q->id.dq.region;
    lock.Unlock();
    metrics_.archive_runs_total.WithLabels({name, region, "error"}).Inc();
    RecordFailure(g.config.name, *q,
                  g.destination_error.WithContext(
                      fmt::format("archive not started: destination {} failed its check", g.config.destination)),
                  now, "archive_blocked");
    return;
  }
  q->archive.queued = true;
  const int64_t total = q->seen.visible >= 0 && q->seen.not_visible >= 0
                            ? q->seen.visible + q->seen.not_visible + std::max<int64_t>(q->seen.delayed, 0)
                            : -1;
  q->seen.submitted_count = total;
  std::string requested_by;
  if (decision.learn) {
    ++q->seen.learning_passes;
  } else {
    q->archive.last_submit = now;
    q->archive.requested = false;
    requested_by = std::exchange(q->archive.requested_by, std::string());
    if (decision.requested && requested_by.empty()) requested_by = "unknown";
    if (decision.keep) q->alarms.copy_due = false;
  }
  DaemonArchiveRunSpec spec{.group = g.config.name,
                            .destination = g.config.destination,
                            .queue = q->id.dq,  // the DiscoveredQueue's QueueInfo part
                            .drain = q->id.drain,
                            .context = {},
                            .clients = q->id.clients,
                            .requested_by = std::move(requested_by)};
  spec.drain.selection = decision.selection;
  spec.drain.keep = decision.keep && !decision.learn;
  if (decision.learn) {
    // Receive every message once and keep it: nothing is archived or deleted.
    spec.drain.dry_run = true;
    spec.drain.max_messages = 0;
  } else {
    spec.drain.prior_own_receives = PriorOwnReceives(q->seen.ledger);
  }
  spec.context = MakeArchiveContext(spec.queue, options_.host);
  const std::string queue_key = q->id.dq.region + "/" + q->id.dq.url;
  const SystemTime deadline = q->seen.nearest_expiry.value_or(now);
  std::optional<CauseJob> causes = decision.learn ? std::nullopt : CauseJobFor(g, q->id.dq);
  lock.Unlock();
  Submit(q, std::move(spec), queue_key, deadline, decision.requested, std::move(causes));
}

void Daemon::Submit(const std::shared_ptr<QueueState>& q, DaemonArchiveRunSpec spec, const std::string& queue_key,
                    SystemTime deadline, bool requested, std::optional<CauseJob> causes) {
  ++generation_;
  Log().Log(LogLevel::kInfo, "archive_submitted",
            {{"group", spec.group},
             {"queue", spec.queue.name},
             {"budget", options_.plan.max_messages_per_run},
             {"action", spec.drain.dry_run ? "learn"
                        : spec.drain.keep  ? "copy"
                                           : "archive"},
             {"requested", requested},
             {"select", SelectionName(spec.drain.selection.kind)},
             {"window_s", static_cast<int64_t>(spec.drain.selection.window.count())}});
  DaemonArchiveRunReports reports{
      .archived = [this, q](uint64_t archived) { RunArchived(*q, archived); },
      .finished = [this, q, group = spec.group,
                   causes = std::move(causes)](const DaemonArchiveRunReport& r) { RunFinished(group, *q, r, causes); }};
  ArchiveJob job;
  job.queue_key = queue_key;
  job.deadline = deadline;
  job.run = [this, spec = std::move(spec), reports = std::move(reports)](const std::stop_token& stop) {
    return DaemonArchiveRun(spec, clock_, metrics_, options_.progress_interval, reports).Run(stop);
  };
  job.done = [this, q](const JobOutcome&) {
    {
      MutexLock l(q->mu);
      q->archive.queued = false;
    }
    ++generation_;
  };
  scheduler_->Submit(std::move(job));
}

void Daemon::RunArchived(QueueState& q, uint64_t archived) {
  {
    MutexLock l(q.mu);
    q.archive.archived += archived;  // /api/queues and the dashboard, as the run goes
  }
  ++generation_;  // the overview shows it too
}

void Daemon::RunFinished(const std::string& group, QueueState& q, const DaemonArchiveRunReport& r,
                         const std::optional<CauseJob>& causes) {
  const bool learn = r.learn;
  std::optional<CauseJob> job;
  if (causes && !learn && !r.result.keys.empty()) job = causes;
  {
    MutexLock l(q.mu);
    if (job) {
      // When the daemon first saw each archived message: before the ledger forgets them.
      job->keys = r.result.keys;
      for (const ReceivedMessage& m : r.received) {
        if (const LedgerEntry* e = q.seen.ledger.Find(m.message_id); e != nullptr) {
          job->arrivals_ms[m.message_id] = ToUnixMillis(e->first_seen);
        }
      }
    }
    LearnFrom(q.seen, q.id.dq, r, clock_.Now());
  }
  if (job) causes_->Submit(std::move(*job));
  if (learn) {
    ++generation_;
    return;
  }
  {
    MutexLock l(q.mu);
    ++q.archive.runs;  // q.archive.archived: RunArchived added the run's messages
    q.archive.more = r.more;
    q.archive.last_run_at = r.ended;
    q.archive.last_run_archived = r.result.stats.archived;
    q.archive.last_run_ok = r.result.status.ok();
    if (r.result.status.ok()) q.archive.consecutive_failures = 0;
  }
  ++generation_;
  if (r.failed) RecordFailure(group, q, r.result.status, clock_.Now(), "archive_failed");
}

void Daemon::RunOnce() {
  const SystemTime now = clock_.Now();
  const SteadyTime started = clock_.SteadyNow();
  size_t watched = 0, other_shards = 0;
  std::vector<GroupState*> groups;  // only this thread (the control thread) replaces the groups
  {
    MutexLock lock(watched_->mu);
    for (auto& g : watched_->groups) groups.push_back(g.get());
  }
  for (GroupState* g : groups) {
    if (!g->clients) continue;
    if (!g->last_discovery || now - *g->last_discovery >= config_.discovery_interval) discovery_->Discover(*g, now);
    {
      MutexLock lock(watched_->mu);
      other_shards += g->other_shards;
    }
    for (auto& [url, q] : g->queues) {
      AlarmState before_e, before_d;
      {
        MutexLock lock(q->mu);
        before_e = q->alarms.expiry ? q->alarms.expiry->state() : AlarmState::kOk;
        before_d = q->alarms.depth ? q->alarms.depth->state() : AlarmState::kOk;
      }
      Collect(*g, *q, now);
      bool transitioned;
      {
        MutexLock lock(q->mu);
        transitioned = (q->alarms.expiry && q->alarms.expiry->state() != before_e) ||
                       (q->alarms.depth && q->alarms.depth->state() != before_d);
      }
      MaybeSubmit(*g, q, now, transitioned);
      ++watched;
    }
  }
  metrics_.queues_watched.WithLabels({}).Set(static_cast<double>(watched));
  metrics_.queues_other_shards.WithLabels({}).Set(static_cast<double>(other_shards));
  state_->Save(now);
  metrics_.collection_duration_seconds.WithLabels({}).Observe(
      std::chrono::duration<double>(clock_.SteadyNow() - started).count());
  ++generation_;
  health_.Heartbeat();
  health_.SetReady();
}

Status Daemon::Run(std::atomic<bool>& stop, std::atomic<bool>& reload,
                   const std::function<Result<MonitorConfig>()>& load) {
  if (options_.serve_http) {
    HttpServerOptions ho;
    ho.host = config_.listen_host;
    ho.port = config_.listen_port;
    ho.allowed_hosts = config_.dashboard_hosts;
    ho.host_refused_hint = "add the name to dashboard.hosts in the configuration to allow it";
    ho.clock = &clock_;
    http_ = std::make_unique<HttpServer>(ho);
    // A thread of its own: a scrape never waits behind the dashboard's requests.
    http_->HandlePriority("/metrics", MakeMetricsHandler(registry_));
    // Answered on the listener's I/O thread: a probe gets its answer while
    // every worker is busy.
    http_->HandleProbe("/healthz", MakeHealthzHandler(health_));
    http_->HandleProbe("/readyz", MakeReadyzHandler(health_));
    http_->Handle("/api/queues", MakeJsonHandler([this] { return view_.QueuesJson(); }));
    if (extra_routes_) extra_routes_(*http_);
    DLQ_RETURN_IF_ERROR(http_->Start());
    Log().Log(LogLevel::kInfo, "http_listening", {{"url", http_->base_url()}});
  }
  metrics_.up.WithLabels({}).Set(1);
  while (!stop) {
    if (reload.exchange(false)) {
      auto next = load();
      if (next.ok()) {
        Reload(std::move(*next));
        Log().Log(LogLevel::kInfo, "config_reloaded", {{"path", config_.path}});
      } else {
        Log().Log(LogLevel::kError, "config_reload_failed",
                  {{"path", config_.path}, {"error", next.status().ToString()}, {"kept", "previous configuration"}});
      }
    }
    wake_ = false;
    RunOnce();
    // Look every 100 ms so signals (flags a handler sets) are seen promptly.
    PollUntil(clock_, clock_.SteadyNow() + config_.collection_interval, std::chrono::milliseconds(100),
              [&] { return stop || reload || wake_; });
  }
  Log().Log(LogLevel::kInfo, "stopping", {{"reason", "signal"}});
  health_.SetNotReady("stopping");
  Stop();
  state_->Save(clock_.Now());  // what runs finished since the last cycle
  metrics_.up.WithLabels({}).Set(0);
  if (http_) http_->Stop();
  return Status::Ok();
}

}  // namespace dlq
