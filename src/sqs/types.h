// Value types shared by the SQS client, the archiver and replay.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlq {

// An SQS message attribute. DataType is "String", "Number", "Binary" or one
// of those followed by ".custom-label" (e.g. "Number.float", "Binary.gzip").
// For Binary types binary_value holds the raw bytes (not base64).
struct MessageAttributeValue {
  std::string data_type;
  std::string string_value;
  std::string binary_value;

  bool IsBinary() const { return data_type.rfind("Binary", 0) == 0; }
  bool operator==(const MessageAttributeValue&) const = default;
};

using MessageAttributes = std::map<std::string, MessageAttributeValue>;

struct Message {
  std::string message_id;
  std::string receipt_handle;
  std::string body;
  std::string md5_of_body;
  std::string md5_of_message_attributes;  // empty when there are no message attributes
  // System attributes as SQS returned them: SentTimestamp, ApproximateReceiveCount,
  // ApproximateFirstReceiveTimestamp, SenderId, MessageGroupId, MessageDeduplicationId,
  // SequenceNumber, AWSTraceHeader, DeadLetterQueueSourceArn, ...
  std::map<std::string, std::string> attributes;
  MessageAttributes message_attributes;
};

// One entry of a batch call (DeleteMessageBatch, ChangeMessageVisibilityBatch,
// SendMessageBatch): which entries failed and why.
struct BatchEntryError {
  std::string id;
  std::string code;
  std::string message;
  bool sender_fault = false;
};

struct BatchResult {
  std::vector<std::string> successful_ids;
  std::vector<BatchEntryError> failed;
};

}  // namespace dlq
