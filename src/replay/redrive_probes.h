// What a guarded redrive (replay/redrive_guard.h) reads from SQS: a
// destination's processing window and DLQ (ReadProcessingWindow), its
// backlog (SqsBacklogProbe) and the re-failures in its DLQ
// (SqsRefailureProbe).
//
// SqsRefailureProbe never keeps, deletes or moves a DLQ message: every
// message it receives is made visible again (ChangeMessageVisibility 0)
// before Find returns, and a release that fails leaves it invisible for the
// short receive visibility only. It receives only when a DLQ's message count
// (visible + in flight + delayed, plus what the caller removed itself) grew
// since its last complete look, and then at most `max_receives_per_look`
// messages. A re-failure among more unrelated DLQ messages than that can be
// missed by one look; the next look tries again (the count is then still
// above the last complete look).
//
// Not thread-safe; `sqs` must outlive the probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "replay/redrive_guard.h"
#include "sqs/sqs_client.h"

namespace dlq {

// A destination's RedrivePolicy and timing, and the window they give.
struct DestinationWindow {
  std::string queue_url;
  std::string dlq_arn;  // RedrivePolicy deadLetterTargetArn
  std::string dlq_url;  // resolved
  int max_receive_count = 0;
  std::chrono::seconds visibility_timeout{30};
  std::chrono::seconds delay{0};
  std::chrono::milliseconds window{0};  // ProcessingWindow(max_receive_count, visibility_timeout, delay)
  // A function origin: how its window was reckoned, for the dry run ("" for
  // a queue: the fields above say it); and, when its re-failures are
  // Lambda's records in S3, the bucket and the function's name (dlq_url is
  // then s3://BUCKET/aws/lambda/async/FUNCTION/, read by LambdaRecordProbe).
  std::string basis;
  std::string records_bucket, records_function;
};

// Reads RedrivePolicy, VisibilityTimeout and DelaySeconds of `queue_url`
// (one GetQueueAttributes) and resolves its DLQ's ARN to a URL.
// kFailedPrecondition naming the queue when it has no RedrivePolicy (a
// re-failure would never reach a DLQ); kInvalidArgument for a malformed
// policy; the call's error, with the queue, otherwise.
Result<DestinationWindow> ReadProcessingWindow(QueueClient& sqs, const std::string& queue_url,
                                               const std::string& region);

// The destinations' ApproximateNumberOfMessages, summed. No age (the guard
// estimates it from its send times).
class SqsBacklogProbe final : public BacklogProbe {
 public:
  SqsBacklogProbe(QueueClient& sqs, std::vector<std::string> destination_urls);
  // Errors name the queue.
  Result<BacklogSample> Sample() override;

 private:
  QueueClient& sqs_;
  std::vector<std::string> urls_;
};

struct RefailureProbeOptions {
  int visibility_timeout_seconds = 30;   // of the probe's receives: how long a message is hidden if a release fails
  int wait_time_seconds = 1;             // long polling: an empty receive then means an empty queue
  uint64_t max_receives_per_look = 200;  // messages received per DLQ per Find at most
  // Messages the caller itself removed from `dlq` so far (the live form
  // deletes what it sent); null: none.
  std::function<uint64_t(const std::string& dlq)> removed_by_caller;
};

class SqsRefailureProbe final : public RefailureProbe {
 public:
  // `dlqs`: the URLs of the destinations' DLQs. Reads each one's count now,
  // the baseline of the first look (call it before anything is sent); the
  // call's error, naming the DLQ, otherwise.
  static Result<std::unique_ptr<SqsRefailureProbe>> Start(QueueClient& sqs, Clock& clock, std::vector<std::string> dlqs,
                                                          RefailureProbeOptions options = {});

  // The watched messages found in a DLQ, each reported once. An error names
  // the DLQ and the operation; whatever was received is released first.
  Result<std::vector<RefailedMessage>> Find(const std::map<std::string, ReplayedMessage>& watched) override;
  uint64_t receives() const override { return receives_; }
  // GetQueueAttributes calls made to read counts (for tests and the report).
  uint64_t count_reads() const { return count_reads_; }

 private:
  struct Dlq {
    std::string url;
    int64_t last_total = 0;  // count + removed_by_caller at the last complete look, plus what was found since
  };
  SqsRefailureProbe(QueueClient& sqs, Clock& clock, RefailureProbeOptions options);

  // Visible + in flight + delayed, plus what the caller removed.
  Result<int64_t> Total(const std::string& url);
  // Receives up to the budget, matches, releases everything received.
  Status Look(Dlq& dlq, int64_t total, const std::map<std::string, ReplayedMessage>& watched,
              std::vector<RefailedMessage>& found);
  // Makes every held message visible again; failures are logged (they come
  // back after the receive visibility).
  void Release(const std::string& url, const std::vector<Message>& held);

  QueueClient& sqs_;
  Clock& clock_;
  RefailureProbeOptions options_;
  std::vector<Dlq> dlqs_;
  std::set<std::string> reported_;  // new ids already found
  uint64_t receives_ = 0;
  uint64_t count_reads_ = 0;
};

}  // namespace dlq
