#include "replay/origin_clue.h"

#include <gtest/gtest.h>

#include <string>

#include "common/json_writer.h"

namespace dlq {
namespace {

// Samples written from the shapes AWS documents (origin_clue.cc cites the
// pages); ids, ARNs and payloads are made up.

ArchiveRecord Record(std::string body, MessageAttributes attributes = {}) {
  ArchiveRecord r;
  r.message_id = "5fea7756-0ea4-451a-a703-a558b933e274";
  r.body = std::move(body);
  r.message_attributes = std::move(attributes);
  return r;
}

MessageAttributeValue Str(std::string v) {
  return {"String", std::move(v), ""};
}
MessageAttributeValue Num(std::string v) {
  return {"Number", std::move(v), ""};
}

std::string DestinationRecord(std::string_view request_payload) {
  return std::string(R"({
  "version": "1.0",
  "timestamp": "2026-03-02T10:11:12.345Z",
  "requestContext": {
    "requestId": "7d1c2b3a-0000-4a4a-9c9c-1234567890ab",
    "functionArn": "arn:aws:lambda:eu-west-1:111122223333:function:charge-card:live",
    "condition": "RetriesExhausted",
    "approximateInvokeCount": 3
  },
  "requestPayload": )") +
         std::string(request_payload) + R"(,
  "responseContext": {"statusCode": 200, "executedVersion": "7", "functionError": "Unhandled"},
  "responsePayload": {"errorType": "CardDeclined", "errorMessage": "card 4242 declined"}
})";
}

TEST(OriginClueTest, LambdaAsyncDlqMessageIsTheEventWithRequestIdAndError) {
  const std::string event = R"({"orderId": "o-17", "amount": 1250})";
  OriginClue c = ReadOriginClue(Record(event, {{"RequestID", Str("a1b2c3d4-0000-4e4e-8f8f-abcdefabcdef")},
                                               {"ErrorCode", Num("200")},
                                               {"ErrorMessage", Str("Task timed out after 3.00 seconds")}}));
  EXPECT_EQ(c.kind, ClueKind::kLambdaAsync);
  EXPECT_EQ(ClueKindName(c.kind), "lambda-async");
  EXPECT_EQ(c.request_id, "a1b2c3d4-0000-4e4e-8f8f-abcdefabcdef");
  EXPECT_EQ(c.error, "200: Task timed out after 3.00 seconds");
  EXPECT_EQ(c.payload, event);
  EXPECT_TRUE(c.function_arn.empty());
  EXPECT_TRUE(c.unreplayable.empty());
}

TEST(OriginClueTest, DestinationRecordGivesFunctionRequestConditionErrorAndExactPayload) {
  const std::string payload = R"({ "orderId" : "o-17",  "items": [1, 2,3] })";
  OriginClue c = ReadOriginClue(Record(DestinationRecord(payload)));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(ClueKindName(c.kind), "lambda-destination");
  EXPECT_EQ(c.function_arn, "arn:aws:lambda:eu-west-1:111122223333:function:charge-card:live");
  EXPECT_EQ(c.request_id, "7d1c2b3a-0000-4a4a-9c9c-1234567890ab");
  EXPECT_EQ(c.condition, "RetriesExhausted");
  EXPECT_EQ(c.error, "CardDeclined: card 4242 declined");
  EXPECT_EQ(c.payload, payload);
  EXPECT_TRUE(c.unreplayable.empty());
}

TEST(OriginClueTest, DestinationPayloadIsByteForByteWhateverItsType) {
  for (std::string payload : {
           std::string(R"({"s":"quote \" backslash \\ brace } bracket ] \u00e9\u2028 \ud83d\ude00","n":1.50e+02})"),
           std::string("[\n\t{\"a\" : [ ]},\r\n\t\"}]\"\n]"),
           std::string(R"("a string with \"quotes\" and \\u escapes \u0041")"),
           std::string("-0.000e-10"),
           std::string("12345678901234567890123456789"),
           std::string("[-98765432109876543210, 1e123, 0.12345678901234567890123]"),
           std::string(R"({"id": 123456789012345678901234, "s": "123456789012345678901234"})"),
           std::string("true"),
           std::string("null"),
           std::string("{}"),
           std::string("\"\""),
       }) {
    OriginClue c = ReadOriginClue(Record(DestinationRecord(payload)));
    EXPECT_EQ(c.kind, ClueKind::kLambdaDestination) << payload;
    EXPECT_EQ(c.payload, payload);
  }
}

TEST(OriginClueTest, DestinationPayloadLastInTheObjectAndSurroundedBySpaceIsExact) {
  const std::string body =
      "{\"requestContext\":{\"requestId\":\"r\",\"functionArn\":\"arn:aws:lambda:us-east-1:1:function:f\"},"
      "\"requestPayload\" :  \n [1,{\"k\":\"v\"}] \n\t}";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(c.payload, "[1,{\"k\":\"v\"}]");
}

TEST(OriginClueTest, DestinationPayloadIsTheFirstOfDuplicateKeysAndIgnoresNestedLookalikes) {
  const std::string body =
      R"({"requestContext":{"requestId":"r","functionArn":"arn:aws:lambda:us-east-1:1:function:f"},)"
      R"("responsePayload":{"requestPayload":"nested"},"requestPayload":{"first":1},"requestPayload":{"second":2}})";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.payload, R"({"first":1})");
}

TEST(OriginClueTest, HugeDestinationPayloadComesBackWhole) {
  std::string payload = "{\"blob\":\"" + std::string(900 * 1024, 'x') + "\",\"tail\":[" + std::string("1,") + "2]}";
  OriginClue c = ReadOriginClue(Record(DestinationRecord(payload)));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(c.payload.size(), payload.size());
  EXPECT_EQ(c.payload, payload);
}

TEST(OriginClueTest, EventSourceMappingRecordIsADestinationWithNoPayloadAndAReason) {
  const std::string body = R"({
  "requestContext": {"requestId": "c9b8fa9f-aaaa-bbbb-cccc-0c604cde93a5",
    "functionArn": "arn:aws:lambda:us-east-2:111122223333:function:stream-reader",
    "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 1},
  "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
  "version": "1.0", "timestamp": "2026-01-14T00:38:06.021Z",
  "KinesisBatchInfo": {"shardId": "shardId-000000000001", "startSequenceNumber": "4960118965842235937883",
    "endSequenceNumber": "4960118965842235937899", "batchSize": 500,
    "streamArn": "arn:aws:kinesis:us-east-2:111122223333:stream/clicks"}
})";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(c.function_arn, "arn:aws:lambda:us-east-2:111122223333:function:stream-reader");
  EXPECT_EQ(c.condition, "RetryAttemptsExhausted");
  EXPECT_EQ(c.error, "Unhandled");
  EXPECT_TRUE(c.payload.empty());
  EXPECT_NE(c.unreplayable.find("KinesisBatchInfo"), std::string::npos) << c.unreplayable;
  EXPECT_NE(c.unreplayable.find("stream/clicks"), std::string::npos) << c.unreplayable;
}

TEST(OriginClueTest, DynamoDbStreamRecordIsRefusedEvenWithARequestPayload) {
  const std::string body =
      R"({"requestContext":{"requestId":"r","functionArn":"arn:aws:lambda:us-east-1:1:function:f"},)"
      R"("requestPayload":{"sneaky":true},"DDBStreamBatchInfo":{"shardId":"s","batchSize":1}})";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_TRUE(c.payload.empty());
  EXPECT_NE(c.unreplayable.find("DDBStreamBatchInfo"), std::string::npos);
}

TEST(OriginClueTest, DestinationRecordWithoutRequestPayloadSaysSo) {
  const std::string body =
      R"({"version":"1.0","requestContext":{"requestId":"r","functionArn":"arn:aws:lambda:us-east-1:1:function:f",)"
      R"("condition":"EventAgeExceeded"},"responseContext":{"statusCode":200}})";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(c.condition, "EventAgeExceeded");
  EXPECT_TRUE(c.payload.empty());
  EXPECT_NE(c.unreplayable.find("requestPayload"), std::string::npos);
}

TEST(OriginClueTest, EventBridgeTargetMessageIsTheEventWithRuleTargetAndCondition) {
  const std::string event =
      R"({"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"OrderPlaced","source":"shop",)"
      R"("account":"111122223333","time":"2026-02-01T12:00:00Z","region":"eu-west-1","resources":[],"detail":{}})";
  OriginClue c =
      ReadOriginClue(Record(event, {{"RULE_ARN", Str("arn:aws:events:eu-west-1:111122223333:rule/orders")},
                                    {"TARGET_ARN", Str("arn:aws:lambda:eu-west-1:111122223333:function:ship")},
                                    {"ERROR_CODE", Str("SDK_CLIENT_ERROR")},
                                    {"ERROR_MESSAGE", Str("Unable to invoke Lambda function")},
                                    {"EXHAUSTED_RETRY_CONDITION", Str("MaximumRetryAttempts")},
                                    {"RETRY_ATTEMPTS", Str("185")}}));
  EXPECT_EQ(c.kind, ClueKind::kEventBridgeTarget);
  EXPECT_EQ(ClueKindName(c.kind), "eventbridge-target");
  EXPECT_EQ(c.rule_arn, "arn:aws:events:eu-west-1:111122223333:rule/orders");
  EXPECT_EQ(c.target_arn, "arn:aws:lambda:eu-west-1:111122223333:function:ship");
  EXPECT_EQ(c.condition, "MaximumRetryAttempts");
  EXPECT_EQ(c.error, "SDK_CLIENT_ERROR: Unable to invoke Lambda function");
  EXPECT_EQ(c.payload, event);
}

TEST(OriginClueTest, SchedulerMessageIsTheTargetInputWithScheduleAndTarget) {
  OriginClue c = ReadOriginClue(
      Record("{\"report\":\"daily\"}", {{"SCHEDULE_ARN", Str("arn:aws:scheduler:us-west-2:111122223333:schedule/"
                                                             "default/nightly-report")},
                                        {"TARGET_ARN", Str("arn:aws:sqs:us-west-2:111122223333:reports")},
                                        {"ERROR_CODE", Str("AWS.Scheduler.InternalServerError")},
                                        {"ERROR_MESSAGE", Str("Unexpected error")},
                                        {"EXECUTION_ID", Str("d32c5kddcf5bb8c3")},
                                        {"EXHAUSTED_RETRY_CONDITION", Str("MaximumEventAgeInSeconds")},
                                        {"IS_PAYLOAD_TRUNCATED", Str("false")},
                                        {"RETRY_ATTEMPTS", Str("3")}}));
  EXPECT_EQ(c.kind, ClueKind::kSchedulerTarget);
  EXPECT_EQ(ClueKindName(c.kind), "scheduler-target");
  EXPECT_EQ(c.rule_arn, "arn:aws:scheduler:us-west-2:111122223333:schedule/default/nightly-report");
  EXPECT_EQ(c.target_arn, "arn:aws:sqs:us-west-2:111122223333:reports");
  EXPECT_EQ(c.condition, "MaximumEventAgeInSeconds");
  EXPECT_EQ(c.error, "AWS.Scheduler.InternalServerError: Unexpected error");
  EXPECT_EQ(c.payload, "{\"report\":\"daily\"}");
  EXPECT_TRUE(c.unreplayable.empty());
}

TEST(OriginClueTest, TruncatedSchedulerPayloadIsUnreplayable) {
  OriginClue c = ReadOriginClue(Record(
      "{\"report\":\"da", {{"SCHEDULE_ARN", Str("arn:aws:scheduler:x")}, {"IS_PAYLOAD_TRUNCATED", Str("true")}}));
  EXPECT_EQ(c.kind, ClueKind::kSchedulerTarget);
  EXPECT_TRUE(c.payload.empty());
  EXPECT_NE(c.unreplayable.find("IS_PAYLOAD_TRUNCATED"), std::string::npos);
}

TEST(OriginClueTest, SnsEnvelopeGivesTopicAndThePublishedMessageUnescaped) {
  const std::string body = R"({
  "Type" : "Notification",
  "MessageId" : "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  "TopicArn" : "arn:aws:sns:us-west-2:111122223333:orders",
  "Subject" : "placed",
  "Message" : "{\"orderId\":\"o-9\",\"note\":\"line\\nbreak \u00e9\"}",
  "Timestamp" : "2026-02-01T12:00:00.000Z",
  "SignatureVersion" : "1",
  "Signature" : "EXAMPLEpH+...",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-EXAMPLE.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=EXAMPLE",
  "MessageAttributes" : {"tier" : {"Type":"String","Value":"gold"}}
})";
  OriginClue c = ReadOriginClue(Record(body));
  EXPECT_EQ(c.kind, ClueKind::kSnsEnvelope);
  EXPECT_EQ(ClueKindName(c.kind), "sns-envelope");
  EXPECT_EQ(c.topic_arn, "arn:aws:sns:us-west-2:111122223333:orders");
  EXPECT_EQ(c.payload, "{\"orderId\":\"o-9\",\"note\":\"line\\nbreak \xC3\xA9\"}");
}

TEST(OriginClueTest, RawSnsDeliveryAndPlainMessagesSayNothing) {
  for (std::string body : {std::string("plain text"), std::string(R"({"orderId":"o-1"})"), std::string("[1,2]"),
                           std::string(R"({"Type":"SubscriptionConfirmation","TopicArn":"t","MessageId":"m",)"
                                       R"("Message":"x"})")}) {
    OriginClue c = ReadOriginClue(Record(body));
    EXPECT_EQ(c.kind, ClueKind::kNone) << body;
    EXPECT_EQ(ClueKindName(c.kind), "none");
    EXPECT_EQ(c.payload, body);
    EXPECT_TRUE(c.unreplayable.empty());
  }
}

TEST(OriginClueTest, MalformedDestinationLookalikesAreNone) {
  const std::string full = DestinationRecord(R"({"a":1})");
  for (std::string body :
       {full.substr(0, full.size() / 2), full.substr(0, full.size() - 1), full + "}", full + "x",
        std::string(R"({"requestContext":{"requestId":"r","functionArn":"f"},"requestPayload":})"),
        std::string(R"({"requestContext":"arn:aws:lambda:us-east-1:1:function:f"})"),
        std::string(R"({"requestContext":{"requestId":"r","functionArn":7},"requestPayload":1})"),
        std::string(R"({"requestContext":{"functionArn":"f"},"requestPayload":1})"),
        std::string("{\"requestContext\":{\"requestId\":\"r\",\"functionArn\":\"f\"},"
                    "\"requestPayload\":\"bad \x01 control\"}"),
        std::string("\xEF\xBB\xBF{\"a\":\"\xC3\x28\"}"), DestinationRecord("012345678901234567890"),
        DestinationRecord("12345678901234567890123") + ",", DestinationRecord("[12345678901234567890123,]")}) {
    OriginClue c = ReadOriginClue(Record(body));
    EXPECT_EQ(c.kind, ClueKind::kNone) << body;
    EXPECT_EQ(c.payload, body);
  }
}

TEST(OriginClueTest, EmptyOrBinaryAttributesCountAsAbsent) {
  const MessageAttributeValue binary{"Binary", "", "arn:aws:events:x"};
  for (MessageAttributes attributes : {
           MessageAttributes{{"RULE_ARN", Str("")}, {"TARGET_ARN", Str("arn:aws:sqs:x")}},
           MessageAttributes{{"RULE_ARN", binary}},
           MessageAttributes{{"SCHEDULE_ARN", Str("")}},
           MessageAttributes{{"RequestID", Str("")}, {"ErrorCode", Num("500")}},
           MessageAttributes{{"RequestID", Str("r")}, {"ErrorCode", Num("")}},
           MessageAttributes{{"RequestID", Str("r")}},
           MessageAttributes{{"requestid", Str("r")}, {"errorcode", Num("500")}},
           MessageAttributes{{"rule_arn", Str("arn:aws:events:x")}},
       }) {
    OriginClue c = ReadOriginClue(Record("{}", attributes));
    EXPECT_EQ(c.kind, ClueKind::kNone) << attributes.begin()->first;
    EXPECT_EQ(c.payload, "{}");
  }
}

TEST(OriginClueTest, ConflictingCluesFollowTheDocumentedOrder) {
  const MessageAttributes everything{{"RULE_ARN", Str("arn:aws:events:r")},
                                     {"SCHEDULE_ARN", Str("arn:aws:scheduler:s")},
                                     {"RequestID", Str("req")},
                                     {"ErrorCode", Num("500")}};
  // A destination-record body wins over any attribute.
  EXPECT_EQ(ReadOriginClue(Record(DestinationRecord("1"), everything)).kind, ClueKind::kLambdaDestination);
  // EventBridge over Scheduler over Lambda; all of them over an SNS envelope body.
  const std::string envelope = R"({"Type":"Notification","MessageId":"m","TopicArn":"arn:aws:sns:t","Message":"x"})";
  EXPECT_EQ(ReadOriginClue(Record(envelope, everything)).kind, ClueKind::kEventBridgeTarget);
  MessageAttributes no_rule = everything;
  no_rule.erase("RULE_ARN");
  EXPECT_EQ(ReadOriginClue(Record(envelope, no_rule)).kind, ClueKind::kSchedulerTarget);
  no_rule.erase("SCHEDULE_ARN");
  OriginClue lambda = ReadOriginClue(Record(envelope, no_rule));
  EXPECT_EQ(lambda.kind, ClueKind::kLambdaAsync);
  EXPECT_EQ(lambda.payload, envelope);  // the Lambda event is the whole body
  EXPECT_EQ(ReadOriginClue(Record(envelope)).kind, ClueKind::kSnsEnvelope);
}

TEST(OriginClueTest, PayloadKeyIsTheHexSha256) {
  // printf '%s' '{"order":42}' | sha256sum
  EXPECT_EQ(PayloadKey(R"({"order":42})"), "sha256:54985dc3c12fada7a1b1db53cf23d3cbd4bcbe64e1cef95071e2073e2ceff4ed");
  EXPECT_EQ(PayloadKey(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(OriginClueTest, RefailureKeysAreMessageIdPayloadKeyAndLambdaRequest) {
  ArchiveRecord async = Record(R"({"order":42})", {{"RequestID", Str("req-1")}, {"ErrorCode", Num("500")}});
  EXPECT_EQ(RefailureKeys(async),
            (std::vector<std::string>{"5fea7756-0ea4-451a-a703-a558b933e274",
                                      "sha256:54985dc3c12fada7a1b1db53cf23d3cbd4bcbe64e1cef95071e2073e2ceff4ed",
                                      "lambda-request:req-1"}));
  ArchiveRecord destination = Record(DestinationRecord(R"({"order":42})"));
  destination.message_id.clear();
  EXPECT_EQ(RefailureKeys(destination),
            (std::vector<std::string>{"sha256:54985dc3c12fada7a1b1db53cf23d3cbd4bcbe64e1cef95071e2073e2ceff4ed",
                                      "lambda-request:7d1c2b3a-0000-4a4a-9c9c-1234567890ab"}));
  ArchiveRecord plain = Record(R"({"order":42})");
  EXPECT_EQ(RefailureKeys(plain),
            (std::vector<std::string>{"5fea7756-0ea4-451a-a703-a558b933e274",
                                      "sha256:54985dc3c12fada7a1b1db53cf23d3cbd4bcbe64e1cef95071e2073e2ceff4ed"}));
  ArchiveRecord truncated = Record("x", {{"SCHEDULE_ARN", Str("s")}, {"IS_PAYLOAD_TRUNCATED", Str("true")}});
  EXPECT_EQ(RefailureKeys(truncated), (std::vector<std::string>{"5fea7756-0ea4-451a-a703-a558b933e274"}));
}

TEST(OriginClueTest, ADestinationRecordPublishedThroughAnSnsTopicIsReadFromTheEnvelopesMessage) {
  const std::string payload = R"({ "order": 5, "note": "a \"quoted\" word" })";
  const std::string record_text =
      R"({"version":"1.0","timestamp":"2026-11-29T10:00:00.000Z","requestContext":{"requestId":"r-5",)"
      R"("functionArn":"arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST","condition":)"
      R"("RetriesExhausted","approximateInvokeCount":3},"requestPayload":)" +
      payload + R"(,"responseContext":{"statusCode":200,"functionError":"Unhandled"},"responsePayload":{}})";
  std::string message;
  AppendJsonString(message, record_text);  // the record as the envelope's Message string
  ArchiveRecord r;
  r.message_id = "m";
  r.body = R"({"Type":"Notification","MessageId":"n1","TopicArn":"arn:aws:sns:us-east-1:123456789012:fails",)"
           R"("Message":)" +
           message + R"(,"Timestamp":"2026-11-29T10:00:01.000Z"})";
  OriginClue clue = ReadOriginClue(r);
  EXPECT_EQ(clue.kind, ClueKind::kLambdaDestination);
  EXPECT_EQ(clue.function_arn, "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST");
  EXPECT_EQ(clue.request_id, "r-5");
  EXPECT_EQ(clue.topic_arn, "arn:aws:sns:us-east-1:123456789012:fails");
  EXPECT_EQ(clue.payload, payload) << "requestPayload's exact text inside the published record";

  r.body = R"({"Type":"Notification","MessageId":"n2","TopicArn":"arn:aws:sns:us-east-1:123456789012:t",)"
           R"("Message":"{\"just\": \"json\"}"})";
  clue = ReadOriginClue(r);
  EXPECT_EQ(clue.kind, ClueKind::kSnsEnvelope) << "any other message stays an envelope";
  EXPECT_EQ(clue.payload, R"({"just": "json"})");
}

}  // namespace
}  // namespace dlq
