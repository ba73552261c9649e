// CauseLookup: one message's cause looked up in its consumers' logs. For each
// consumer log group: the group's retention (DescribeLogGroups, once per group
// and run), FilterLogEvents for the quoted message id within the message's
// lookup window, then the events of the streams that mention it around the
// mentions (the invocation), and CauseFinder over them. Every answer is a
// CauseRecord: the cause, or the exact reason there is none.
//
// Cost is bounded: FilterLogEvents calls per run at most
// LookupOptions::max_filter_calls (a message the cap leaves out is not
// answered: LookUp returns nullopt). Throttling is retried inside the
// LogsClient; once its retries are used up the message's record says
// kThrottled. Not thread-safe: one lookup run on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "archive/record.h"
#include "causes/cause.h"
#include "causes/cause_record.h"
#include "causes/consumers.h"
#include "causes/lookup_window.h"
#include "common/clock.h"
#include "logs/logs_client.h"

namespace dlq {

// One archived message as the lookup needs it.
struct LookupMessage {
  std::string queue;  // the DLQ's name
  std::string message_id;
  std::string group_key;                    // its failure group (query/fingerprint.h's FailureGroupKey)
  std::string source_queue_arn;             // DeadLetterQueueSourceArn; empty when unknown
  int64_t sent_ms = 0;                      // SentTimestamp; 0 when unknown
  std::optional<int64_t> first_receive_ms;  // ApproximateFirstReceiveTimestamp
  std::optional<int64_t> dlq_arrival_ms;    // when it reached the DLQ (the daemon's ledger)
  std::optional<int64_t> archived_ms;       // when it was archived: it reached the DLQ before
};

// The record's message: SentTimestamp, ApproximateFirstReceiveTimestamp and
// DeadLetterQueueSourceArn from its attributes, archived_at.
LookupMessage LookupMessageOf(const ArchiveRecord& record, std::string group_key);

struct LookupOptions {
  int max_filter_calls = 200;           // FilterLogEvents calls per run (pages count), >= 1
  int max_calls_per_search = 3;         // per FilterLogEvents search (its pages), >= 1
  size_t max_mentions = 200;            // events kept per message id search
  size_t max_invocation_events = 2000;  // events kept around the mentions
  CauseOptions cause;
  Status Validate() const;
};

struct LookupCalls {
  int filter_log_events = 0;
  int describe_log_groups = 0;
  int sqs = 0;     // consumer discovery
  int lambda = 0;  // consumer discovery
  int total() const { return filter_log_events + describe_log_groups + sqs + lambda; }
};

class CauseLookup {
 public:
  // `consumers`, `logs` and `clock` must outlive the lookup.
  CauseLookup(LogsClient& logs, const ConsumerMap& consumers, Clock& clock, LookupOptions options = {});

  // `other_message_ids`: the other messages of this run (a partial batch
  // failure that names one of them is not this message's cause). nullopt
  // when the call cap was reached before the message had an answer.
  std::optional<CauseRecord> LookUp(const LookupMessage& message, const std::vector<std::string>& other_message_ids);

  bool budget_left() const { return calls_.filter_log_events < options_.max_filter_calls; }
  const LookupCalls& calls() const { return calls_; }

 private:
  struct GroupInfo {
    bool described = false;
    std::optional<LogGroupInfo> info;  // nullopt: not found (when described)
    Status error;                      // DescribeLogGroups failed: the search goes on without it
  };
  struct GroupAnswer {
    CauseStatus status = CauseStatus::kNotMentioned;
    std::string reason;
    std::optional<Cause> cause;
    bool out_of_budget = false;
  };
  GroupAnswer SearchGroup(const ConsumerLogGroup& group, const LookupMessage& message, int64_t start_ms, int64_t end_ms,
                          const std::vector<std::string>& other_message_ids);
  const GroupInfo& Describe(const std::string& log_group);
  // The answer for a failed FilterLogEvents call.
  GroupAnswer CallFailed(const ConsumerLogGroup& group, const Status& st) const;
  // Why the group cannot be searched for a message processed by `end_ms`
  // (it does not exist; its retention ended), or nullopt.
  std::optional<GroupAnswer> Unsearchable(const ConsumerLogGroup& group, const LookupMessage& m, int64_t end_ms);
  // The mentions and the invocations around them: the mentioning streams
  // within the consumer's timeout (or the source's visibility timeout).
  std::vector<LogEvent> Invocations(const ConsumerLogGroup& group, const LookupMessage& m,
                                    const std::vector<FilteredLogEvent>& mentions);
  std::string LogGroupArn(const std::string& log_group) const;

  LogsClient& logs_;
  const ConsumerMap& consumers_;
  Clock& clock_;
  LookupOptions options_;
  LookupCalls calls_;
  std::map<std::string, GroupInfo> groups_;
};

// Where a message was looked for: the window FilterLogEvents is asked about
// (PlanLookupWindow with the message's source queue's maxReceiveCount and
// visibility timeout, its end no later than its archiving plus the margin).
LookupWindow MessageWindow(const LookupMessage& message, const SourceQueue* source);

}  // namespace dlq
