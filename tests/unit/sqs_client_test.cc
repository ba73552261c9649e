#include "sqs/sqs_client.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <functional>
#include <map>
#include <string>

#include "aws/aws_client.h"
#include "aws/credentials.h"
#include "common/clock.h"
#include "sqs/json_codec.h"
#include "sqs/md5.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

constexpr char kEndpoint[] = "http://127.0.0.1:9324";
// A queue URL as local stand-ins return it: its host does not resolve, so the
// client must never send to it.
constexpr char kQueueUrl[] = "http://sqs.elasticmq.invalid:9324/000000000000/orders-dlq";

// Digests computed independently with Python (hashlib / moto's SQS model); see sqs_md5_test.cc.
constexpr char kUnicodeBodyMd5[] = "3563e19498ccc3353a6eab8079ad97ac";  // "café 🚀 \"q\" \\ \n\t"
constexpr char kMixedAttrsMd5[] = "82d69659f09bd5be0368e698f0814646";   // blob/trace/n below

std::string Header(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : "";
}

rapidjson::Document Json(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  EXPECT_FALSE(doc.HasParseError()) << body;
  return doc;
}

std::string Target(const HttpRequest& r) {
  std::string t = Header(r, "X-Amz-Target");
  return t.rfind("AmazonSQS.", 0) == 0 ? t.substr(10) : t;
}

class SqsClientTest : public ::testing::Test {
 protected:
  SqsClientTest()
      : credentials_(Credentials{.access_key_id = "AKIDEXAMPLE", .secret_access_key = "secretsecretsecret"}),
        aws_(ServiceEndpoint{.service = "sqs", .region = "us-east-1", .endpoint = kEndpoint}, transport_, credentials_,
             clock_, RetryOptions{.max_attempts = 1}),
        client_(aws_) {
    transport_.SetHandler([this](const HttpRequest& r) -> Result<HttpResponse> {
      auto it = responses_.find(Target(r));
      if (it == responses_.end()) return MakeResponse(500, "{}");
      if (it->second.empty()) return MakeResponse(500, R"({"__type":"InternalError"})");
      HttpResponse resp = it->second.front();
      if (it->second.size() > 1) it->second.erase(it->second.begin());
      return resp;
    });
  }

  // Queues responses for an operation; the last one repeats.
  void Respond(const std::string& op, std::string body, int status = 200, HttpHeaders headers = {}) {
    responses_[op].push_back(MakeResponse(status, std::move(body), std::move(headers)));
  }

  FakeHttpTransport transport_;
  StaticCredentialsProvider credentials_;
  FakeClock clock_;
  AwsClient aws_;
  SqsClient client_;
  std::map<std::string, std::vector<HttpResponse>> responses_;
};

// A ReceiveMessage response with JSON escapes, non-ASCII text, an emoji as a
// surrogate pair, and Binary / custom-typed attributes.
std::string UnicodeReceiveResponse(std::string body_md5 = kUnicodeBodyMd5) {
  return R"({"Messages":[{"MessageId":"5fea7756-0ea4-451a-a703-a558b933e274","ReceiptHandle":"AQEBrh\/1==",)"
         R"("MD5OfBody":")" +
         body_md5 +
         R"(","Body":"caf\u00e9 \ud83d\ude80 \"q\" \\ \n\t",)"
         R"("Attributes":{"SentTimestamp":"1757500000000","ApproximateReceiveCount":"4",)"
         R"("DeadLetterQueueSourceArn":"arn:aws:sqs:us-east-1:000000000000:orders"},)"
         R"("MD5OfMessageAttributes":"82d69659f09bd5be0368e698f0814646",)"
         R"("MessageAttributes":{"blob":{"DataType":"Binary.gzip","BinaryValue":"AAEC//4="},)"
         R"("trace":{"DataType":"String.custom","StringValue":"h\u00e9llo 😀"},)"
         R"("n":{"DataType":"Number.float","StringValue":"-3.5e10"}}}]})";
}

TEST_F(SqsClientTest, ReceiveSendsJsonToConfiguredEndpointNotQueueUrlHost) {
  Respond("ReceiveMessage", R"({"Messages":[]})");
  ReceiveOptions options;
  options.wait_time_seconds = 20;
  options.visibility_timeout = 120;
  options.receive_request_attempt_id = "attempt-1";
  auto messages = client_.ReceiveMessages(kQueueUrl, options);
  ASSERT_TRUE(messages.ok()) << messages.status().ToString();
  EXPECT_TRUE(messages->empty());

  ASSERT_EQ(transport_.calls(), 1);
  const HttpRequest r = transport_.requests()[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url.rfind("http://127.0.0.1:9324/", 0), 0u) << r.url;
  EXPECT_EQ(r.url.find("elasticmq"), std::string::npos);
  EXPECT_EQ(Header(r, "X-Amz-Target"), "AmazonSQS.ReceiveMessage");
  EXPECT_EQ(Header(r, "Content-Type"), "application/x-amz-json-1.0");
  EXPECT_NE(Header(r, "Authorization").find("/us-east-1/sqs/aws4_request"), std::string::npos);

  auto doc = Json(r.body);
  EXPECT_STREQ(doc["QueueUrl"].GetString(), kQueueUrl);
  EXPECT_EQ(doc["MaxNumberOfMessages"].GetInt(), 10);
  EXPECT_EQ(doc["WaitTimeSeconds"].GetInt(), 20);
  EXPECT_EQ(doc["VisibilityTimeout"].GetInt(), 120);
  EXPECT_STREQ(doc["ReceiveRequestAttemptId"].GetString(), "attempt-1");
  ASSERT_EQ(doc["AttributeNames"].Size(), 1u);
  EXPECT_STREQ(doc["AttributeNames"][0].GetString(), "All");
  ASSERT_EQ(doc["MessageAttributeNames"].Size(), 1u);
  EXPECT_STREQ(doc["MessageAttributeNames"][0].GetString(), "All");
}

TEST_F(SqsClientTest, ReceiveOmitsVisibilityTimeoutWhenUnset) {
  Respond("ReceiveMessage", "{}");
  ASSERT_TRUE(client_.ReceiveMessages(kQueueUrl, ReceiveOptions{}).ok());
  auto doc = Json(transport_.requests()[0].body);
  EXPECT_FALSE(doc.HasMember("VisibilityTimeout"));
  EXPECT_FALSE(doc.HasMember("ReceiveRequestAttemptId"));
}

TEST_F(SqsClientTest, ReceiveDecodesEscapesUnicodeAndBinaryAttributes) {
  Respond("ReceiveMessage", UnicodeReceiveResponse());
  auto messages = client_.ReceiveMessages(kQueueUrl, ReceiveOptions{});
  ASSERT_TRUE(messages.ok()) << messages.status().ToString();
  ASSERT_EQ(messages->size(), 1u);
  const Message& m = (*messages)[0];
  EXPECT_EQ(m.message_id, "5fea7756-0ea4-451a-a703-a558b933e274");
  EXPECT_EQ(m.receipt_handle, "AQEBrh/1==");
  EXPECT_EQ(m.body, "caf\xc3\xa9 \xf0\x9f\x9a\x80 \"q\" \\ \n\t");
  EXPECT_EQ(m.attributes.at("ApproximateReceiveCount"), "4");
  EXPECT_EQ(m.attributes.at("DeadLetterQueueSourceArn"), "arn:aws:sqs:us-east-1:000000000000:orders");
  EXPECT_EQ(m.message_attributes.at("blob").data_type, "Binary.gzip");
  EXPECT_EQ(m.message_attributes.at("blob").binary_value, std::string("\x00\x01\x02\xff\xfe", 5));
  EXPECT_EQ(m.message_attributes.at("trace").string_value, "h\xc3\xa9llo \xf0\x9f\x98\x80");
  EXPECT_EQ(m.message_attributes.at("n").string_value, "-3.5e10");
  EXPECT_EQ(m.md5_of_message_attributes, kMixedAttrsMd5);
}

TEST_F(SqsClientTest, ReceiveFailsWithDataLossNamingTheMessageOnBodyDigestMismatch) {
  Respond("ReceiveMessage", UnicodeReceiveResponse("00000000000000000000000000000000"));
  auto messages = client_.ReceiveMessages(kQueueUrl, ReceiveOptions{});
  ASSERT_FALSE(messages.ok());
  EXPECT_EQ(messages.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(messages.status().message().find("5fea7756-0ea4-451a-a703-a558b933e274"), std::string::npos);
  EXPECT_NE(messages.status().message().find("MD5OfBody"), std::string::npos);
  EXPECT_NE(messages.status().message().find("orders-dlq"), std::string::npos);
}

TEST_F(SqsClientTest, ReceiveFailsWithDataLossOnAttributeDigestMismatch) {
  std::string response = UnicodeReceiveResponse();
  response.replace(response.find("-3.5e10"), 7, "-3.6e10");
  Respond("ReceiveMessage", response);
  auto messages = client_.ReceiveMessages(kQueueUrl, ReceiveOptions{});
  ASSERT_FALSE(messages.ok());
  EXPECT_EQ(messages.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(messages.status().message().find("MD5OfMessageAttributes"), std::string::npos);
}

TEST_F(SqsClientTest, ReceiveRejectsOutOfRangeOptionsWithoutSending) {
  ReceiveOptions too_many;
  too_many.max_messages = 11;
  EXPECT_EQ(client_.ReceiveMessages(kQueueUrl, too_many).status().code(), ErrorCode::kInvalidArgument);
  ReceiveOptions long_wait;
  long_wait.wait_time_seconds = 21;
  EXPECT_EQ(client_.ReceiveMessages(kQueueUrl, long_wait).status().code(), ErrorCode::kInvalidArgument);
  ReceiveOptions zero;
  zero.max_messages = 0;
  EXPECT_EQ(client_.ReceiveMessages(kQueueUrl, zero).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(transport_.calls(), 0);
}

TEST_F(SqsClientTest, QueueDoesNotExistMapsToNotFound) {
  Respond("GetQueueAttributes",
          R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."})", 400,
          {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}, {"x-amzn-RequestId", "req-123"}});
  auto attrs = client_.GetQueueAttributes(kQueueUrl, {"All"});
  ASSERT_FALSE(attrs.ok());
  EXPECT_EQ(attrs.status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(attrs.status().aws().has_value());
  EXPECT_EQ(attrs.status().aws()->request_id, "req-123");
  EXPECT_FALSE(attrs.status().retryable());
}

TEST_F(SqsClientTest, GetQueueAttributesSendsNamesAndParsesMap) {
  Respond("GetQueueAttributes",
          R"({"Attributes":{"ApproximateNumberOfMessages":"42","MessageRetentionPeriod":"345600",)"
          R"("RedrivePolicy":"{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:1:x\",\"maxReceiveCount\":5}"}})");
  auto attrs = client_.GetQueueAttributes(kQueueUrl, {"ApproximateNumberOfMessages", "RedrivePolicy"});
  ASSERT_TRUE(attrs.ok()) << attrs.status().ToString();
  EXPECT_EQ(attrs->at("ApproximateNumberOfMessages"), "42");
  EXPECT_EQ(attrs->at("RedrivePolicy"), R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:x","maxReceiveCount":5})");
  auto doc = Json(transport_.requests()[0].body);
  ASSERT_EQ(doc["AttributeNames"].Size(), 2u);
  EXPECT_STREQ(doc["AttributeNames"][1].GetString(), "RedrivePolicy");
}

TEST_F(SqsClientTest, ListQueuesFollowsNextTokenAcrossPages) {
  Respond("ListQueues", R"({"QueueUrls":["http://q/1/a-dlq","http://q/1/b-dlq"],"NextToken":"tok+/="})");
  Respond("ListQueues", R"({"QueueUrls":["http://q/1/c-dlq"]})");
  auto urls = client_.ListQueues("dlq-");
  ASSERT_TRUE(urls.ok()) << urls.status().ToString();
  EXPECT_EQ(*urls, (std::vector<std::string>{"http://q/1/a-dlq", "http://q/1/b-dlq", "http://q/1/c-dlq"}));
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  auto first = Json(requests[0].body);
  EXPECT_STREQ(first["QueueNamePrefix"].GetString(), "dlq-");
  EXPECT_EQ(first["MaxResults"].GetInt(), 1000);
  EXPECT_FALSE(first.HasMember("NextToken"));
  auto second = Json(requests[1].body);
  EXPECT_STREQ(second["NextToken"].GetString(), "tok+/=");
}

TEST_F(SqsClientTest, ListQueuesStopsWhenServerRepeatsToken) {
  Respond("ListQueues", R"({"QueueUrls":["http://q/1/a"],"NextToken":"same"})");
  auto urls = client_.ListQueues("");
  ASSERT_FALSE(urls.ok());
  EXPECT_EQ(urls.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(transport_.calls(), 2);
}

TEST_F(SqsClientTest, ListDeadLetterSourceQueuesReadsLowerCaseQueueUrlsAndPaginates) {
  Respond("ListDeadLetterSourceQueues", R"({"queueUrls":["http://q/1/orders"],"NextToken":"n1"})");
  Respond("ListDeadLetterSourceQueues", R"({"queueUrls":["http://q/1/payments"],"NextToken":null})");
  auto urls = client_.ListDeadLetterSourceQueues(kQueueUrl);
  ASSERT_TRUE(urls.ok()) << urls.status().ToString();
  EXPECT_EQ(*urls, (std::vector<std::string>{"http://q/1/orders", "http://q/1/payments"}));
  auto second = Json(transport_.requests()[1].body);
  EXPECT_STREQ(second["QueueUrl"].GetString(), kQueueUrl);
  EXPECT_STREQ(second["NextToken"].GetString(), "n1");
}

TEST_F(SqsClientTest, DeleteBatchReportsEveryEntrysOutcome) {
  Respond("DeleteMessageBatch",
          R"({"Successful":[{"Id":"m0"}],"Failed":[{"Id":"m1","SenderFault":true,"Code":"ReceiptHandleIsInvalid",)"
          R"("Message":"The input receipt handle is invalid."}]})");
  auto result = client_.DeleteMessageBatch(kQueueUrl, {{"m0", "rh-0"}, {"m1", "rh-\"1\""}});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->successful_ids, (std::vector<std::string>{"m0"}));
  ASSERT_EQ(result->failed.size(), 1u);
  EXPECT_EQ(result->failed[0].id, "m1");
  EXPECT_EQ(result->failed[0].code, "ReceiptHandleIsInvalid");
  EXPECT_TRUE(result->failed[0].sender_fault);
  auto doc = Json(transport_.requests()[0].body);
  EXPECT_EQ(Header(transport_.requests()[0], "X-Amz-Target"), "AmazonSQS.DeleteMessageBatch");
  ASSERT_EQ(doc["Entries"].Size(), 2u);
  EXPECT_STREQ(doc["Entries"][1]["ReceiptHandle"].GetString(), "rh-\"1\"");
}

TEST_F(SqsClientTest, BatchReplyNamingAnEntryThatWasNotSentIsAnErrorWithContext) {
  // Out of range, non-numeric and repeated ids: an error naming the entry,
  // the operation and the queue, never an index into our batch.
  Respond("DeleteMessageBatch", R"({"Successful":[{"Id":"0"},{"Id":"7"}]})");
  auto r = client_.DeleteMessageBatch(kQueueUrl, {{"0", "rh-0"}, {"1", "rh-1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("'7'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("DeleteMessageBatch"), std::string::npos) << r.status().message();
  Respond("ChangeMessageVisibilityBatch", R"({"Successful":[{"Id":"zero"}]})");
  auto v = client_.ChangeMessageVisibilityBatch(kQueueUrl, {{"0", "rh-0", 30}});
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("'zero'"), std::string::npos) << v.status().message();
  Respond(
      "DeleteMessageBatch",
      R"({"Successful":[{"Id":"0"}],"Failed":[{"Id":"0","SenderFault":false,"Code":"InternalError","Message":"x"}]})");
  EXPECT_FALSE(client_.DeleteMessageBatch(kQueueUrl, {{"0", "rh-0"}}).ok());
}

TEST_F(SqsClientTest, ReceiveSplitsOutCorruptMessagesWhenAsked) {
  Respond(
      "ReceiveMessage",
      R"({"Messages":[{"MessageId":"a","ReceiptHandle":"rh-a","Body":"hello","MD5OfBody":"5d41402abc4b2a76b9719d911017c592"},)"
      R"({"MessageId":"b","ReceiptHandle":"rh-b","Body":"hellp","MD5OfBody":"5d41402abc4b2a76b9719d911017c592"}]})");
  std::vector<CorruptMessage> corrupt;
  ReceiveOptions ro;
  ro.corrupt = &corrupt;
  auto got = client_.ReceiveMessages(kQueueUrl, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].message_id, "a");
  ASSERT_EQ(corrupt.size(), 1u);
  EXPECT_EQ(corrupt[0].message_id, "b");
  EXPECT_EQ(corrupt[0].receipt_handle, "rh-b");
  EXPECT_NE(corrupt[0].reason.find("MD5OfBody mismatch"), std::string::npos);
}

TEST_F(SqsClientTest, BatchCallsRejectBadEntriesBeforeSending) {
  EXPECT_EQ(client_.DeleteMessageBatch(kQueueUrl, {}).status().code(), ErrorCode::kInvalidArgument);
  std::vector<DeleteEntry> eleven;
  for (int i = 0; i < 11; ++i) eleven.push_back({"e" + std::to_string(i), "rh"});
  EXPECT_EQ(client_.DeleteMessageBatch(kQueueUrl, eleven).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(client_.DeleteMessageBatch(kQueueUrl, {{"a", "1"}, {"a", "2"}}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(client_.DeleteMessageBatch(kQueueUrl, {{"bad id!", "1"}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(client_.ChangeMessageVisibilityBatch(kQueueUrl, {{"a", "1", 43201}}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(client_.SendMessageBatch(kQueueUrl, {SendEntry{.id = "x", .body = "b"}, SendEntry{.id = "x", .body = "c"}})
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(transport_.calls(), 0);
}

TEST_F(SqsClientTest, ChangeVisibilityBatchSendsTimeoutPerEntry) {
  Respond("ChangeMessageVisibilityBatch", R"({"Successful":[{"Id":"a"},{"Id":"b"}],"Failed":[]})");
  auto result = client_.ChangeMessageVisibilityBatch(kQueueUrl, {{"a", "rh-a", 300}, {"b", "rh-b", 0}});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->successful_ids.size(), 2u);
  auto doc = Json(transport_.requests()[0].body);
  EXPECT_EQ(doc["Entries"][0]["VisibilityTimeout"].GetInt(), 300);
  EXPECT_EQ(doc["Entries"][1]["VisibilityTimeout"].GetInt(), 0);
}

SendEntry ReplayEntry(std::string id) {
  SendEntry e;
  e.id = std::move(id);
  e.body = "caf\xc3\xa9 \xf0\x9f\x9a\x80 \"q\" \\ \n\t";
  e.message_attributes = {
      {"blob",
       {.data_type = "Binary.gzip", .string_value = {}, .binary_value = std::string("\x00\x01\x02\xff\xfe", 5)}},
      {"trace", {.data_type = "String.custom", .string_value = "h\xc3\xa9llo \xf0\x9f\x98\x80"}},
      {"n", {.data_type = "Number.float", .string_value = "-3.5e10"}},
  };
  e.delay_seconds = 5;
  e.message_system_attributes = {{"AWSTraceHeader", "Root=1-5759e988-bd862e3fe1be46a994272793"}};
  return e;
}

TEST_F(SqsClientTest, SendBatchEncodesAttributesAndVerifiesReturnedDigests) {
  Respond("SendMessageBatch",
          std::string(R"({"Successful":[)") + R"({"Id":"ok","MessageId":"id-ok","MD5OfMessageBody":")" +
              kUnicodeBodyMd5 + R"(","MD5OfMessageAttributes":")" + kMixedAttrsMd5 +
              R"(","SequenceNumber":"18849496460467696128"},)" +
              R"({"Id":"bad","MessageId":"id-bad","MD5OfMessageBody":"ffffffffffffffffffffffffffffffff",)" +
              R"("MD5OfMessageAttributes":")" + kMixedAttrsMd5 + R"("}],)" +
              R"("Failed":[{"Id":"throttled","SenderFault":false,"Code":"InternalError","Message":"try again"}]})");
  auto result = client_.SendMessageBatch(kQueueUrl, {ReplayEntry("ok"), ReplayEntry("bad"), ReplayEntry("throttled")});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->successful_ids, (std::vector<std::string>{"ok"}));
  ASSERT_EQ(result->sent.size(), 1u);
  EXPECT_EQ(result->sent[0].message_id, "id-ok");
  EXPECT_EQ(result->sent[0].sequence_number, "18849496460467696128");
  ASSERT_EQ(result->failed.size(), 2u);
  EXPECT_EQ(result->failed[0].id, "throttled");
  EXPECT_EQ(result->failed[1].id, "bad");
  EXPECT_EQ(result->failed[1].code, "MD5Mismatch");
  EXPECT_NE(result->failed[1].message.find("id-bad"), std::string::npos);

  const HttpRequest r = transport_.requests()[0];
  EXPECT_EQ(Header(r, "X-Amz-Target"), "AmazonSQS.SendMessageBatch");
  auto doc = Json(r.body);
  const auto& entry = doc["Entries"][0];
  EXPECT_EQ(std::string(entry["MessageBody"].GetString(), entry["MessageBody"].GetStringLength()),
            "caf\xc3\xa9 \xf0\x9f\x9a\x80 \"q\" \\ \n\t");
  EXPECT_EQ(entry["DelaySeconds"].GetInt(), 5);
  EXPECT_STREQ(entry["MessageAttributes"]["blob"]["DataType"].GetString(), "Binary.gzip");
  EXPECT_STREQ(entry["MessageAttributes"]["blob"]["BinaryValue"].GetString(), "AAEC//4=");
  EXPECT_FALSE(entry["MessageAttributes"]["blob"].HasMember("StringValue"));
  EXPECT_STREQ(entry["MessageAttributes"]["n"]["StringValue"].GetString(), "-3.5e10");
  EXPECT_STREQ(entry["MessageSystemAttributes"]["AWSTraceHeader"]["DataType"].GetString(), "String");
  EXPECT_STREQ(entry["MessageSystemAttributes"]["AWSTraceHeader"]["StringValue"].GetString(),
               "Root=1-5759e988-bd862e3fe1be46a994272793");
  EXPECT_FALSE(entry.HasMember("MessageGroupId"));
}

TEST_F(SqsClientTest, SendMessageFailsWithDataLossOnDigestMismatch) {
  Respond("SendMessage", R"({"MessageId":"m","MD5OfMessageBody":"00000000000000000000000000000000"})");
  auto sent = client_.SendMessage(kQueueUrl, SendEntry{.id = "", .body = "hello"});
  EXPECT_EQ(sent.status().code(), ErrorCode::kDataLoss);
}

TEST_F(SqsClientTest, SendMessageSendsFifoFields) {
  // hashlib.md5(b"hello").hexdigest()
  Respond("SendMessage",
          R"({"MessageId":"m","MD5OfMessageBody":"5d41402abc4b2a76b9719d911017c592","SequenceNumber":"1"})");
  auto sent = client_.SendMessage(
      kQueueUrl, SendEntry{.id = "", .body = "hello", .message_group_id = "g1", .message_deduplication_id = "d1"});
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(sent->sequence_number, "1");
  auto doc = Json(transport_.requests()[0].body);
  EXPECT_STREQ(doc["MessageGroupId"].GetString(), "g1");
  EXPECT_STREQ(doc["MessageDeduplicationId"].GetString(), "d1");
  EXPECT_FALSE(doc.HasMember("MessageAttributes"));
}

TEST_F(SqsClientTest, GetQueueUrlAndCreateQueueRoundTrip) {
  Respond("GetQueueUrl", R"({"QueueUrl":"http://sqs.invalid/111/orders-dlq"})");
  Respond("CreateQueue", R"({"QueueUrl":"http://sqs.invalid/111/new-dlq"})");
  auto url = client_.GetQueueUrl("orders-dlq", "111");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(*url, "http://sqs.invalid/111/orders-dlq");
  auto created = client_.CreateQueue("new-dlq", {{"MessageRetentionPeriod", "1209600"}});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(*created, "http://sqs.invalid/111/new-dlq");
  auto requests = transport_.requests();
  auto get = Json(requests[0].body);
  EXPECT_STREQ(get["QueueName"].GetString(), "orders-dlq");
  EXPECT_STREQ(get["QueueOwnerAWSAccountId"].GetString(), "111");
  auto create = Json(requests[1].body);
  EXPECT_STREQ(create["Attributes"]["MessageRetentionPeriod"].GetString(), "1209600");
}

TEST_F(SqsClientTest, DeleteAndSetAttributesUseQueueUrlField) {
  Respond("DeleteQueue", "{}");
  Respond("SetQueueAttributes", "");
  EXPECT_TRUE(client_.SetQueueAttributes(kQueueUrl, {{"VisibilityTimeout", "60"}}).ok());
  EXPECT_TRUE(client_.DeleteQueue(kQueueUrl).ok());
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(Header(requests[1], "X-Amz-Target"), "AmazonSQS.DeleteQueue");
  EXPECT_STREQ(Json(requests[1].body)["QueueUrl"].GetString(), kQueueUrl);
  EXPECT_STREQ(Json(requests[0].body)["Attributes"]["VisibilityTimeout"].GetString(), "60");
}

TEST_F(SqsClientTest, MalformedResponseIsInternalErrorWithContext) {
  Respond("ReceiveMessage", R"({"Messages":[{"MessageId":"x"}]})");
  auto messages = client_.ReceiveMessages(kQueueUrl, ReceiveOptions{});
  ASSERT_FALSE(messages.ok());
  EXPECT_EQ(messages.status().code(), ErrorCode::kInternal);
  EXPECT_NE(messages.status().message().find("ReceiveMessage"), std::string::npos);
  EXPECT_NE(messages.status().message().find("ReceiptHandle"), std::string::npos);
}

// ---- Codec edge cases, straight on the parsers.

TEST(SqsJsonCodecTest, RejectsNonJsonAndNonObjectRoots) {
  EXPECT_EQ(sqs::ParseReceiveMessageResponse("not json").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(sqs::ParseReceiveMessageResponse("[1,2]").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(sqs::ParseReceiveMessageResponse(R"({"Messages":{}})").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(sqs::ParseBatchResponse(R"({"Failed":[{"Code":"x"}]})").status().code(), ErrorCode::kInternal);
  EXPECT_EQ(sqs::ParseQueueUrlResponse("{}").status().code(), ErrorCode::kInternal);
}

TEST(SqsJsonCodecTest, RejectsInvalidBase64BinaryValue) {
  auto r = sqs::ParseReceiveMessageResponse(
      R"({"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"","MessageAttributes":)"
      R"({"b":{"DataType":"Binary","BinaryValue":"@@@"}}}]})");
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("base64"), std::string::npos);
}

TEST(SqsJsonCodecTest, EmptyResponseMeansNoMessagesAndNullsReadAsAbsent) {
  auto empty = sqs::ParseReceiveMessageResponse("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto page = sqs::ParseListQueuesResponse(R"({"QueueUrls":null,"NextToken":null})");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->urls.empty());
  EXPECT_TRUE(page->next_token.empty());
}

TEST(SqsJsonCodecTest, AttributeValuesSentAsNumbersAreKeptAsText) {
  auto attrs = sqs::ParseGetQueueAttributesResponse(R"({"Attributes":{"ApproximateNumberOfMessages":7,"X":true}})");
  ASSERT_TRUE(attrs.ok()) << attrs.status().ToString();
  EXPECT_EQ(attrs->at("ApproximateNumberOfMessages"), "7");
  EXPECT_EQ(attrs->at("X"), "true");
}

TEST(SqsJsonCodecTest, BodyWithNulAndControlCharactersRoundTrips) {
  const char raw[] = "a\0b\x01\x1f\"\\/</script>";
  const std::string body(raw, sizeof(raw) - 1);
  std::string json = sqs::BuildSendMessageRequest("u", SendEntry{.id = "", .body = body});
  // Re-parse the request body as if it were a received message's Body.
  auto doc = Json(json);
  EXPECT_EQ(std::string(doc["MessageBody"].GetString(), doc["MessageBody"].GetStringLength()), body);
}

}  // namespace
}  // namespace dlq
