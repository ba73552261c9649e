// Queue discovery for one configured group: the DLQs it names, the queues
// its prefixes and regex match, and (discover: true) every queue that some
// queue's RedrivePolicy names as deadLetterTargetArn; minus `exclude`,
// de-duplicated by URL. For each DLQ it reads the attributes the expiry
// analysis needs, including every redrive source's retention.
//
// Failure behaviour: a queue named explicitly in `queues` that does not exist
// is an error naming it; any other queue that vanishes while discovery runs
// is skipped with a warning log. Other SQS errors (denied, throttled after
// the client's retries) fail the whole call with context. Stateless and
// thread-safe as far as `sqs` is.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "monitor/config.h"
#include "sqs/limits.h"
#include "sqs/queue_info.h"
#include "sqs/redrive_policy.h"
#include "sqs/sqs_client.h"

namespace dlq {

// A queue whose RedrivePolicy points at a DLQ.
struct RedriveSource {
  std::string url;
  std::string name;
  std::chrono::seconds retention{sqs::kDefaultRetention};
  int max_receive_count = 0;  // 0 when the policy could not be read
};

// A DLQ as discovery found it: the QueueInfo a QueueDrainer takes (pass it
// as is) plus its redrive sources.
struct DiscoveredQueue : QueueInfo {
  std::vector<RedriveSource> redrive_sources;

  // The longest retention among the DLQ's sources (zero when it has none).
  std::chrono::seconds MaxSourceRetention() const;
};

// The group's DLQs, in this order: explicit queues, prefixes, regex, then
// discovered ones (each in ListQueues order). `group` must come from a
// validated MonitorConfig.
Result<std::vector<DiscoveredQueue>> DiscoverQueues(QueueClient& sqs, const GroupConfig& group);

// A queue that the selectors of two groups match. Which group watches it:
// the one with the higher `priority`; on equal priorities the first in
// config order, and the overlap is a configuration error (`check` fails,
// `run` logs `queue_in_two_groups` at error level and reports it as the
// group's error until the config says which wins).
struct GroupOverlap {
  std::string queue;  // name
  std::string url;
  std::string kept;     // the group that watches it
  std::string dropped;  // the group that does not
  bool by_priority = false;

  bool error() const { return !by_priority; }
  // One line naming the queue and both groups.
  std::string Message() const;
};

// The winner of two groups that match the same queue, as GroupOverlap says;
// `a` comes before `b` in the config.
const GroupConfig& OverlapWinner(const GroupConfig& a, const GroupConfig& b);

// Resolves every queue matched by several groups: `found[i]` is what
// `groups[i]` discovered (nullptr when its discovery failed), both in config
// order. The queue stays only in the winning group's list; one GroupOverlap
// per removal, in config order. Queues are the same when their URLs are.
std::vector<GroupOverlap> ResolveGroupOverlaps(const std::vector<const GroupConfig*>& groups,
                                               const std::vector<std::vector<DiscoveredQueue>*>& found);

}  // namespace dlq
