#include "sns/sns_codec.h"

#include <fmt/format.h>

#include <pugixml.hpp>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/xml.h"

namespace dlq::sns {
namespace {

FormParams Begin(std::string_view action) {
  return {{"Action", std::string(action)}, {"Version", std::string(kApiVersion)}};
}

// The <Action>Result element of a <Action>Response document.
Result<pugi::xml_node> ResultElement(pugi::xml_document& doc, std::string_view xml, std::string_view action) {
  const std::string what = fmt::format("malformed {} response", action);
  pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) return Internal(fmt::format("{}: not XML (offset {}: {})", what, parsed.offset, parsed.description()));
  pugi::xml_node root = doc.document_element();
  const std::string response = fmt::format("{}Response", action);
  if (!root || XmlLocalName(root) != response) {
    return Internal(fmt::format("{}: root element is <{}>, not <{}>", what, root ? XmlLocalName(root) : "", response));
  }
  pugi::xml_node result = XmlChild(root, fmt::format("{}Result", action));
  if (!result) return Internal(fmt::format("{}: missing <{}Result>", what, action));
  return result;
}

// The child elements of `parent` named `name` ("member", "entry").
std::vector<pugi::xml_node> Elements(const pugi::xml_node& parent, std::string_view name) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node c = parent.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && XmlLocalName(c) == name) out.push_back(c);
  }
  return out;
}

Result<SnsSubscription> ParseSubscription(const pugi::xml_node& member, size_t index) {
  SnsSubscription s;
  s.subscription_arn = XmlChildText(member, "SubscriptionArn", true);
  s.topic_arn = XmlChildText(member, "TopicArn", true);
  s.protocol = XmlChildText(member, "Protocol", true);
  s.endpoint = XmlChildText(member, "Endpoint", true);
  s.owner = XmlChildText(member, "Owner", true);
  for (auto [name, value] : {std::pair{"SubscriptionArn", &s.subscription_arn}, std::pair{"TopicArn", &s.topic_arn}}) {
    if (value->empty()) {
      return Internal(fmt::format("malformed ListSubscriptions response: member {} has no <{}>", index + 1, name));
    }
  }
  return s;
}

}  // namespace

FormParams ListSubscriptionsParams(std::string_view next_token) {
  FormParams params = Begin("ListSubscriptions");
  if (!next_token.empty()) params.emplace_back("NextToken", std::string(next_token));
  return params;
}

FormParams GetSubscriptionAttributesParams(std::string_view subscription_arn) {
  FormParams params = Begin("GetSubscriptionAttributes");
  params.emplace_back("SubscriptionArn", std::string(subscription_arn));
  return params;
}

FormParams PublishParams(const PublishRequest& request) {
  FormParams params = Begin("Publish");
  params.emplace_back("TopicArn", request.topic_arn);
  params.emplace_back("Message", request.message);
  if (!request.subject.empty()) params.emplace_back("Subject", request.subject);
  if (!request.message_group_id.empty()) params.emplace_back("MessageGroupId", request.message_group_id);
  if (!request.message_deduplication_id.empty()) {
    params.emplace_back("MessageDeduplicationId", request.message_deduplication_id);
  }
  int n = 0;
  for (const auto& [name, value] : request.attributes) {
    const std::string prefix = fmt::format("MessageAttributes.entry.{}", ++n);
    params.emplace_back(prefix + ".Name", name);
    params.emplace_back(prefix + ".Value.DataType", value.data_type);
    if (value.IsBinary()) {
      params.emplace_back(prefix + ".Value.BinaryValue", Base64Encode(value.binary_value));
    } else {
      params.emplace_back(prefix + ".Value.StringValue", value.string_value);
    }
  }
  return params;
}

Result<SubscriptionPage> ParseListSubscriptionsResponse(std::string_view xml) {
  pugi::xml_document doc;
  DLQ_ASSIGN_OR_RETURN(pugi::xml_node result, ResultElement(doc, xml, "ListSubscriptions"));
  SubscriptionPage page;
  std::vector<pugi::xml_node> members = Elements(XmlChild(result, "Subscriptions"), "member");
  for (size_t i = 0; i < members.size(); ++i) {
    DLQ_ASSIGN_OR_RETURN(SnsSubscription s, ParseSubscription(members[i], i));
    page.subscriptions.push_back(std::move(s));
  }
  page.next_token = XmlChildText(result, "NextToken", true);
  return page;
}

Result<std::map<std::string, std::string>> ParseGetSubscriptionAttributesResponse(std::string_view xml) {
  pugi::xml_document doc;
  DLQ_ASSIGN_OR_RETURN(pugi::xml_node result, ResultElement(doc, xml, "GetSubscriptionAttributes"));
  std::map<std::string, std::string> attributes;
  std::vector<pugi::xml_node> entries = Elements(XmlChild(result, "Attributes"), "entry");
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string key = XmlChildText(entries[i], "key", true);
    if (key.empty()) {
      return Internal(
          fmt::format("malformed GetSubscriptionAttributes response: attribute entry {} has no <key>", i + 1));
    }
    // Values (a RedrivePolicy's JSON, a FilterPolicy) keep their whitespace.
    attributes.insert_or_assign(std::move(key), XmlChildText(entries[i], "value"));
  }
  return attributes;
}

Result<PublishResult> ParsePublishResponse(std::string_view xml) {
  pugi::xml_document doc;
  DLQ_ASSIGN_OR_RETURN(pugi::xml_node result, ResultElement(doc, xml, "Publish"));
  PublishResult out;
  out.message_id = XmlChildText(result, "MessageId", true);
  out.sequence_number = XmlChildText(result, "SequenceNumber", true);
  if (out.message_id.empty()) return Internal("malformed Publish response: missing <MessageId>");
  return out;
}

}  // namespace dlq::sns
