// QueueClientWrapper: a QueueClient that forwards every call to a target
// QueueClient (like leveldb's EnvWrapper). Derive from it and override only
// the calls to observe or alter. Thread-safe as far as the target is; the
// target must outlive the wrapper. A new QueueClient method must be forwarded
// here too (the class is instantiated on its own in tests, so a missing
// override fails to compile).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sqs/sqs_client.h"

namespace dlq {

class QueueClientWrapper : public QueueClient {
 public:
  explicit QueueClientWrapper(QueueClient& target) : target_(target) {}

  QueueClient& target() const { return target_; }

  Result<std::string> GetQueueUrl(const std::string& name, const std::string& owner_account_id) override {
    return target_.GetQueueUrl(name, owner_account_id);
  }
  Result<std::vector<std::string>> ListQueues(const std::string& prefix) override { return target_.ListQueues(prefix); }
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& queue_url,
                                                                const std::vector<std::string>& names) override {
    return target_.GetQueueAttributes(queue_url, names);
  }
  Result<std::vector<std::string>> ListDeadLetterSourceQueues(const std::string& queue_url) override {
    return target_.ListDeadLetterSourceQueues(queue_url);
  }
  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    return target_.ReceiveMessages(queue_url, options);
  }
  Result<BatchResult> DeleteMessageBatch(const std::string& queue_url,
                                         const std::vector<DeleteEntry>& entries) override {
    return target_.DeleteMessageBatch(queue_url, entries);
  }
  Result<BatchResult> ChangeMessageVisibilityBatch(const std::string& queue_url,
                                                   const std::vector<VisibilityEntry>& entries) override {
    return target_.ChangeMessageVisibilityBatch(queue_url, entries);
  }
  Result<SendBatchResult> SendMessageBatch(const std::string& queue_url,
                                           const std::vector<SendEntry>& entries) override {
    return target_.SendMessageBatch(queue_url, entries);
  }
  Result<SentMessage> SendMessage(const std::string& queue_url, const SendEntry& entry) override {
    return target_.SendMessage(queue_url, entry);
  }
  Result<std::string> CreateQueue(const std::string& name,
                                  const std::map<std::string, std::string>& attributes) override {
    return target_.CreateQueue(name, attributes);
  }
  Status DeleteQueue(const std::string& queue_url) override { return target_.DeleteQueue(queue_url); }
  Status SetQueueAttributes(const std::string& queue_url,
                            const std::map<std::string, std::string>& attributes) override {
    return target_.SetQueueAttributes(queue_url, attributes);
  }

 private:
  QueueClient& target_;
};

}  // namespace dlq
