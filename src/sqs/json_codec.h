// The SQS AWS JSON 1.0 wire format: request body builders and response
// parsers, free functions so tests and the fuzzer reach them directly.
// Pure and thread-safe (each thread parses with its own simdjson parser).
// Parsers never trust their input: malformed or wrongly typed JSON yields
// kInternal ("malformed SQS response: ..."), never a crash. Absent or null
// optional fields read as empty.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sqs/sqs_client.h"
#include "sqs/types.h"

namespace dlq::sqs {

// Request bodies (JSON objects with the field names of the SQS API).
std::string BuildGetQueueUrlRequest(std::string_view name, std::string_view owner_account_id);
std::string BuildListQueuesRequest(std::string_view prefix, std::string_view next_token, int max_results);
std::string BuildGetQueueAttributesRequest(std::string_view queue_url, const std::vector<std::string>& names);
std::string BuildListDeadLetterSourceQueuesRequest(std::string_view queue_url, std::string_view next_token,
                                                   int max_results);
std::string BuildReceiveMessageRequest(std::string_view queue_url, const ReceiveOptions& options);
std::string BuildDeleteMessageBatchRequest(std::string_view queue_url, const std::vector<DeleteEntry>& entries);
std::string BuildChangeMessageVisibilityBatchRequest(std::string_view queue_url,
                                                     const std::vector<VisibilityEntry>& entries);
std::string BuildSendMessageBatchRequest(std::string_view queue_url, const std::vector<SendEntry>& entries);
std::string BuildSendMessageRequest(std::string_view queue_url, const SendEntry& entry);
std::string BuildCreateQueueRequest(std::string_view name, const std::map<std::string, std::string>& attributes);
std::string BuildSetQueueAttributesRequest(std::string_view queue_url,
                                           const std::map<std::string, std::string>& attributes);
// {"QueueUrl": url}: DeleteQueue.
std::string BuildQueueUrlRequest(std::string_view queue_url);

// One page of queue URLs; next_token is empty on the last page.
struct UrlPage {
  std::vector<std::string> urls;
  std::string next_token;
};

// Messages as sent, BinaryValue decoded from base64. Does not verify MD5s.
Result<std::vector<Message>> ParseReceiveMessageResponse(std::string_view json);
Result<UrlPage> ParseListQueuesResponse(std::string_view json);                  // "QueueUrls"
Result<UrlPage> ParseListDeadLetterSourceQueuesResponse(std::string_view json);  // "queueUrls"
Result<std::map<std::string, std::string>> ParseGetQueueAttributesResponse(std::string_view json);
// {"QueueUrl": ...}: GetQueueUrl and CreateQueue.
Result<std::string> ParseQueueUrlResponse(std::string_view json);
// DeleteMessageBatch and ChangeMessageVisibilityBatch.
Result<BatchResult> ParseBatchResponse(std::string_view json);
Result<SendBatchResult> ParseSendMessageBatchResponse(std::string_view json);
Result<SentMessage> ParseSendMessageResponse(std::string_view json);

}  // namespace dlq::sqs
