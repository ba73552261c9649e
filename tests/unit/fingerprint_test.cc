#include "query/fingerprint.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

namespace dlq {
namespace {

struct Case {
  std::string body;
  std::string fingerprint;
};

TEST(Fingerprint, MasksVariableTokensInText) {
  const std::vector<Case> cases = {
      {"order 123 failed: timeout", "order <num> failed: timeout"},
      {"retry -5 times, ratio 0.75, 1e-3 and 6.02E23", "retry <num> times, ratio <num>, <num> and <num>"},
      {"user 059f36b4-87a3-44ab-83d2-661975830a7d not found", "user <uuid> not found"},
      {"UUID 059F36B4-87A3-44AB-83D2-661975830A7D upper", "UUID <uuid> upper"},
      {"at 2025-09-10T12:30:00.123Z", "at <ts>"},
      {"at 2025-09-10T12:30:00Z.", "at <ts>."},
      {"at 2025-09-10T12:30:00+02:00 local", "at <ts> local"},
      {"at 2025-09-10 12:30:00,5 log", "at <ts> log"},
      {"day 2025-09-10 only", "day <ts> only"},
      {"at 2025-09-10T12:30 minutes", "at <ts> minutes"},
      {"epoch 1757507400 and millis 1757507400123", "epoch <ts> and millis <ts>"},
      {"small 999999999 is a number", "small <num> is a number"},
      {"far 9999999999 is a number", "far <num> is a number"},
      {"sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sha <hex>"},
      {"addr 0x7ffd3a2c and 0XFF", "addr <hex> and <hex>"},
      {"instance i-0abc123def4567890 down", "instance i-<hex> down"},
      {"deadbeef is a word, cafe too", "deadbeef is a word, cafe too"},
      {"order123 and v2 and abc_42x", "order<num> and v<num> and abc_<num>x"},
      {"  lots \t of\n\n  space  ", "lots of space"},
      {"", ""},
      {"héllo 42 🎉", "héllo <num> 🎉"},
      {"1.2.3.4", "<num>.<num>"},
      {"HTTP 503: Service Unavailable", "HTTP <num>: Service Unavailable"},
  };
  for (const Case& c : cases) EXPECT_EQ(FingerprintBody(c.body), c.fingerprint) << c.body;
}

TEST(Fingerprint, GroupsMessagesThatDifferOnlyInVariableParts) {
  EXPECT_EQ(FingerprintBody("order 123 failed: timeout"), FingerprintBody("order 456 failed: timeout"));
  EXPECT_EQ(FingerprintBody("payment 7f3a9c2e41d06b85 declined at 2025-09-10T12:30:00Z"),
            FingerprintBody("payment 00aa11bb22cc33dd declined at 2026-01-01T00:00:00.999Z"));
  EXPECT_NE(FingerprintBody("order 123 failed: timeout"), FingerprintBody("order 123 failed: out of stock"));
}

TEST(Fingerprint, JsonKeepsKeyPathsAndDiscriminatorValuesOnly) {
  const std::vector<Case> cases = {
      {R"({"order_id":123,"error":{"type":"Timeout","message":"after 30 s"}})",
       R"(error.type="Timeout" {error.message,error.type,order_id})"},
      {R"({"id":"059f36b4-87a3-44ab-83d2-661975830a7d","at":"2025-09-10T12:30:00Z","tenant":"acme"})",
       R"({at,id,tenant})"},
      {R"({"ok":false,"why":null,"ratio":0.5,"error":null})", R"(error=null {error,ok,ratio,why})"},
      {R"({"type":7,"source":true})", R"(source=true type=7 {source,type})"},
      {R"([1,2,3])", R"({[]})"},
      {R"([])", R"({[]})"},
      {R"({"a":{},"b":[]})", R"({a{},b[]})"},
      {R"({"items":[{"sku":"A1","n":1},{"sku":"B2","n":2,"gift":true},"x"]})",
       R"({items[],items[].gift,items[].n,items[].sku})"},
      {R"({"by_id":{"123":{"n":1},"456":{"n":2}}})", R"({by_id.<num>.n})"},
      {"  {\"a\" : 1}\n", R"({a})"},
      {R"({"error":"order 123 failed: timeout"})", R"(error="order <num> failed: timeout" {error})"},
  };
  for (const Case& c : cases) EXPECT_EQ(FingerprintBody(c.body), c.fingerprint) << c.body;
}

TEST(Fingerprint, JsonBodiesWithVariedDataValuesGroupByType) {
  // The issue's case: tenant and amounts varied and split one kind of failure
  // into many groups.
  const std::string a = R"({"type":"OrderFailed","tenant":"acme","amount":12.5,"customer":{"id":"c-1","tier":"gold"}})";
  const std::string b =
      R"({"customer":{"tier":"silver","id":"c-99"},"amount":7,"tenant":"globex","type":"OrderFailed"})";
  const std::string c =
      R"({"type":"PaymentDeclined","tenant":"acme","amount":12.5,"customer":{"id":"c-1","tier":"gold"}})";
  EXPECT_EQ(FingerprintBody(a), FingerprintBody(b));
  EXPECT_EQ(FingerprintBody(a), R"(type="OrderFailed" {amount,customer.id,customer.tier,tenant,type})");
  EXPECT_NE(FingerprintBody(a), FingerprintBody(c));  // the discriminator tells the kinds apart
}

TEST(Fingerprint, EventBridgeEventsGroupByDetailTypeAndSource) {
  auto event = [](std::string_view detail_type, std::string_view tenant) {
    return std::string(R"({"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":")") +
           std::string(detail_type) +
           R"(","source":"com.example.orders","account":"111122223333","time":"2017-12-22T18:43:48Z",)"
           R"("region":"us-west-1","resources":["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],)"
           R"("detail":{"tenant":")" +
           std::string(tenant) + R"(","order":{"total":99}}})";
  };
  EXPECT_EQ(FingerprintBody(event("Order Placed", "acme")), FingerprintBody(event("Order Placed", "globex")));
  EXPECT_NE(FingerprintBody(event("Order Placed", "acme")), FingerprintBody(event("Order Cancelled", "acme")));
  EXPECT_EQ(FingerprintBody(event("Order Placed", "acme")),
            R"(detail-type="Order Placed" source="com.example.orders" )"
            R"({account,detail-type,detail.order.total,detail.tenant,id,region,resources[],source,time,version})");
}

TEST(Fingerprint, CustomFieldsChooseTheDiscriminators) {
  auto options = FingerprintOptions::Parse(" status , reason.code ");
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->fields, (std::vector<std::string>{"status", "reason.code"}));
  const std::string body = R"({"status":"FAILED","reason":{"code":"OUT_OF_STOCK"},"type":"x","code":"top"})";
  EXPECT_EQ(FingerprintBody(body, *options),
            R"(reason.code="OUT_OF_STOCK" status="FAILED" {code,reason.code,status,type})");
  EXPECT_EQ(FingerprintBody(body), R"(type="x" {code,reason.code,status,type})");  // the defaults
  EXPECT_NE(FingerprintBody(body, *options),
            FingerprintBody(R"({"status":"FAILED","reason":{"code":"NO_CREDIT"},"type":"x","code":"top"})", *options));
  EXPECT_EQ(FingerprintOptions::Parse("")->fields, FingerprintOptions().fields);
  auto bad = FingerprintOptions::Parse("type,,error");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--fingerprint-fields"), std::string::npos);
}

ArchiveRecord WithAttributes(std::string body, std::vector<std::pair<std::string, MessageAttributeValue>> attrs) {
  ArchiveRecord r;
  r.message_id = "m";
  r.body = std::move(body);
  for (auto& [name, value] : attrs) r.message_attributes[name] = value;
  return r;
}

MessageAttributeValue Str(std::string v) {
  return {"String", std::move(v), ""};
}
MessageAttributeValue Num(std::string v) {
  return {"Number", std::move(v), ""};
}

// The attributes AWS documents for a Lambda asynchronous-invocation DLQ
// message: RequestID (String), ErrorCode (Number, a 3-digit HTTP status code),
// ErrorMessage (String, up to 1 KB); the body is the event, unchanged.
TEST(FailureGroup, LambdaAsyncDlqMessagesGroupByErrorCodeAndMessage) {
  ArchiveRecord a = WithAttributes(R"({"orderId":"o-1","tenant":"acme"})",
                                   {{"RequestID", Str("c2a3f1f0-6f4b-4bd3-9d1f-0e6d1f2a9b10")},
                                    {"ErrorCode", Num("200")},
                                    {"ErrorMessage", Str("Task timed out after 3.00 seconds")}});
  ArchiveRecord b = WithAttributes(R"({"orderId":"o-2","tenant":"globex","extra":1})",
                                   {{"RequestID", Str("0d3c6e1a-1b2c-4d5e-8f90-112233445566")},
                                    {"ErrorCode", Num("200")},
                                    {"ErrorMessage", Str("Task timed out after 6.00 seconds")}});
  ArchiveRecord c = WithAttributes(R"({"orderId":"o-3","tenant":"acme"})",
                                   {{"RequestID", Str("9e8d7c6b-5a49-4382-a716-151413121110")},
                                    {"ErrorCode", Num("429")},
                                    {"ErrorMessage", Str("Rate Exceeded.")}});
  EXPECT_EQ(FailureGroupKey(a), "Lambda async (200): Task timed out after <num> seconds");
  EXPECT_EQ(FailureGroupKey(a), FailureGroupKey(b));  // the body's shape does not matter
  EXPECT_EQ(FailureGroupKey(c), "Lambda async (429): Rate Exceeded.");
  EXPECT_EQ(GroupId(FailureGroupKey(a)), GroupId(FailureGroupKey(b)));
  EXPECT_NE(GroupId(FailureGroupKey(a)), GroupId(FailureGroupKey(c)));
}

// The attributes AWS documents for an EventBridge rule target's DLQ message:
// RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION
// and RETRY_ATTEMPTS (all String); the body is the event.
TEST(FailureGroup, EventBridgeDlqMessagesGroupByErrorAndTarget) {
  auto message = [](std::string error_code, std::string error_message, std::string attempts, std::string tenant) {
    return WithAttributes(R"({"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"Order Placed",)"
                          R"("source":"com.example.orders","detail":{"tenant":")" +
                              tenant + R"("}})",
                          {{"RULE_ARN", Str("arn:aws:events:us-east-1:123456789012:rule/orders-bus/route-orders")},
                           {"TARGET_ARN", Str("arn:aws:lambda:us-east-1:123456789012:function:process-order")},
                           {"ERROR_CODE", Str(error_code)},
                           {"ERROR_MESSAGE", Str(error_message)},
                           {"EXHAUSTED_RETRY_CONDITION", Str("MaximumRetryAttempts")},
                           {"RETRY_ATTEMPTS", Str(attempts)}});
  };
  ArchiveRecord a = message("SDK_CLIENT_ERROR", "Lambda function process-order returned 502", "185", "acme");
  ArchiveRecord b = message("SDK_CLIENT_ERROR", "Lambda function process-order returned 503", "3", "globex");
  ArchiveRecord c = message("NO_PERMISSIONS", "Access denied", "0", "acme");
  EXPECT_EQ(FailureGroupKey(a),
            "EventBridge (SDK_CLIENT_ERROR): Lambda function process-order returned <num> · rule route-orders · "
            "target function:process-order · MaximumRetryAttempts");
  EXPECT_EQ(FailureGroupKey(a), FailureGroupKey(b));
  EXPECT_NE(FailureGroupKey(a), FailureGroupKey(c));
  EXPECT_EQ(FailureGroupKey(c),
            "EventBridge (NO_PERMISSIONS): Access denied · rule route-orders · target function:process-order · "
            "MaximumRetryAttempts");
}

TEST(FailureGroup, EventBridgeSchedulerDlqMessagesNameTheSchedule) {
  ArchiveRecord r =
      WithAttributes("{}", {{"ERROR_CODE", Str("AWS.Scheduler.InternalServerError")},
                            {"ERROR_MESSAGE", Str("Unexpected error occurred while processing the request.")},
                            {"SCHEDULE_ARN", Str("arn:aws:scheduler:us-west-2:123456789012:schedule/default/nightly")},
                            {"TARGET_ARN", Str("arn:aws:sqs:us-west-2:123456789012:work")},
                            {"RETRY_ATTEMPTS", Str("2")}});
  EXPECT_EQ(FailureGroupKey(r),
            "EventBridge Scheduler (AWS.Scheduler.InternalServerError): Unexpected error occurred while processing the "
            "request. · schedule nightly · target work");
}

TEST(FailureGroup, LambdaOnFailureDestinationRecordsGroupByError) {
  auto record = [](std::string request_id, std::string message) {
    return WithAttributes(
        R"({"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z","requestContext":{"requestId":")" + request_id +
            R"(","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:my-function:$LATEST",)"
            R"("condition":"RetriesExhausted","approximateInvokeCount":3},"requestPayload":{"ORDER_IDS":["1"]},)"
            R"("responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},)"
            R"("responsePayload":{"errorMessage":")" +
            message + R"(","errorType":"Error"}})",
        {});
  };
  ArchiveRecord a = record("e4b46cbf-b738-xmpl-8880-a18cdf61200e", "order 1 not found");
  ArchiveRecord b = record("0a7f1b2c-3d4e-5f60-7182-93a4b5c6d7e8", "order 77 not found");
  EXPECT_EQ(FailureGroupKey(a),
            "Lambda on-failure (RetriesExhausted, Unhandled): Error: order <num> not found · function "
            "function:my-function:$LATEST");
  EXPECT_EQ(FailureGroupKey(a), FailureGroupKey(b));
}

TEST(FailureGroup, MessagesWithoutAReasonUseTheBodyFingerprint) {
  // SNS subscription DLQs and the team's own producers carry no reason.
  ArchiveRecord r = WithAttributes(R"({"type":"OrderFailed","tenant":"acme"})", {{"tenant", Str("acme")}});
  EXPECT_EQ(FailureGroupKey(r), FingerprintBody(r.body));
  FingerprintOptions options;
  options.fields = {"tenant"};
  EXPECT_EQ(FailureGroupKey(r, options), R"(tenant="acme" {tenant,type})");
}

TEST(FailureGroup, GroupIdIsTwelveHexDigitsOfTheKeysSha256) {
  EXPECT_EQ(GroupId("abc"), "ba7816bf8f01");  // SHA-256("abc") = ba7816bf8f01cfea...
  EXPECT_EQ(GroupId(""), "e3b0c44298fc");
  EXPECT_EQ(GroupId("Lambda async (200): x").size(), kGroupIdChars);
  EXPECT_NE(GroupId("a"), GroupId("b"));
}

TEST(Fingerprint, JsonKeyOrderDoesNotMatter) {
  EXPECT_EQ(FingerprintBody(R"({"a":1,"b":"x"})"), FingerprintBody(R"({"b":"x","a":99})"));
  EXPECT_NE(FingerprintBody(R"({"a":1,"b":"x"})"), FingerprintBody(R"({"a":1,"c":"x"})"));
}

TEST(Fingerprint, InvalidJsonIsMaskedAsText) {
  EXPECT_EQ(FingerprintBody(R"({"a":1,)"), R"({"a":<num>,)");
  EXPECT_EQ(FingerprintBody("[not json 42"), "[not json <num>");
}

TEST(Fingerprint, DeepJsonIsCutAtSixteenLevels) {
  std::string deep(40, '[');
  deep += std::string(40, ']');
  std::string path;
  for (int i = 0; i < 16; ++i) path += "[]";
  EXPECT_EQ(FingerprintBody(deep), "{" + path + "\xE2\x80\xA6}");
}

TEST(Fingerprint, ArraysShowOnePathPerElementShape) {
  std::string body = "[";
  for (int i = 0; i < 200; ++i) body += (i ? "," : "") + std::string(R"({"id":)") + std::to_string(i) + "}";
  body += "]";
  EXPECT_EQ(FingerprintBody(body), "{[].id}");
}

TEST(Fingerprint, LongShapesAreCappedButStayDistinct) {
  std::string a(5000, 'a'), b = a;
  b[4000] = 'b';
  std::string fa = FingerprintBody(a), fb = FingerprintBody(b);
  EXPECT_LE(fa.size(), kMaxFingerprintBytes);
  EXPECT_LE(fb.size(), kMaxFingerprintBytes);
  EXPECT_NE(fa, fb);
  EXPECT_EQ(fa.substr(0, 400), std::string(400, 'a'));
  EXPECT_NE(fa.find("\xE2\x80\xA6#"), std::string::npos);
  EXPECT_EQ(FingerprintBody(a), fa);  // deterministic
}

TEST(Fingerprint, CapNeverSplitsAUtf8Character) {
  for (std::string body : {std::string(), std::string("x")}) {  // the cut lands on a lead byte, then inside one
    for (int i = 0; i < 1000; ++i) body += "é";
    std::string fp = FingerprintBody(body);
    ASSERT_LE(fp.size(), kMaxFingerprintBytes);
    size_t cut = fp.find("\xE2\x80\xA6#");
    ASSERT_NE(cut, std::string::npos);
    EXPECT_EQ((cut - body.size() % 2) % 2, 0u) << body.size();  // whole two-byte characters only
    EXPECT_TRUE(simdjson::validate_utf8(fp.data(), fp.size()));
  }
}

TEST(Fingerprint, InvalidUtf8BecomesBase64) {
  std::string fp = FingerprintBody("bad \xff\xfe 42");
  EXPECT_EQ(fp, "base64:YmFkIP/+IDxudW0+");  // base64 of the masked text "bad \xff\xfe <num>"
  EXPECT_TRUE(simdjson::validate_utf8(fp.data(), fp.size()));
}

TEST(Fingerprint, CapKeyLeavesShortValidKeysAlone) {
  std::string key = "orders-dlq";
  CapKey(key, 16);
  EXPECT_EQ(key, "orders-dlq");
  std::string long_key(100, 'k');
  CapKey(long_key, 40);
  EXPECT_EQ(long_key.size(), 40u);
  EXPECT_TRUE(long_key.starts_with(std::string(20, 'k')));
}

TEST(Fingerprint, MaskedTextAppendsToExistingOutput) {
  std::string out = "prefix:";
  AppendMaskedText(" id 42 ", out);
  EXPECT_EQ(out, "prefix:id <num>");
}

}  // namespace
}  // namespace dlq
