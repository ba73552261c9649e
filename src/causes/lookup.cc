#include "causes/lookup.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr int64_t kDayMs = 24LL * 3600 * 1000;
constexpr int64_t kMaxInvocationPadMs = 15LL * 60 * 1000;  // Lambda's longest timeout
constexpr size_t kMaxStreams = 100;                        // FilterLogEvents' logStreamNames limit

std::optional<int64_t> AttributeMs(const ArchiveRecord& r, const std::string& name) {
  auto it = r.attributes.find(name);
  if (it == r.attributes.end()) return std::nullopt;
  std::optional<int64_t> v = ParseInt64(it->second);
  if (!v || *v <= 0) return std::nullopt;
  return v;
}

std::string Time(int64_t ms) {
  return FormatIso8601(FromUnixMillis(ms));
}

// Which answer speaks for a message searched in several groups: the one that
// says most about what to do.
int Priority(CauseStatus s) {
  switch (s) {
    case CauseStatus::kFound: return 0;
    case CauseStatus::kNoError: return 1;
    case CauseStatus::kAccessDenied: return 2;
    case CauseStatus::kThrottled: return 3;
    case CauseStatus::kError: return 4;
    case CauseStatus::kLogsExpired: return 5;
    case CauseStatus::kLogGroupNotFound: return 6;
    case CauseStatus::kNotMentioned: return 7;
    case CauseStatus::kNoConsumer: return 8;
  }
  return 9;
}

std::string NoConsumerReason(const ConsumerMap& consumers, const LookupMessage& m) {
  std::string why;
  if (consumers.sources.empty()) {
    why = fmt::format("no source queue names {} as its dead-letter queue", m.queue);
  } else {
    std::vector<std::string> names;
    for (const SourceQueue& s : consumers.sources) names.push_back(s.name);
    why = fmt::format("no Lambda function consumes its source{} {} (no event source mapping)",
                      names.size() == 1 ? "" : "s", fmt::join(names, ", "));
  }
  return fmt::format(
      "no consumer known for {}: {}; name the consumer's log groups with `consumer_logs:` in the config or "
      "`--logs GROUP`",
      m.queue, why);
}

}  // namespace

LookupMessage LookupMessageOf(const ArchiveRecord& record, std::string group_key) {
  LookupMessage m;
  m.queue = record.queue;
  m.message_id = record.message_id;
  m.group_key = std::move(group_key);
  m.source_queue_arn = record.source_queue_arn;
  if (m.source_queue_arn.empty()) {
    if (auto it = record.attributes.find("DeadLetterQueueSourceArn"); it != record.attributes.end()) {
      m.source_queue_arn = it->second;
    }
  }
  if (record.sent_at) {
    m.sent_ms = ToUnixMillis(*record.sent_at);
  } else if (auto sent = AttributeMs(record, "SentTimestamp")) {
    m.sent_ms = *sent;
  }
  m.first_receive_ms = AttributeMs(record, "ApproximateFirstReceiveTimestamp");
  if (record.archived_at != SystemTime{}) m.archived_ms = ToUnixMillis(record.archived_at);
  return m;
}

Status LookupOptions::Validate() const {
  if (max_filter_calls < 1) return InvalidArgument("the FilterLogEvents call cap must be at least 1");
  if (max_calls_per_search < 1 || max_calls_per_search > 1000) {
    return InvalidArgument("calls per FilterLogEvents search must be 1..1000");
  }
  if (max_mentions < 1 || max_invocation_events < 1) return InvalidArgument("event caps must be at least 1");
  return Status::Ok();
}

LookupWindow MessageWindow(const LookupMessage& message, const SourceQueue* source) {
  MessageTiming t;
  t.sent_ms = message.sent_ms;
  t.dlq_arrival_ms = message.dlq_arrival_ms;
  t.first_receive_ms = message.first_receive_ms;
  if (source != nullptr) {
    if (source->max_receive_count > 0) t.max_receive_count = source->max_receive_count;
    if (source->visibility_timeout_ms > 0) t.visibility_timeout_ms = source->visibility_timeout_ms;
  }
  LookupWindow w = PlanLookupWindow(t);
  // The message was in the DLQ before it was archived.
  if (!message.dlq_arrival_ms && message.archived_ms) {
    w.end_ms = std::max(w.start_ms, std::min(w.end_ms, *message.archived_ms + kClockSkewMarginMs));
  }
  return w;
}

CauseLookup::CauseLookup(LogsClient& logs, const ConsumerMap& consumers, Clock& clock, LookupOptions options)
    : logs_(logs), consumers_(consumers), clock_(clock), options_(std::move(options)) {}

std::string CauseLookup::LogGroupArn(const std::string& log_group) const {
  auto it = groups_.find(log_group);
  if (it != groups_.end() && it->second.info && !it->second.info->arn.empty()) return it->second.info->arn;
  return fmt::format("log group {}", log_group);
}

const CauseLookup::GroupInfo& CauseLookup::Describe(const std::string& log_group) {
  GroupInfo& g = groups_[log_group];
  if (g.described || !g.error.ok()) return g;
  ++calls_.describe_log_groups;
  auto found = FindLogGroup(logs_, log_group);
  if (found.ok()) {
    g.described = true;
    g.info = std::move(found).value();
  } else {
    g.error = found.status();
  }
  return g;
}

CauseLookup::GroupAnswer CauseLookup::CallFailed(const ConsumerLogGroup& group, const Status& st) const {
  GroupAnswer a;
  switch (st.code()) {
    case ErrorCode::kPermissionDenied:
      a.status = CauseStatus::kAccessDenied;
      a.reason =
          fmt::format("access denied: logs:FilterLogEvents on {} ({})", LogGroupArn(group.log_group), st.message());
      break;
    case ErrorCode::kNotFound:
      a.status = CauseStatus::kLogGroupNotFound;
      a.reason = fmt::format("log group {} does not exist (it was found as: {})", group.log_group, group.how);
      break;
    case ErrorCode::kThrottled:
      a.status = CauseStatus::kThrottled;
      a.reason = fmt::format(
          "CloudWatch Logs throttled FilterLogEvents on {} after the client's retries ({}); it is looked up again "
          "on the next run",
          group.log_group, st.message());
      break;
    default:
      a.status = CauseStatus::kError;
      a.reason = fmt::format("FilterLogEvents on {} failed: {}", group.log_group, st.message());
  }
  return a;
}

std::optional<CauseLookup::GroupAnswer> CauseLookup::Unsearchable(const ConsumerLogGroup& group, const LookupMessage& m,
                                                                  int64_t end_ms) {
  GroupAnswer a;
  const GroupInfo& info = Describe(group.log_group);
  if (info.described && !info.info) {
    a.status = CauseStatus::kLogGroupNotFound;
    a.reason = fmt::format("log group {} does not exist (it was found as: {})", group.log_group, group.how);
    return a;
  }
  if (info.described && info.info->retention_in_days) {
    const int64_t days = *info.info->retention_in_days;
    const int64_t now_ms = ToUnixMillis(clock_.Now());
    if (now_ms - end_ms > days * kDayMs) {
      a.status = CauseStatus::kLogsExpired;
      a.reason = fmt::format(
          "the logs have expired: {} keeps events {} days (retentionInDays) and message {} was processed by {}, "
          "{} days before this lookup",
          group.log_group, days, m.message_id, Time(end_ms), (now_ms - end_ms) / kDayMs);
      return a;
    }
  }
  return std::nullopt;
}

std::vector<LogEvent> CauseLookup::Invocations(const ConsumerLogGroup& group, const LookupMessage& m,
                                               const std::vector<FilteredLogEvent>& mentions) {
  std::vector<LogEvent> events;
  std::set<std::string> seen;
  std::vector<std::string> streams;
  int64_t first = mentions.front().timestamp_ms, last = first;
  auto keep = [&](const FilteredLogEvent& e) {
    std::string id =
        e.event_id.empty() ? fmt::format("{}\n{}\n{}", e.log_stream, e.timestamp_ms, e.message) : e.event_id;
    if (!seen.insert(std::move(id)).second) return;
    events.push_back(LogEvent{group.log_group, e.log_stream, e.timestamp_ms, e.message});
  };
  for (const FilteredLogEvent& e : mentions) {
    keep(e);
    first = std::min(first, e.timestamp_ms);
    last = std::max(last, e.timestamp_ms);
    if (streams.size() < kMaxStreams && std::find(streams.begin(), streams.end(), e.log_stream) == streams.end()) {
      streams.push_back(e.log_stream);
    }
  }
  int64_t pad = group.timeout_seconds ? int64_t{*group.timeout_seconds} * 1000 : 0;
  if (pad <= 0) {
    const SourceQueue* source = consumers_.Source(m.source_queue_arn);
    pad = source != nullptr && source->visibility_timeout_ms > 0 ? source->visibility_timeout_ms : 30'000;
  }
  pad = std::min(pad, kMaxInvocationPadMs) + 5'000;
  if (budget_left()) {
    FilterLogEventsRequest around;
    around.log_group = group.log_group;
    around.log_stream_names = streams;
    around.start_time_ms = std::max<int64_t>(0, first - pad);
    around.end_time_ms = last + pad;
    around.max_calls = std::min(options_.max_calls_per_search, options_.max_filter_calls - calls_.filter_log_events);
    around.max_events = options_.max_invocation_events;
    auto invocation = logs_.FilterLogEvents(around);
    calls_.filter_log_events += invocation.ok() ? invocation->calls : 1;
    // Without them the mentions alone may still name the error.
    if (invocation.ok()) {
      for (const FilteredLogEvent& e : invocation->events) keep(e);
    }
  }
  return events;
}

CauseLookup::GroupAnswer CauseLookup::SearchGroup(const ConsumerLogGroup& group, const LookupMessage& m,
                                                  int64_t start_ms, int64_t end_ms,
                                                  const std::vector<std::string>& other_message_ids) {
  if (std::optional<GroupAnswer> no = Unsearchable(group, m, end_ms)) return std::move(*no);
  GroupAnswer a;
  if (!budget_left()) {
    a.out_of_budget = true;
    return a;
  }
  FilterLogEventsRequest mentions;
  mentions.log_group = group.log_group;
  auto term = QuotedFilterTerm(m.message_id);
  if (!term.ok()) {
    a.status = CauseStatus::kError;
    a.reason = fmt::format("message id {} cannot be searched for: {}", m.message_id, term.status().message());
    return a;
  }
  mentions.filter_pattern = *term;
  mentions.start_time_ms = start_ms;
  mentions.end_time_ms = end_ms;
  mentions.max_calls = std::min(options_.max_calls_per_search, options_.max_filter_calls - calls_.filter_log_events);
  mentions.max_events = options_.max_mentions;
  auto found = logs_.FilterLogEvents(mentions);
  // A failed call counts as one (its retries are the client's).
  calls_.filter_log_events += found.ok() ? found->calls : 1;
  if (!found.ok()) return CallFailed(group, found.status());
  if (found->events.empty()) {
    a.status = CauseStatus::kNotMentioned;
    a.reason = fmt::format("no log line in {} mentions {} between {} and {}", group.log_group, m.message_id,
                           Time(start_ms), Time(end_ms));
    return a;
  }
  CauseResult r =
      CauseFinder(Invocations(group, m, found->events), options_.cause).Find(m.message_id, other_message_ids);
  if (r.outcome == CauseOutcome::kFound && r.cause) {
    a.status = CauseStatus::kFound;
    a.cause = std::move(r.cause);
    return a;
  }
  int64_t first = found->events.front().timestamp_ms, last = first;
  for (const FilteredLogEvent& e : found->events) {
    first = std::min(first, e.timestamp_ms);
    last = std::max(last, e.timestamp_ms);
  }
  a.status = CauseStatus::kNoError;
  a.reason = fmt::format("{} mentions {} ({} between {} and {}) but no invocation that handled it logged an error",
                         group.log_group, m.message_id,
                         found->events.size() == 1 ? "one line" : fmt::format("{} lines", found->events.size()),
                         Time(first), Time(last));
  return a;
}

std::optional<CauseRecord> CauseLookup::LookUp(const LookupMessage& m,
                                               const std::vector<std::string>& other_message_ids) {
  CauseRecord record;
  record.queue = m.queue;
  record.message_id = m.message_id;
  record.group_key = m.group_key;
  record.looked_up_at = clock_.Now();
  std::vector<const ConsumerLogGroup*> groups = consumers_.ForSource(m.source_queue_arn);
  for (const ConsumerLogGroup* g : groups) record.log_groups.push_back(g->log_group);
  if (groups.empty()) {
    if (!consumers_.denied.ok()) {
      record.status = CauseStatus::kAccessDenied;
      record.reason = fmt::format("no consumer known for {}: access denied while looking for it: {}", m.queue,
                                  consumers_.denied.message());
    } else {
      record.status = CauseStatus::kNoConsumer;
      record.reason = NoConsumerReason(consumers_, m);
    }
    return record;
  }
  LookupWindow w = MessageWindow(m, consumers_.Source(m.source_queue_arn));
  record.window_start_ms = w.start_ms;
  record.window_end_ms = w.end_ms;
  std::vector<GroupAnswer> answers;
  for (const ConsumerLogGroup* g : groups) {
    GroupAnswer a = SearchGroup(*g, m, w.start_ms, w.end_ms, other_message_ids);
    if (a.out_of_budget) return std::nullopt;
    if (a.status == CauseStatus::kFound) {
      record.status = CauseStatus::kFound;
      record.cause = std::move(a.cause);
      return record;
    }
    answers.push_back(std::move(a));
  }
  const GroupAnswer* best = &answers.front();
  for (const GroupAnswer& a : answers) {
    if (Priority(a.status) < Priority(best->status)) best = &a;
  }
  record.status = best->status;
  std::vector<std::string> reasons;
  reasons.push_back(best->reason);
  for (const GroupAnswer& a : answers) {
    if (&a != best) reasons.push_back(a.reason);
  }
  record.reason = fmt::format("{}", fmt::join(reasons, "; "));
  if (record.status == CauseStatus::kNotMentioned) {
    record.reason += "; the consumer may not log the SQS message id: doc/causes.md shows the line to add";
  }
  return record;
}

}  // namespace dlq
