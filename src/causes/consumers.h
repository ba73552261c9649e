// Finding a DLQ's consumers and their logs: the DLQ's source queues
// (ListDeadLetterSourceQueues, or every queue's RedrivePolicy where an
// endpoint lacks that call), each source's Lambda consumers
// (ListEventSourceMappings by the source's ARN), each function's log group
// (LoggingConfig.LogGroup, else /aws/lambda/NAME), plus log groups the user
// names (`consumer_logs:`, `--logs`) for consumers that are not Lambda
// functions. Never fails: what could not be read is a note in the result
// (access denied keeps its status for the lookup's reason). Thread-safe as
// far as the clients are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "lambda_api/lambda_api.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

// A log group the user named, and where (for the output): "--logs",
// "consumer_logs: of group orders".
struct NamedLogGroup {
  std::string log_group;
  std::string named_by;
};

struct SourceQueue {
  std::string url, arn, name;
  int max_receive_count = 0;          // its RedrivePolicy's; 0 when unread
  int64_t visibility_timeout_ms = 0;  // 0 when unread
};

// One consumer log group, and how it was found.
struct ConsumerLogGroup {
  std::string log_group;
  // "function F (event source mapping UUID from source S, LoggingConfig.LogGroup)",
  // "named by --logs": one line for `check`, `doctor` and the output.
  std::string how;
  std::string function_name;           // empty when named by the user
  std::string log_format;              // "Text", "JSON"; empty when not said
  std::optional<int> timeout_seconds;  // the function's timeout
  std::string source_queue_arn;        // the source it consumes; empty: every source (named by the user)
};

struct ConsumerMap {
  std::string dlq;  // its name
  std::vector<SourceQueue> sources;
  std::vector<ConsumerLogGroup> log_groups;  // de-duplicated by name, discovered first
  // What was tried and did not answer, one line each ("ListEventSourceMappings
  // for arn:...: access denied (lambda:ListEventSourceMappings)").
  std::vector<std::string> notes;
  // The first access denial met, for a lookup's reason; Ok when none.
  Status denied;
  int sqs_calls = 0, lambda_calls = 0;

  // The log groups to search for a message from `source_arn` (empty or
  // unknown: every group).
  std::vector<const ConsumerLogGroup*> ForSource(std::string_view source_arn) const;
  // The source `arn` names; nullptr when unknown. With an empty `arn`, the
  // only source when there is exactly one.
  const SourceQueue* Source(std::string_view arn) const;
  // Lines saying what was found and how (sources, consumers, log groups, notes).
  std::vector<std::string> Describe() const;
};

struct ConsumerDiscoveryOptions {
  bool discover_lambda = true;    // false: only the named log groups (and the sources, for timing)
  int max_queues_scanned = 1000;  // RedrivePolicy scan where ListDeadLetterSourceQueues is missing
};

ConsumerMap DiscoverConsumers(QueueClient& sqs, LambdaApi& lambda, const QueueInfo& dlq,
                              const std::vector<NamedLogGroup>& named, const ConsumerDiscoveryOptions& options = {});

}  // namespace dlq
