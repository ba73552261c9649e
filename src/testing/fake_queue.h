// FakeQueueClient: an in-memory SQS for tests of the archiver, monitor and
// replay. Thread-safe (one mutex); time comes from the injected Clock, which
// must outlive it.
//
// Semantics kept from SQS: message ids and a new receipt handle per receive;
// visibility timeout (queue default or per receive) and ChangeMessageVisibility;
// DelaySeconds; MessageRetentionPeriod expiry counted from SentTimestamp (a
// message moved to a standard DLQ keeps its SentTimestamp, a FIFO one restarts);
// RedrivePolicy (maxReceiveCount moves a message to the DLQ on receive, with
// DeadLetterQueueSourceArn set); ApproximateReceiveCount, SentTimestamp,
// ApproximateFirstReceiveTimestamp, SenderId; Approximate* queue counts;
// FIFO basics (group ordering, in-flight groups blocked, deduplication for
// 5 minutes, sequence numbers). MD5OfBody/MD5OfMessageAttributes are correct.
//
// Deliberate differences: ReceiveMessages never waits (wait_time_seconds is
// ignored); a receipt handle from an older receive, or one never issued,
// fails that entry with "ReceiptHandleIsInvalid" (real SQS may silently
// succeed without deleting); deleting again with the handle that deleted a
// message succeeds. ListQueues and ListDeadLetterSourceQueues return one page.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "sqs/sqs_client.h"

namespace dlq {

class FakeQueueClient final : public QueueClient {
 public:
  enum class Operation {
    kGetQueueUrl,
    kListQueues,
    kGetQueueAttributes,
    kListDeadLetterSourceQueues,
    kReceiveMessages,
    kDeleteMessageBatch,
    kChangeMessageVisibilityBatch,
    kSendMessageBatch,
    kSendMessage,
    kCreateQueue,
    kDeleteQueue,
    kSetQueueAttributes,
  };
  static constexpr int kOperationCount = 12;

  explicit FakeQueueClient(Clock& clock, std::string region = "us-east-1", std::string account_id = "123456789012");

  // QueueClient.
  Result<std::string> GetQueueUrl(const std::string& name, const std::string& owner_account_id) override;
  Result<std::vector<std::string>> ListQueues(const std::string& prefix) override;
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& queue_url,
                                                                const std::vector<std::string>& names) override;
  Result<std::vector<std::string>> ListDeadLetterSourceQueues(const std::string& queue_url) override;
  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override;
  Result<BatchResult> DeleteMessageBatch(const std::string& queue_url,
                                         const std::vector<DeleteEntry>& entries) override;
  Result<BatchResult> ChangeMessageVisibilityBatch(const std::string& queue_url,
                                                   const std::vector<VisibilityEntry>& entries) override;
  Result<SendBatchResult> SendMessageBatch(const std::string& queue_url,
                                           const std::vector<SendEntry>& entries) override;
  Result<SentMessage> SendMessage(const std::string& queue_url, const SendEntry& entry) override;
  Result<std::string> CreateQueue(const std::string& name,
                                  const std::map<std::string, std::string>& attributes) override;
  Status DeleteQueue(const std::string& queue_url) override;
  Status SetQueueAttributes(const std::string& queue_url,
                            const std::map<std::string, std::string>& attributes) override;

  // ---- Test controls (none of them counts as a call).

  // The next `count` calls of `op` return `status`. With after_applying the
  // call takes effect first and then reports the failure (a lost response).
  void FailNext(Operation op, Status status, int count = 1, bool after_applying = false);
  // The next n entries of DeleteMessageBatch / ChangeMessageVisibilityBatch /
  // SendMessageBatch fail with `code` (and are not applied).
  void FailDeleteEntries(int n, std::string code = "InternalError");
  void FailVisibilityEntries(int n, std::string code = "InternalError");
  void FailSendEntries(int n, std::string code = "InternalError");

  // Corruption in transit: the next n received messages (or every receive of
  // `message_id`, `times` times; -1 = always) arrive with a body that no
  // longer matches MD5OfBody. They go to ReceiveOptions::corrupt, or fail the
  // call with kDataLoss, exactly as SqsClient reports them.
  void CorruptNextReceived(int n);
  void CorruptReceivesOf(const std::string& message_id, int times = -1);

  // Receives see a random subset, as SQS does (it samples its servers; moto
  // hands out random subsets too): each receivable message is considered
  // with probability `fraction`, from a generator seeded with `seed` so a
  // run repeats. FIFO: a group whose next message is not drawn gives
  // nothing in that receive. 1 (the default): every receivable message, in
  // send order.
  void SampleReceives(double fraction, uint64_t seed = 1);

  // Delivery twice, as SQS may on rare occasions and moto does when two
  // receives run at once: each of the next n messages received stays
  // receivable, so a later receive hands it out again (a new receipt handle,
  // the older one stale) while the first receiver still holds it.
  void RedeliverNextReceived(int n);

  // Calls made of `op`, failed ones included.
  int calls(Operation op) const;
  // Messages deleted through DeleteMessageBatch so far.
  int deleted_count() const;

  // Stores a message as if sent at `sent_at` (e.g. days ago, to test expiry),
  // with extra system attributes such as AWSTraceHeader or
  // DeadLetterQueueSourceArn. Returns the message id.
  Result<std::string> InjectMessage(const std::string& queue_url, const SendEntry& entry, SystemTime sent_at,
                                    const std::map<std::string, std::string>& system_attributes = {});
  // Every unexpired message in the queue (visible, in flight or delayed), in
  // send order, with all attributes; receipt_handle is the latest one issued
  // (empty if never received). Changes nothing.
  std::vector<Message> Messages(const std::string& queue_url) const;
  // Unexpired messages in the queue, whatever their visibility.
  size_t Depth(const std::string& queue_url) const;
  // The URL CreateQueue returns for `name`.
  std::string UrlFor(const std::string& name) const;

 private:
  struct Stored {
    Message message;  // attributes holds the fixed system attributes
    uint64_t seq = 0;
    SystemTime sent_at;
    SystemTime retention_start;  // expiry counts from here
    SystemTime visible_at;       // receivable when now >= visible_at
    int receive_count = 0;
    std::optional<SystemTime> first_receive;
    std::string group_id;
  };
  struct RedrivePolicy {
    std::string target_arn;
    int max_receive_count = 0;
  };
  struct Queue {
    std::string name;
    std::string url;
    std::string arn;
    bool fifo = false;
    std::map<std::string, std::string> attributes;
    std::optional<RedrivePolicy> redrive;
    SystemTime created;
    SystemTime modified;
    std::deque<Stored> messages;
    std::map<std::string, std::string> deleted_handles;               // handle -> message id
    std::map<std::string, std::pair<SystemTime, SentMessage>> dedup;  // FIFO dedup id -> first send
  };
  struct Injected {
    Status status;
    bool after_applying = false;
  };

  // Counts the call and pops an injected failure for it.
  std::optional<Injected> BeginCall(Operation op) DLQ_REQUIRES(mu_);
  Result<Queue*> FindQueue(const std::string& queue_url, std::string_view operation) DLQ_REQUIRES(mu_);
  const Queue* FindQueueConst(const std::string& queue_url) const DLQ_REQUIRES(mu_);
  Queue* FindQueueByArn(const std::string& arn) DLQ_REQUIRES(mu_);
  void Expire(Queue& q) DLQ_REQUIRES(mu_);
  Status ApplyAttributes(Queue& q, const std::map<std::string, std::string>& attributes) DLQ_REQUIRES(mu_);
  int IntAttribute(const Queue& q, const std::string& name, int fallback) const DLQ_REQUIRES(mu_);
  Result<SentMessage> Enqueue(Queue& q, const SendEntry& entry, SystemTime sent_at,
                              const std::map<std::string, std::string>& system_attributes) DLQ_REQUIRES(mu_);
  Message View(const Queue& q, const Stored& s, const std::vector<std::string>& attribute_names,
               const std::vector<std::string>& message_attribute_names) const DLQ_REQUIRES(mu_);
  Stored* FindByHandle(Queue& q, const std::string& handle) DLQ_REQUIRES(mu_);

  Clock& clock_;
  const std::string region_;
  const std::string account_id_;
  mutable Mutex mu_;
  std::map<std::string, Queue> queues_ DLQ_GUARDED_BY(mu_);  // by URL
  std::array<int, kOperationCount> calls_ DLQ_GUARDED_BY(mu_){};
  std::array<std::deque<Injected>, kOperationCount> failures_ DLQ_GUARDED_BY(mu_);
  int fail_delete_entries_ DLQ_GUARDED_BY(mu_) = 0;
  std::string fail_delete_code_ DLQ_GUARDED_BY(mu_);
  int fail_visibility_entries_ DLQ_GUARDED_BY(mu_) = 0;
  std::string fail_visibility_code_ DLQ_GUARDED_BY(mu_);
  int fail_send_entries_ DLQ_GUARDED_BY(mu_) = 0;
  std::string fail_send_code_ DLQ_GUARDED_BY(mu_);
  int deleted_count_ DLQ_GUARDED_BY(mu_) = 0;
  int corrupt_next_ DLQ_GUARDED_BY(mu_) = 0;
  int redeliver_next_ DLQ_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> corrupt_ids_ DLQ_GUARDED_BY(mu_);
  double sample_fraction_ DLQ_GUARDED_BY(mu_) = 1.0;
  std::mt19937_64 sample_rng_ DLQ_GUARDED_BY(mu_);
  uint64_t next_seq_ DLQ_GUARDED_BY(mu_) = 1;
  uint64_t next_handle_ DLQ_GUARDED_BY(mu_) = 1;
};

}  // namespace dlq
