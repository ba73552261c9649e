#include "sqs/sqs_client.h"

#include <fmt/format.h>

#include <functional>
#include <set>

#include "common/strings.h"
#include "sqs/json_codec.h"
#include "sqs/limits.h"
#include "sqs/md5.h"

namespace dlq {
namespace {

using sqs::kMaxBatchEntries;
constexpr int kListPageSize = 1000;
constexpr int kMaxPages = 100000;  // guards against a server that never ends pagination

bool ValidBatchId(std::string_view id) {
  if (id.empty() || id.size() > 80) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

template <typename Entry>
std::vector<std::string> IdsOf(const std::vector<Entry>& entries) {
  std::vector<std::string> ids;
  ids.reserve(entries.size());
  for (const auto& e : entries) ids.push_back(e.id);
  return ids;
}

Status ValidateSendEntry(const SendEntry& e) {
  if (e.delay_seconds && (*e.delay_seconds < 0 || *e.delay_seconds > 900)) {
    return InvalidArgument(fmt::format("entry {}: DelaySeconds {} is outside 0..900", e.id, *e.delay_seconds));
  }
  for (const auto& [name, value] : e.message_attributes) {
    if (name.empty() || value.data_type.empty()) {
      return InvalidArgument(fmt::format("entry {}: message attribute '{}' needs a name and a data type", e.id, name));
    }
  }
  return Status::Ok();
}

// Follows NextToken until the last page.
template <typename BuildFn, typename ParseFn>
Result<std::vector<std::string>> ListAll(BuildFn&& build, ParseFn&& parse,
                                         const std::function<Result<std::string>(std::string)>& invoke) {
  std::vector<std::string> urls;
  std::string token;
  std::set<std::string> seen_tokens;
  for (int page = 0; page < kMaxPages; ++page) {
    DLQ_ASSIGN_OR_RETURN(std::string body, invoke(build(token)));
    DLQ_ASSIGN_OR_RETURN(sqs::UrlPage result, parse(body));
    urls.insert(urls.end(), std::make_move_iterator(result.urls.begin()), std::make_move_iterator(result.urls.end()));
    if (result.next_token.empty()) return urls;
    if (!seen_tokens.insert(result.next_token).second) {
      return Internal("pagination loop: the server repeated a NextToken");
    }
    token = std::move(result.next_token);
  }
  return Internal("pagination did not end");
}

}  // namespace

Status ReceiveOptions::Validate() const {
  if (max_messages < 1 || max_messages > 10) {
    return InvalidArgument(fmt::format("ReceiveOptions: max_messages {} is outside 1..10", max_messages));
  }
  if (wait_time_seconds < 0 || wait_time_seconds > 20) {
    return InvalidArgument(fmt::format("ReceiveOptions: wait_time_seconds {} is outside 0..20", wait_time_seconds));
  }
  if (visibility_timeout && (*visibility_timeout < 0 || *visibility_timeout > sqs::kMaxVisibilityTimeoutSeconds)) {
    return InvalidArgument(
        fmt::format("ReceiveOptions: visibility_timeout {} is outside 0..43200", *visibility_timeout));
  }
  return Status::Ok();
}

Status ValidateBatchIds(const std::vector<std::string>& ids) {
  if (ids.empty()) return InvalidArgument("batch has no entries");
  if (ids.size() > kMaxBatchEntries) {
    return InvalidArgument(fmt::format("batch has {} entries, at most {} allowed", ids.size(), kMaxBatchEntries));
  }
  std::set<std::string_view> seen;
  for (const auto& id : ids) {
    if (!ValidBatchId(id)) return InvalidArgument(fmt::format("batch entry id '{}' is not [A-Za-z0-9_-]{{1,80}}", id));
    if (!seen.insert(id).second) return InvalidArgument(fmt::format("batch entry id '{}' is used twice", id));
  }
  return Status::Ok();
}

Status ValidateBatchReply(const BatchResult& reply, const std::vector<std::string>& sent_ids) {
  std::set<std::string_view> sent(sent_ids.begin(), sent_ids.end());
  std::set<std::string_view> answered;
  auto check = [&](const std::string& id) -> Status {
    if (!sent.contains(id)) return Internal(fmt::format("reply names batch entry '{}', which was not sent", id));
    if (!answered.insert(id).second) return Internal(fmt::format("reply names batch entry '{}' twice", id));
    return Status::Ok();
  };
  for (const std::string& id : reply.successful_ids) DLQ_RETURN_IF_ERROR(check(id));
  for (const BatchEntryError& e : reply.failed) DLQ_RETURN_IF_ERROR(check(e.id));
  return Status::Ok();
}

Status VerifyReceived(std::vector<Message>& messages, std::vector<CorruptMessage>* corrupt) {
  size_t kept = 0;
  std::vector<Status> checks = VerifyMessages(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    Status& s = checks[i];
    if (!s.ok()) {
      if (corrupt == nullptr) return s;
      corrupt->push_back({messages[i].message_id, messages[i].receipt_handle, s.message()});
      continue;
    }
    if (kept != i) messages[kept] = std::move(messages[i]);
    ++kept;
  }
  messages.resize(kept);
  return Status::Ok();
}

Result<std::string> SqsClient::Invoke(std::string_view operation, const std::string& resource, std::string body,
                                      const std::atomic<bool>* cancel) {
  AwsRequest request;
  request.cancel = cancel;
  request.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                     {"X-Amz-Target", fmt::format("AmazonSQS.{}", operation)}};
  request.operation = std::string(operation);
  request.resource = resource;  // method "POST" and path "/" are AwsRequest's defaults
  request.body = std::move(body);
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, aws_.Call(request));
  return std::move(response.body);
}

namespace {
// Adds "operation resource" context to a parse failure.
Status ParseContext(const Status& s, std::string_view operation, std::string_view resource) {
  return s.WithContext(resource.empty() ? std::string(operation) : fmt::format("{} {}", operation, resource));
}
}  // namespace

Result<std::string> SqsClient::GetQueueUrl(const std::string& name, const std::string& owner_account_id) {
  DLQ_ASSIGN_OR_RETURN(std::string body,
                       Invoke("GetQueueUrl", name, sqs::BuildGetQueueUrlRequest(name, owner_account_id)));
  auto url = sqs::ParseQueueUrlResponse(body);
  if (!url.ok()) return ParseContext(url.status(), "GetQueueUrl", name);
  return url;
}

Result<std::vector<std::string>> SqsClient::ListQueues(const std::string& prefix) {
  auto result = ListAll(
      [&](const std::string& token) { return sqs::BuildListQueuesRequest(prefix, token, kListPageSize); },
      sqs::ParseListQueuesResponse, [&](std::string body) { return Invoke("ListQueues", prefix, std::move(body)); });
  if (!result.ok() && result.status().code() == ErrorCode::kInternal && !result.status().aws()) {
    return ParseContext(result.status(), "ListQueues", prefix);
  }
  return result;
}

Result<std::map<std::string, std::string>> SqsClient::GetQueueAttributes(const std::string& queue_url,
                                                                         const std::vector<std::string>& names) {
  DLQ_ASSIGN_OR_RETURN(std::string body,
                       Invoke("GetQueueAttributes", queue_url, sqs::BuildGetQueueAttributesRequest(queue_url, names)));
  auto attributes = sqs::ParseGetQueueAttributesResponse(body);
  if (!attributes.ok()) return ParseContext(attributes.status(), "GetQueueAttributes", queue_url);
  return attributes;
}

Result<std::vector<std::string>> SqsClient::ListDeadLetterSourceQueues(const std::string& queue_url) {
  auto result = ListAll(
      [&](const std::string& token) {
        return sqs::BuildListDeadLetterSourceQueuesRequest(queue_url, token, kListPageSize);
      },
      sqs::ParseListDeadLetterSourceQueuesResponse,
      [&](std::string body) { return Invoke("ListDeadLetterSourceQueues", queue_url, std::move(body)); });
  if (!result.ok() && result.status().code() == ErrorCode::kInternal && !result.status().aws()) {
    return ParseContext(result.status(), "ListDeadLetterSourceQueues", queue_url);
  }
  return result;
}

Result<std::vector<Message>> SqsClient::ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) {
  if (Status s = options.Validate(); !s.ok()) return ParseContext(s, "ReceiveMessage", queue_url);
  DLQ_ASSIGN_OR_RETURN(std::string body, Invoke("ReceiveMessage", queue_url,
                                                sqs::BuildReceiveMessageRequest(queue_url, options), options.cancel));
  auto messages = sqs::ParseReceiveMessageResponse(body);
  if (!messages.ok()) return ParseContext(messages.status(), "ReceiveMessage", queue_url);
  if (Status s = VerifyReceived(*messages, options.corrupt); !s.ok())
    return ParseContext(s, "ReceiveMessage", queue_url);
  return messages;
}

Result<BatchResult> SqsClient::DeleteMessageBatch(const std::string& queue_url,
                                                  const std::vector<DeleteEntry>& entries) {
  if (Status s = ValidateBatchIds(IdsOf(entries)); !s.ok()) return ParseContext(s, "DeleteMessageBatch", queue_url);
  DLQ_ASSIGN_OR_RETURN(std::string body, Invoke("DeleteMessageBatch", queue_url,
                                                sqs::BuildDeleteMessageBatchRequest(queue_url, entries)));
  auto result = sqs::ParseBatchResponse(body);
  if (!result.ok()) return ParseContext(result.status(), "DeleteMessageBatch", queue_url);
  if (Status s = ValidateBatchReply(*result, IdsOf(entries)); !s.ok()) {
    return ParseContext(s, "DeleteMessageBatch", queue_url);
  }
  return result;
}

Result<BatchResult> SqsClient::ChangeMessageVisibilityBatch(const std::string& queue_url,
                                                            const std::vector<VisibilityEntry>& entries) {
  if (Status s = ValidateBatchIds(IdsOf(entries)); !s.ok()) {
    return ParseContext(s, "ChangeMessageVisibilityBatch", queue_url);
  }
  for (const auto& e : entries) {
    if (e.visibility_timeout_seconds < 0 || e.visibility_timeout_seconds > sqs::kMaxVisibilityTimeoutSeconds) {
      return ParseContext(InvalidArgument(fmt::format("entry {}: VisibilityTimeout {} is outside 0..43200", e.id,
                                                      e.visibility_timeout_seconds)),
                          "ChangeMessageVisibilityBatch", queue_url);
    }
  }
  DLQ_ASSIGN_OR_RETURN(std::string body, Invoke("ChangeMessageVisibilityBatch", queue_url,
                                                sqs::BuildChangeMessageVisibilityBatchRequest(queue_url, entries)));
  auto result = sqs::ParseBatchResponse(body);
  if (!result.ok()) return ParseContext(result.status(), "ChangeMessageVisibilityBatch", queue_url);
  if (Status s = ValidateBatchReply(*result, IdsOf(entries)); !s.ok()) {
    return ParseContext(s, "ChangeMessageVisibilityBatch", queue_url);
  }
  return result;
}

Result<SendBatchResult> SqsClient::SendMessageBatch(const std::string& queue_url,
                                                    const std::vector<SendEntry>& entries) {
  if (Status s = ValidateBatchIds(IdsOf(entries)); !s.ok()) return ParseContext(s, "SendMessageBatch", queue_url);
  for (const auto& e : entries) {
    if (Status s = ValidateSendEntry(e); !s.ok()) return ParseContext(s, "SendMessageBatch", queue_url);
  }
  DLQ_ASSIGN_OR_RETURN(std::string body,
                       Invoke("SendMessageBatch", queue_url, sqs::BuildSendMessageBatchRequest(queue_url, entries)));
  auto parsed = sqs::ParseSendMessageBatchResponse(body);
  if (!parsed.ok()) return ParseContext(parsed.status(), "SendMessageBatch", queue_url);
  if (Status s = ValidateBatchReply(*parsed, IdsOf(entries)); !s.ok()) {
    return ParseContext(s, "SendMessageBatch", queue_url);
  }

  // Verify what SQS says it stored against what we sent.
  std::map<std::string_view, const SendEntry*> by_id;
  for (const auto& e : entries) by_id.emplace(e.id, &e);
  SendBatchResult result;
  result.failed = std::move(parsed->failed);
  for (SentMessage& sent : parsed->sent) {
    auto it = by_id.find(sent.id);
    if (it == by_id.end()) {
      return Internal(fmt::format("SendMessageBatch {}: response names unknown entry id '{}'", queue_url, sent.id));
    }
    const SendEntry& entry = *it->second;
    std::string problem;
    const std::string body_md5 = Md5OfBody(entry.body);
    const std::string attrs_md5 = Md5OfMessageAttributes(entry.message_attributes);
    if (!IEquals(sent.md5_of_body, body_md5)) {
      problem = fmt::format("MD5OfMessageBody {} does not match the sent body's {}", sent.md5_of_body, body_md5);
    } else if (!attrs_md5.empty() && !IEquals(sent.md5_of_message_attributes, attrs_md5)) {
      problem = fmt::format("MD5OfMessageAttributes {} does not match the sent attributes' {}",
                            sent.md5_of_message_attributes, attrs_md5);
    }
    if (!problem.empty()) {
      result.failed.push_back(BatchEntryError{
          .id = sent.id,
          .code = "MD5Mismatch",
          .message = fmt::format("message {}: {}", sent.message_id, problem),
          .sender_fault = false,
      });
      continue;
    }
    result.successful_ids.push_back(sent.id);
    result.sent.push_back(std::move(sent));
  }
  return result;
}

Result<SentMessage> SqsClient::SendMessage(const std::string& queue_url, const SendEntry& entry) {
  if (Status s = ValidateSendEntry(entry); !s.ok()) return ParseContext(s, "SendMessage", queue_url);
  DLQ_ASSIGN_OR_RETURN(std::string body,
                       Invoke("SendMessage", queue_url, sqs::BuildSendMessageRequest(queue_url, entry)));
  auto sent = sqs::ParseSendMessageResponse(body);
  if (!sent.ok()) return ParseContext(sent.status(), "SendMessage", queue_url);
  sent->id = entry.id;
  const std::string body_md5 = Md5OfBody(entry.body);
  const std::string attrs_md5 = Md5OfMessageAttributes(entry.message_attributes);
  if (!IEquals(sent->md5_of_body, body_md5) ||
      (!attrs_md5.empty() && !IEquals(sent->md5_of_message_attributes, attrs_md5))) {
    return DataLoss(fmt::format(
        "SendMessage {}: message {}: returned MD5s (body {}, attributes {}) do not match "
        "the sent body {} and attributes {}",
        queue_url, sent->message_id, sent->md5_of_body, sent->md5_of_message_attributes, body_md5, attrs_md5));
  }
  return sent;
}

Result<std::string> SqsClient::CreateQueue(const std::string& name,
                                           const std::map<std::string, std::string>& attributes) {
  DLQ_ASSIGN_OR_RETURN(std::string body, Invoke("CreateQueue", name, sqs::BuildCreateQueueRequest(name, attributes)));
  auto url = sqs::ParseQueueUrlResponse(body);
  if (!url.ok()) return ParseContext(url.status(), "CreateQueue", name);
  return url;
}

Status SqsClient::DeleteQueue(const std::string& queue_url) {
  return Invoke("DeleteQueue", queue_url, sqs::BuildQueueUrlRequest(queue_url)).status();
}

Status SqsClient::SetQueueAttributes(const std::string& queue_url,
                                     const std::map<std::string, std::string>& attributes) {
  if (attributes.empty()) return InvalidArgument(fmt::format("SetQueueAttributes {}: no attributes", queue_url));
  return Invoke("SetQueueAttributes", queue_url, sqs::BuildSetQueueAttributesRequest(queue_url, attributes)).status();
}

}  // namespace dlq
