// The SNS and EventBridge clients against moto: a topic with SQS
// subscriptions (one with a RedrivePolicy and raw delivery) found by
// ListSubscriptions and read by GetSubscriptionAttributes, a Publish with
// attributes delivered to the subscribed queues; and PutEvents on a bus whose
// rule has an SQS target, the delivered event turned back into its entry and
// put again with its detail unchanged. Topics, subscriptions, buses, rules
// and targets are made with the raw APIs (the clients have no such calls).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "events/events_api.h"
#include "harness.h"
#include "moto_fixtures.h"
#include "sns/sns_api.h"
#include "sns_fixtures.h"

namespace dlq::it {
namespace {

// One EventBridge JSON 1.1 call for a fixture; returns the body.
std::string EventsCall(AwsClient& aws, const std::string& operation, const std::string& body) {
  AwsRequest r;
  r.operation = operation;
  r.headers = {{"Content-Type", "application/x-amz-json-1.1"}, {"X-Amz-Target", "AWSEvents." + operation}};
  r.body = body;
  auto response = aws.Call(r);
  EXPECT_TRUE(response.ok()) << operation << ": " << response.status().ToString();
  return response.ok() ? response->body : std::string();
}

// The messages `queue` holds now (one receive with a short long-poll).
std::vector<Message> ReceiveAll(AwsServices& svc, const std::string& queue) {
  ReceiveOptions ro;
  ro.wait_time_seconds = 1;
  auto received = svc.sqs().ReceiveMessages(queue, ro);
  EXPECT_TRUE(received.ok()) << received.status().ToString();
  return received.ok() ? *received : std::vector<Message>{};
}

TEST(SnsMotoTest, ASubscriptionsRedrivePolicyIsFoundAndPublishReachesTheQueuesWithItsAttributes) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  AwsClient sns_aws(svc->settings().Endpoint("sns"), svc->transport(), svc->credentials(), DefaultClock());
  AwsSnsApi sns(sns_aws);
  const std::string base = UniqueName("sns-it");
  auto raw_queue = svc->sqs().CreateQueue(base + "-raw", {});
  auto enveloped_queue = svc->sqs().CreateQueue(base + "-env", {});
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {});
  ASSERT_TRUE(raw_queue.ok() && enveloped_queue.ok() && dlq.ok());
  const std::string dlq_arn = QueueArn(*svc, *dlq);
  const std::string redrive = fmt::format(R"({{"deadLetterTargetArn":"{}"}})", dlq_arn);

  const std::string topic = XmlText(SnsCall(sns_aws, "CreateTopic", {{"Name", base}}), "TopicArn");
  ASSERT_FALSE(topic.empty());
  const std::string raw_sub = XmlText(SnsCall(sns_aws, "Subscribe",
                                              {{"TopicArn", topic},
                                               {"Protocol", "sqs"},
                                               {"Endpoint", QueueArn(*svc, *raw_queue)},
                                               {"Attributes.entry.1.key", "RawMessageDelivery"},
                                               {"Attributes.entry.1.value", "true"},
                                               {"ReturnSubscriptionArn", "true"}}),
                                      "SubscriptionArn");
  ASSERT_FALSE(raw_sub.empty());
  SnsCall(sns_aws, "SetSubscriptionAttributes",
          {{"SubscriptionArn", raw_sub}, {"AttributeName", "RedrivePolicy"}, {"AttributeValue", redrive}});
  SnsCall(sns_aws, "Subscribe",
          {{"TopicArn", topic}, {"Protocol", "sqs"}, {"Endpoint", QueueArn(*svc, *enveloped_queue)}});

  auto subscriptions = sns.ListSubscriptions();
  ASSERT_TRUE(subscriptions.ok()) << subscriptions.status().ToString();
  const SnsSubscription* found = nullptr;
  for (const SnsSubscription& s : *subscriptions) found = s.subscription_arn == raw_sub ? &s : found;
  ASSERT_NE(found, nullptr) << raw_sub;
  EXPECT_EQ(found->topic_arn, topic);
  EXPECT_EQ(found->protocol, "sqs");
  EXPECT_EQ(found->endpoint, QueueArn(*svc, *raw_queue));
  auto attributes = sns.GetSubscriptionAttributes(raw_sub);
  ASSERT_TRUE(attributes.ok()) << attributes.status().ToString();
  ASSERT_TRUE(attributes->count("RedrivePolicy"));
  EXPECT_NE(attributes->at("RedrivePolicy").find(dlq_arn), std::string::npos) << attributes->at("RedrivePolicy");
  EXPECT_EQ(attributes->at("RawMessageDelivery"), "true");
  auto gone = sns.GetSubscriptionAttributes(topic + ":00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(gone.status().code(), ErrorCode::kNotFound) << gone.status().ToString();

  PublishRequest publish;
  publish.topic_arn = topic;
  publish.message = R"({"order": 7, "note": "a & b = c+d"})";
  publish.attributes["kind"] = {"String", "created", ""};
  publish.attributes["count"] = {"Number", "3", ""};
  auto published = sns.Publish(publish);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  EXPECT_FALSE(published->message_id.empty());

  std::vector<Message> raw = ReceiveAll(*svc, *raw_queue);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_EQ(raw[0].body, publish.message);
  EXPECT_EQ(raw[0].message_attributes["kind"], publish.attributes["kind"]);
  EXPECT_EQ(raw[0].message_attributes["count"], publish.attributes["count"]);

  std::vector<Message> enveloped = ReceiveAll(*svc, *enveloped_queue);
  ASSERT_EQ(enveloped.size(), 1u);
  simdjson::dom::parser parser;
  simdjson::dom::element envelope;
  ASSERT_EQ(parser.parse(enveloped[0].body).get(envelope), simdjson::SUCCESS) << enveloped[0].body;
  EXPECT_EQ(std::string_view(envelope["Message"]), publish.message);
  EXPECT_EQ(std::string_view(envelope["TopicArn"]), topic);
  EXPECT_EQ(std::string_view(envelope["MessageId"]), published->message_id);
  EXPECT_EQ(std::string_view(envelope["MessageAttributes"]["kind"]["Value"]), "created");
  EXPECT_EQ(std::string_view(envelope["MessageAttributes"]["count"]["Type"]), "Number");
}

TEST(EventsMotoTest, PutEventsReachesTheRulesQueueAndTheDeliveredEventRoundTrips) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  AwsClient events_aws(svc->settings().Endpoint("events"), svc->transport(), svc->credentials(), DefaultClock());
  AwsEventsApi events(events_aws);
  const std::string bus = UniqueName("events-it");
  auto queue = svc->sqs().CreateQueue(bus + "-target", {});
  auto dlq = svc->sqs().CreateQueue(bus + "-dlq", {});
  ASSERT_TRUE(queue.ok() && dlq.ok());
  const std::string dlq_arn = QueueArn(*svc, *dlq);
  EventsCall(events_aws, "CreateEventBus", fmt::format(R"({{"Name":"{}"}})", bus));
  EventsCall(
      events_aws, "PutRule",
      fmt::format(R"({{"Name":"orders","EventBusName":"{}","EventPattern":"{{\"source\":[\"com.example.orders\"]}}"}})",
                  bus));
  EventsCall(events_aws, "PutTargets",
             fmt::format(R"({{"Rule":"orders","EventBusName":"{}","Targets":[{{"Id":"q","Arn":"{}",)"
                         R"("DeadLetterConfig":{{"Arn":"{}"}}}}]}})",
                         bus, QueueArn(*svc, *queue), dlq_arn));
  const std::string targets =
      EventsCall(events_aws, "ListTargetsByRule", fmt::format(R"({{"Rule":"orders","EventBusName":"{}"}})", bus));
  EXPECT_NE(targets.find(dlq_arn), std::string::npos) << targets;

  PutEventsEntry entry;
  entry.event_bus_name = bus;
  entry.source = "com.example.orders";
  entry.detail_type = "OrderPlaced";
  entry.detail = R"({"order": {"id": 7, "lines": [1, 2]}, "note": "a } b"})";  // as moto writes JSON back
  entry.resources = {"arn:aws:s3:::orders"};
  auto put = events.PutEvents({entry});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->size(), 1u);
  EXPECT_TRUE((*put)[0].ok()) << (*put)[0].error_code;

  std::vector<Message> delivered = ReceiveAll(*svc, *queue);
  ASSERT_EQ(delivered.size(), 1u);
  auto back = PutEventsEntryFromEvent(delivered[0].body, bus);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << delivered[0].body;
  EXPECT_EQ(back->detail, entry.detail);
  EXPECT_EQ(back->source, entry.source);
  EXPECT_EQ(back->detail_type, entry.detail_type);
  EXPECT_EQ(back->resources, entry.resources);
  EXPECT_TRUE(back->time.has_value());

  // Put again as read: the second delivery carries the same detail text.
  auto again = events.PutEvents({*back});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::vector<Message> redelivered = ReceiveAll(*svc, *queue);
  ASSERT_EQ(redelivered.size(), 1u);
  auto second = PutEventsEntryFromEvent(redelivered[0].body, bus);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->detail, entry.detail);
}

}  // namespace
}  // namespace dlq::it
