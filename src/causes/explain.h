// ExplainFailures: "why did these messages fail", for one DLQ, end to end.
// The caller (the CLI's `stats --causes`, the daemon) gives the DLQ, the log
// groups the user named, its archived messages with their failure-group
// keys, and the records already kept (the causes sidecar); it gets back the
// new CauseRecords (to write with WriteCauseRecords), the consumers found
// and how, and the calls made.
//
// Per failure group, at most `samples_per_group` messages are looked up,
// messages with a reusable kept record first (they cost nothing). A message
// whose kept record is reusable (ReusableCause) is never looked up again;
// when every sampled message has one, no AWS call is made at all (consumer
// discovery runs only when some message needs a lookup). Not thread-safe;
// the clients are used from the calling thread only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "causes/cause_record.h"
#include "causes/consumers.h"
#include "causes/lookup.h"
#include "causes/sidecar.h"
#include "common/clock.h"
#include "lambda_api/lambda_api.h"
#include "logs/logs_client.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

inline constexpr size_t kDefaultCauseSamples = 3;

struct ExplainRequest {
  QueueInfo dlq;  // name and URL at least (its ARN, or region and account, for the RedrivePolicy scan)
  std::vector<NamedLogGroup> named_log_groups;      // `consumer_logs:`, `--logs`
  std::vector<LookupMessage> messages;              // the DLQ's messages (any number), each with its group key
  size_t samples_per_group = kDefaultCauseSamples;  // >= 1
  const CauseIndex* known = nullptr;                // records already kept; may be null
  // The DLQ's consumers found earlier (a caller that caches them, the
  // daemon); null: discovered by this call when some message needs a lookup.
  const ConsumerMap* consumers = nullptr;
  LookupOptions lookup;
  ConsumerDiscoveryOptions discovery;
  Status Validate() const;
};

struct ExplainClients {
  QueueClient& sqs;
  LambdaApi& lambda;
  LogsClient& logs;
  Clock& clock;
};

struct ExplainResult {
  std::vector<CauseRecord> records;      // this run's lookups, in sample order: write them to the sidecar
  size_t sampled = 0;                    // messages sampled across the groups
  size_t reused = 0;                     // sampled messages answered by a kept record
  size_t left_out = 0;                   // sampled messages the call cap left unanswered
  std::optional<ConsumerMap> consumers;  // when discovery ran
  LookupCalls calls;
  int max_filter_calls = 0;  // the cap the run had
};

// True when `kept` answers the message without a new lookup given the log
// groups named now: found, no_error and logs_expired always; not_mentioned,
// no_consumer and log_group_not_found while every named group was among those
// searched; throttled, access_denied and error never.
bool ReusableCause(const CauseRecord& kept, const std::vector<NamedLogGroup>& named_log_groups);

ExplainResult ExplainFailures(const ExplainRequest& request, const ExplainClients& clients);

// One line for stderr: "causes: 6 messages sampled in 2 groups, 4 looked up
// (2 kept), 9 calls: FilterLogEvents 8 of at most 200, DescribeLogGroups 1,
// SQS 2, Lambda 2".
std::string DescribeExplainCalls(const ExplainResult& result);

}  // namespace dlq
