#include "sqs/json_codec.h"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <simdjson.h>

#include "common/crypto.h"

namespace dlq::sqs {
namespace {

// ---------------------------------------------------------------- writing

class JsonWriter {
 public:
  JsonWriter() : writer_(buffer_) { writer_.StartObject(); }

  void Key(std::string_view key) { writer_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size())); }
  void String(std::string_view value) { writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size())); }
  void Field(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void OptionalField(std::string_view key, std::string_view value) {
    if (!value.empty()) Field(key, value);
  }
  void Field(std::string_view key, int value) {
    Key(key);
    writer_.Int(value);
  }
  void StringList(std::string_view key, const std::vector<std::string>& values) {
    Key(key);
    writer_.StartArray();
    for (const auto& v : values) String(v);
    writer_.EndArray();
  }
  void StringMap(std::string_view key, const std::map<std::string, std::string>& values) {
    Key(key);
    writer_.StartObject();
    for (const auto& [k, v] : values) Field(k, v);
    writer_.EndObject();
  }
  void MessageAttributesField(std::string_view key, const MessageAttributes& attributes) {
    Key(key);
    writer_.StartObject();
    for (const auto& [name, value] : attributes) {
      Key(name);
      writer_.StartObject();
      Field("DataType", value.data_type);
      if (value.IsBinary()) {
        Field("BinaryValue", Base64Encode(value.binary_value));
      } else {
        Field("StringValue", value.string_value);
      }
      writer_.EndObject();
    }
    writer_.EndObject();
  }
  void StartObject() { writer_.StartObject(); }
  void EndObject() { writer_.EndObject(); }
  void StartArray(std::string_view key) {
    Key(key);
    writer_.StartArray();
  }
  void EndArray() { writer_.EndArray(); }

  std::string Finish() {
    writer_.EndObject();
    return std::string(buffer_.GetString(), buffer_.GetSize());
  }

 private:
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

// Fields of one SendMessage / SendMessageBatch entry (without Id).
void WriteSendFields(JsonWriter& w, const SendEntry& entry) {
  w.Field("MessageBody", entry.body);
  if (entry.delay_seconds) w.Field("DelaySeconds", *entry.delay_seconds);
  if (!entry.message_attributes.empty()) w.MessageAttributesField("MessageAttributes", entry.message_attributes);
  if (!entry.message_system_attributes.empty()) {
    MessageAttributes system;
    for (const auto& [name, value] : entry.message_system_attributes) {
      system[name] = MessageAttributeValue{.data_type = "String", .string_value = value, .binary_value = {}};
    }
    w.MessageAttributesField("MessageSystemAttributes", system);
  }
  w.OptionalField("MessageGroupId", entry.message_group_id);
  w.OptionalField("MessageDeduplicationId", entry.message_deduplication_id);
}

// ---------------------------------------------------------------- parsing

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

Status Malformed(std::string_view what) {
  return Internal(fmt::format("malformed SQS response: {}", what));
}

// Parses `json` into `root` (an object) with this thread's parser. The
// element stays valid until the next parse on this thread.
Status ParseRootObject(std::string_view json, object& root) {
  thread_local simdjson::dom::parser parser;
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: given an
  // unpadded buffer it allocates and fills a padded copy on every parse, so
  // copy into this thread's grow-only buffer instead.
  thread_local std::string padded;
  padded.assign(json);
  padded.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  element doc;
  if (auto error = parser.parse(padded.data(), json.size(), /*realloc_if_needed=*/false).get(doc); error) {
    return Malformed(fmt::format("not JSON ({})", simdjson::error_message(error)));
  }
  if (doc.get_object().get(root)) return Malformed("top level is not an object");
  return Status::Ok();
}

// Looks up `key`; false when absent or null.
bool Find(const object& obj, std::string_view key, element& out) {
  if (obj.at_key(key).get(out)) return false;
  return !out.is_null();
}

// A string field's value ("" for null); `key` names it in an error.
Status StringValue(const element& e, std::string_view key, std::string& out) {
  if (e.is_null()) {
    out.clear();
    return Status::Ok();
  }
  std::string_view sv;
  if (e.get_string().get(sv)) return Malformed(fmt::format("{} is not a string", key));
  out.assign(sv.data(), sv.size());
  return Status::Ok();
}

// Reads an optional string field into out ("" when absent or null).
Status ReadString(const object& obj, std::string_view key, std::string& out) {
  element e;
  if (!Find(obj, key, e)) {
    out.clear();
    return Status::Ok();
  }
  return StringValue(e, key, out);
}

Status ReadRequiredString(const object& obj, std::string_view key, std::string& out) {
  DLQ_RETURN_IF_ERROR(ReadString(obj, key, out));
  if (out.empty()) return Malformed(fmt::format("{} is missing", key));
  return Status::Ok();
}

// A scalar as text: strings as they are, numbers and booleans as JSON text
// (some stand-ins send attribute values unquoted). `map`.`name` names it in
// an error (formatted only then: this runs for every attribute received).
Status ScalarText(const element& e, std::string_view map, std::string_view name, std::string& out) {
  switch (e.type()) {
    case element_type::STRING: {
      std::string_view sv;
      if (e.get_string().get(sv)) return Malformed(fmt::format("{}.{} is not a string", map, name));
      out.assign(sv.data(), sv.size());
      return Status::Ok();
    }
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
    case element_type::BOOL: out = simdjson::minify(e); return Status::Ok();
    default: return Malformed(fmt::format("{}.{} is not a string", map, name));
  }
}

// An object of name -> scalar (empty for null).
Status StringMapValue(const element& e, std::string_view key, std::map<std::string, std::string>& out) {
  out.clear();
  if (e.is_null()) return Status::Ok();
  object map;
  if (e.get_object().get(map)) return Malformed(fmt::format("{} is not an object", key));
  for (auto field : map) {
    std::string value;
    DLQ_RETURN_IF_ERROR(ScalarText(field.value, key, field.key, value));
    out.emplace(std::string(field.key), std::move(value));
  }
  return Status::Ok();
}

// An optional object of name -> scalar.
Status ReadStringMap(const object& obj, std::string_view key, std::map<std::string, std::string>& out) {
  element e;
  if (!Find(obj, key, e)) {
    out.clear();
    return Status::Ok();
  }
  return StringMapValue(e, key, out);
}

// An optional array of objects; calls fn(object) for each.
template <typename Fn>
Status ForEachObject(const object& obj, std::string_view key, Fn&& fn) {
  element e;
  if (!Find(obj, key, e)) return Status::Ok();
  simdjson::dom::array array;
  if (e.get_array().get(array)) return Malformed(fmt::format("{} is not an array", key));
  for (element item : array) {
    object item_obj;
    if (item.get_object().get(item_obj)) return Malformed(fmt::format("{} has a non-object entry", key));
    DLQ_RETURN_IF_ERROR(fn(item_obj));
  }
  return Status::Ok();
}

// A MessageAttributes object (empty for null).
Status MessageAttributesValue(const element& e, MessageAttributes& out) {
  out.clear();
  if (e.is_null()) return Status::Ok();
  object map;
  if (e.get_object().get(map)) return Malformed("MessageAttributes is not an object");
  for (auto field : map) {
    object value_obj;
    if (field.value.get_object().get(value_obj)) {
      return Malformed(fmt::format("message attribute {} is not an object", field.key));
    }
    MessageAttributeValue value;
    DLQ_RETURN_IF_ERROR(ReadRequiredString(value_obj, "DataType", value.data_type));
    if (value.IsBinary()) {
      std::string_view encoded;
      element binary;
      if (Find(value_obj, "BinaryValue", binary) && binary.get_string().get(encoded)) {
        return Malformed("BinaryValue is not a string");
      }
      auto decoded = Base64Decode(encoded);
      if (!decoded) return Malformed(fmt::format("message attribute {} has invalid base64", field.key));
      value.binary_value = std::move(*decoded);
    } else {
      DLQ_RETURN_IF_ERROR(ReadString(value_obj, "StringValue", value.string_value));
    }
    out.emplace(std::string(field.key), std::move(value));
  }
  return Status::Ok();
}

Status ReadFailed(const object& root, std::vector<BatchEntryError>& failed) {
  return ForEachObject(root, "Failed", [&](const object& entry) -> Status {
    BatchEntryError error;
    DLQ_RETURN_IF_ERROR(ReadRequiredString(entry, "Id", error.id));
    DLQ_RETURN_IF_ERROR(ReadString(entry, "Code", error.code));
    DLQ_RETURN_IF_ERROR(ReadString(entry, "Message", error.message));
    element fault;
    if (Find(entry, "SenderFault", fault)) {
      bool b = false;
      if (fault.get_bool().get(b)) return Malformed("SenderFault is not a boolean");
      error.sender_fault = b;
    }
    failed.push_back(std::move(error));
    return Status::Ok();
  });
}

Result<UrlPage> ParseUrlPage(std::string_view json, std::string_view list_key) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  UrlPage page;
  element e;
  if (Find(root, list_key, e)) {
    simdjson::dom::array array;
    if (e.get_array().get(array)) return Malformed(fmt::format("{} is not an array", list_key));
    for (element item : array) {
      std::string_view sv;
      if (item.get_string().get(sv)) return Malformed(fmt::format("{} has a non-string entry", list_key));
      page.urls.emplace_back(sv);
    }
  }
  DLQ_RETURN_IF_ERROR(ReadString(root, "NextToken", page.next_token));
  return page;
}

Status ReadSentMessage(const object& obj, SentMessage& sent) {
  DLQ_RETURN_IF_ERROR(ReadRequiredString(obj, "MessageId", sent.message_id));
  DLQ_RETURN_IF_ERROR(ReadString(obj, "MD5OfMessageBody", sent.md5_of_body));
  DLQ_RETURN_IF_ERROR(ReadString(obj, "MD5OfMessageAttributes", sent.md5_of_message_attributes));
  DLQ_RETURN_IF_ERROR(ReadString(obj, "SequenceNumber", sent.sequence_number));
  return Status::Ok();
}

}  // namespace

std::string BuildGetQueueUrlRequest(std::string_view name, std::string_view owner_account_id) {
  JsonWriter w;
  w.Field("QueueName", name);
  w.OptionalField("QueueOwnerAWSAccountId", owner_account_id);
  return w.Finish();
}

std::string BuildListQueuesRequest(std::string_view prefix, std::string_view next_token, int max_results) {
  JsonWriter w;
  w.OptionalField("QueueNamePrefix", prefix);
  w.OptionalField("NextToken", next_token);
  w.Field("MaxResults", max_results);
  return w.Finish();
}

std::string BuildGetQueueAttributesRequest(std::string_view queue_url, const std::vector<std::string>& names) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.StringList("AttributeNames", names);
  return w.Finish();
}

std::string BuildListDeadLetterSourceQueuesRequest(std::string_view queue_url, std::string_view next_token,
                                                   int max_results) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.OptionalField("NextToken", next_token);
  w.Field("MaxResults", max_results);
  return w.Finish();
}

std::string BuildReceiveMessageRequest(std::string_view queue_url, const ReceiveOptions& options) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  // AttributeNames (not MessageSystemAttributeNames): accepted by SQS and by every local stand-in.
  if (!options.attribute_names.empty()) w.StringList("AttributeNames", options.attribute_names);
  if (!options.message_attribute_names.empty()) w.StringList("MessageAttributeNames", options.message_attribute_names);
  w.Field("MaxNumberOfMessages", options.max_messages);
  w.Field("WaitTimeSeconds", options.wait_time_seconds);
  if (options.visibility_timeout) w.Field("VisibilityTimeout", *options.visibility_timeout);
  w.OptionalField("ReceiveRequestAttemptId", options.receive_request_attempt_id);
  return w.Finish();
}

std::string BuildDeleteMessageBatchRequest(std::string_view queue_url, const std::vector<DeleteEntry>& entries) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.StartArray("Entries");
  for (const auto& e : entries) {
    w.StartObject();
    w.Field("Id", e.id);
    w.Field("ReceiptHandle", e.receipt_handle);
    w.EndObject();
  }
  w.EndArray();
  return w.Finish();
}

std::string BuildChangeMessageVisibilityBatchRequest(std::string_view queue_url,
                                                     const std::vector<VisibilityEntry>& entries) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.StartArray("Entries");
  for (const auto& e : entries) {
    w.StartObject();
    w.Field("Id", e.id);
    w.Field("ReceiptHandle", e.receipt_handle);
    w.Field("VisibilityTimeout", e.visibility_timeout_seconds);
    w.EndObject();
  }
  w.EndArray();
  return w.Finish();
}

std::string BuildSendMessageBatchRequest(std::string_view queue_url, const std::vector<SendEntry>& entries) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.StartArray("Entries");
  for (const auto& e : entries) {
    w.StartObject();
    w.Field("Id", e.id);
    WriteSendFields(w, e);
    w.EndObject();
  }
  w.EndArray();
  return w.Finish();
}

std::string BuildSendMessageRequest(std::string_view queue_url, const SendEntry& entry) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  WriteSendFields(w, entry);
  return w.Finish();
}

std::string BuildCreateQueueRequest(std::string_view name, const std::map<std::string, std::string>& attributes) {
  JsonWriter w;
  w.Field("QueueName", name);
  if (!attributes.empty()) w.StringMap("Attributes", attributes);
  return w.Finish();
}

std::string BuildSetQueueAttributesRequest(std::string_view queue_url,
                                           const std::map<std::string, std::string>& attributes) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  w.StringMap("Attributes", attributes);
  return w.Finish();
}

std::string BuildQueueUrlRequest(std::string_view queue_url) {
  JsonWriter w;
  w.Field("QueueUrl", queue_url);
  return w.Finish();
}

Result<std::vector<Message>> ParseReceiveMessageResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  std::vector<Message> messages;
  messages.reserve(10);  // SQS's most per receive
  DLQ_RETURN_IF_ERROR(ForEachObject(root, "Messages", [&](const object& m) -> Status {
    // One pass over the fields (a lookup per field would scan them each
    // time). The first of a repeated key counts, as a lookup would find it.
    enum Field { kId, kHandle, kBody, kBodyMd5, kAttrsMd5, kAttrs, kMessageAttrs, kFields };
    static constexpr std::string_view kNames[kFields] = {
        "MessageId", "ReceiptHandle", "Body", "MD5OfBody", "MD5OfMessageAttributes", "Attributes", "MessageAttributes"};
    Message message;
    element values[kFields];
    bool seen[kFields] = {};
    for (auto field : m) {
      for (int f = 0; f < kFields; ++f) {
        if (!seen[f] && field.key == kNames[f]) {
          seen[f] = true;
          values[f] = field.value;
          break;
        }
      }
    }
    auto text = [&](Field f, std::string& out) -> Status {
      if (!seen[f]) return Status::Ok();
      return StringValue(values[f], kNames[f], out);
    };
    DLQ_RETURN_IF_ERROR(text(kId, message.message_id));
    if (message.message_id.empty()) return Malformed("MessageId is missing");
    DLQ_RETURN_IF_ERROR(text(kHandle, message.receipt_handle));
    if (message.receipt_handle.empty()) return Malformed("ReceiptHandle is missing");
    DLQ_RETURN_IF_ERROR(text(kBody, message.body));
    DLQ_RETURN_IF_ERROR(text(kBodyMd5, message.md5_of_body));
    DLQ_RETURN_IF_ERROR(text(kAttrsMd5, message.md5_of_message_attributes));
    if (seen[kAttrs]) DLQ_RETURN_IF_ERROR(StringMapValue(values[kAttrs], kNames[kAttrs], message.attributes));
    if (seen[kMessageAttrs]) {
      Status s = MessageAttributesValue(values[kMessageAttrs], message.message_attributes);
      if (!s.ok()) return s.WithContext(fmt::format("message {}", message.message_id));
    }
    messages.push_back(std::move(message));
    return Status::Ok();
  }));
  return messages;
}

Result<UrlPage> ParseListQueuesResponse(std::string_view json) {
  return ParseUrlPage(json, "QueueUrls");
}

Result<UrlPage> ParseListDeadLetterSourceQueuesResponse(std::string_view json) {
  return ParseUrlPage(json, "queueUrls");
}

Result<std::map<std::string, std::string>> ParseGetQueueAttributesResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  std::map<std::string, std::string> attributes;
  DLQ_RETURN_IF_ERROR(ReadStringMap(root, "Attributes", attributes));
  return attributes;
}

Result<std::string> ParseQueueUrlResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  std::string url;
  DLQ_RETURN_IF_ERROR(ReadRequiredString(root, "QueueUrl", url));
  return url;
}

Result<BatchResult> ParseBatchResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  BatchResult result;
  DLQ_RETURN_IF_ERROR(ForEachObject(root, "Successful", [&](const object& entry) -> Status {
    std::string id;
    DLQ_RETURN_IF_ERROR(ReadRequiredString(entry, "Id", id));
    result.successful_ids.push_back(std::move(id));
    return Status::Ok();
  }));
  DLQ_RETURN_IF_ERROR(ReadFailed(root, result.failed));
  return result;
}

Result<SendBatchResult> ParseSendMessageBatchResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  SendBatchResult result;
  DLQ_RETURN_IF_ERROR(ForEachObject(root, "Successful", [&](const object& entry) -> Status {
    SentMessage sent;
    DLQ_RETURN_IF_ERROR(ReadRequiredString(entry, "Id", sent.id));
    DLQ_RETURN_IF_ERROR(ReadSentMessage(entry, sent));
    result.successful_ids.push_back(sent.id);
    result.sent.push_back(std::move(sent));
    return Status::Ok();
  }));
  DLQ_RETURN_IF_ERROR(ReadFailed(root, result.failed));
  return result;
}

Result<SentMessage> ParseSendMessageResponse(std::string_view json) {
  object root;
  DLQ_RETURN_IF_ERROR(ParseRootObject(json, root));
  SentMessage sent;
  DLQ_RETURN_IF_ERROR(ReadSentMessage(root, sent));
  return sent;
}

}  // namespace dlq::sqs
