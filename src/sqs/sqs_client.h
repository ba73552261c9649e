// QueueClient: the SQS calls dlq-archive needs, as an interface so the
// archiver, monitor and replay can run against FakeQueueClient in tests.
// SqsClient implements it on the AWS JSON 1.0 protocol over AwsClient.
//
// Every implementation is thread-safe. Errors carry the operation and queue;
// batch calls return per-entry failures in the result (a non-OK Result means
// the whole call failed and no entry's outcome is known).
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_client.h"
#include "common/status.h"
#include "sqs/types.h"

namespace dlq {

// A received message that failed its MD5 check: corrupted in transit. Its
// content must not be trusted; the receipt handle lets the caller release it
// so a later receive gets it intact.
struct CorruptMessage {
  std::string message_id;
  std::string receipt_handle;
  std::string reason;
};

struct ReceiveOptions {
  int max_messages = 10;                                       // 1..10
  int wait_time_seconds = 0;                                   // 0..20 (long polling)
  std::optional<int> visibility_timeout;                       // 0..43200; the queue's default when unset
  std::vector<std::string> attribute_names = {"All"};          // system attributes
  std::vector<std::string> message_attribute_names = {"All"};  // "All", names, or "prefix.*"
  std::string receive_request_attempt_id;                      // FIFO only; empty = not sent
  // When set, messages that fail the MD5 check are moved here and the call
  // succeeds with the rest; when null such a message fails the whole call
  // with kDataLoss. Not owned; must outlive the call.
  std::vector<CorruptMessage>* corrupt = nullptr;
  // Abandons a receive in flight (a long poll) once it turns true: kCancelled.
  // Messages SQS handed to that receive stay invisible until their
  // visibility timeout runs out. Not owned.
  const std::atomic<bool>* cancel = nullptr;
  Status Validate() const;
};

struct DeleteEntry {
  std::string id;  // unique in the batch: [A-Za-z0-9_-]{1,80}
  std::string receipt_handle;
};

struct VisibilityEntry {
  std::string id;
  std::string receipt_handle;
  int visibility_timeout_seconds = 0;  // 0..43200
};

struct SendEntry {
  std::string id;
  std::string body;
  MessageAttributes message_attributes;
  std::optional<int> delay_seconds;      // 0..900; the queue's default when unset
  std::string message_group_id;          // FIFO; empty = not sent
  std::string message_deduplication_id;  // FIFO; empty = not sent
  // System attributes to set; SQS accepts only "AWSTraceHeader" (a String).
  std::map<std::string, std::string> message_system_attributes;
};

// One successfully sent message.
struct SentMessage {
  std::string id;  // the entry id (empty for SendMessage)
  std::string message_id;
  std::string md5_of_body;
  std::string md5_of_message_attributes;
  std::string sequence_number;  // FIFO only
};

// successful_ids/failed as for every batch call, plus what SQS returned for
// each sent entry (same order as successful_ids).
struct SendBatchResult : BatchResult {
  std::vector<SentMessage> sent;
};

// Validates batch input the way SQS would, before anything is sent:
// 1..10 entries, unique ids of [A-Za-z0-9_-]{1,80}.
Status ValidateBatchIds(const std::vector<std::string>& ids);

// Checks that a batch reply names only entries that were sent, each once:
// kInternal naming the entry otherwise.
Status ValidateBatchReply(const BatchResult& reply, const std::vector<std::string>& sent_ids);

// Splits received messages by their MD5 check: failing ones go to `corrupt`
// when non-null; otherwise the first failure is returned.
Status VerifyReceived(std::vector<Message>& messages, std::vector<CorruptMessage>* corrupt);

class QueueClient {
 public:
  virtual ~QueueClient() = default;

  // owner_account_id may be empty (the caller's account).
  virtual Result<std::string> GetQueueUrl(const std::string& name, const std::string& owner_account_id) = 0;
  // All queue URLs whose name starts with prefix (empty = all), following pagination.
  virtual Result<std::vector<std::string>> ListQueues(const std::string& prefix) = 0;
  // names: e.g. {"All"} or {"ApproximateNumberOfMessages", "RedrivePolicy"}.
  virtual Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& queue_url,
                                                                        const std::vector<std::string>& names) = 0;
  // URLs of the queues whose RedrivePolicy targets this queue, following pagination.
  virtual Result<std::vector<std::string>> ListDeadLetterSourceQueues(const std::string& queue_url) = 0;

  // Received messages are verified against their MD5 digests: a mismatch
  // goes to options.corrupt when set, else fails the call with kDataLoss
  // naming the message.
  virtual Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) = 0;
  virtual Result<BatchResult> DeleteMessageBatch(const std::string& queue_url,
                                                 const std::vector<DeleteEntry>& entries) = 0;
  virtual Result<BatchResult> ChangeMessageVisibilityBatch(const std::string& queue_url,
                                                           const std::vector<VisibilityEntry>& entries) = 0;
  // An entry whose returned digests do not match what was sent is reported
  // failed with code "MD5Mismatch" (SqsClient).
  virtual Result<SendBatchResult> SendMessageBatch(const std::string& queue_url,
                                                   const std::vector<SendEntry>& entries) = 0;
  virtual Result<SentMessage> SendMessage(const std::string& queue_url, const SendEntry& entry) = 0;

  virtual Result<std::string> CreateQueue(const std::string& name,
                                          const std::map<std::string, std::string>& attributes) = 0;
  virtual Status DeleteQueue(const std::string& queue_url) = 0;
  virtual Status SetQueueAttributes(const std::string& queue_url,
                                    const std::map<std::string, std::string>& attributes) = 0;
};

// SQS over AWS JSON 1.0. Every request is POSTed to the AwsClient's endpoint
// (the queue URL is only a body field, so stand-ins that return URLs with
// unresolvable hosts work). Holds a reference to `aws`, which must outlive it.
class SqsClient final : public QueueClient {
 public:
  explicit SqsClient(AwsClient& aws) : aws_(aws) {}

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

 private:
  // POSTs `body` with X-Amz-Target AmazonSQS.<operation>; returns the response body.
  Result<std::string> Invoke(std::string_view operation, const std::string& resource, std::string body,
                             const std::atomic<bool>* cancel = nullptr);

  AwsClient& aws_;
};

}  // namespace dlq
