// LookUpArchivedCauses: the causes of messages just archived, read back from
// the archive objects that hold them (the daemon's CauseWorker after each
// archive run, the Lambda archiver after each queue's drain). Reads the
// objects, groups their messages by failure group, looks up the earliest
// messages of each group with fewer kept answers than `samples`
// (causes/explain.h) and writes the answers to the `_causes/` sidecar.
//
// Best effort: objects or lines that cannot be read are counted and skipped,
// and no failure (the sidecar unreadable, a denial, a failed write) is
// returned as an error; the result says what happened. The archive itself is
// never touched. Not thread-safe: one call at a time per cache; the clients
// are used from the calling thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "archive/record.h"
#include "causes/consumers.h"
#include "causes/explain.h"
#include "causes/sidecar.h"
#include "common/clock.h"
#include "common/status.h"
#include "lambda_api/lambda_api.h"
#include "logs/logs_client.h"
#include "s3/object_store.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct ArchivedCausesRequest {
  QueueInfo dlq;
  std::string archive_prefix;     // archive/destination.h ArchivePrefix
  std::vector<std::string> keys;  // the archive objects to read back
  // When each message reached the DLQ (the daemon's ledger): the end of its
  // lookup window. Messages not listed end it at their archiving.
  std::map<std::string, int64_t> arrivals_ms;
  std::vector<NamedLogGroup> named_log_groups;  // consumer_logs:
  size_t samples = kDefaultCauseSamples;        // per failure group, >= 1
  size_t max_messages = 100000;                 // records read back; the rest are not sampled
  int max_filter_calls = 200;                   // FilterLogEvents calls, >= 1
};

// What a caller keeps between lookups of one queue with the same named log
// groups: the sidecar is read once, then extended with each call's answers.
struct ArchivedCausesCache {
  std::optional<CauseIndex> known;
  std::map<std::string, uint64_t> reusable_per_group;  // kept answers that need no new lookup
};

struct ArchivedCausesClients {
  ObjectStore& store;
  QueueClient& sqs;
  LambdaApi& lambda;
  LogsClient& logs;
  Clock& clock;
  // The DLQ's consumers, called only when some message needs a lookup; it
  // adds the calls it made to `calls`. Empty: ExplainFailures discovers them.
  std::function<const ConsumerMap&(LookupCalls& calls)> consumers;
  // Called for every message read, in order, with its failure-group key;
  // false leaves the message out of the samples. Empty: every message may be
  // sampled.
  std::function<bool(const ArchiveRecord& record, const std::string& group_key)> on_message;
};

struct ArchivedCausesResult {
  size_t messages_read = 0;
  size_t unreadable = 0;  // objects or lines that could not be read
  Status sidecar;         // reading the kept answers; not OK: nothing was looked up
  ExplainResult explain;  // records and calls (consumer discovery's included); empty when nothing was looked up
  Status kept;            // writing the answers; not OK: they are not in the sidecar
  std::string kept_in;    // the sidecar objects written, comma-separated
  size_t found = 0;       // answers with a cause
  std::string denial;     // the first access denial (answers or consumer discovery), "" when none
};

ArchivedCausesResult LookUpArchivedCauses(const ArchivedCausesRequest& request, ArchivedCausesCache& cache,
                                          const ArchivedCausesClients& clients);

}  // namespace dlq
