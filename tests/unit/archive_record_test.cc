#include <gtest/gtest.h>

#include <random>
#include <string>

#include "archive/record.h"
#include "common/crypto.h"
#include "common/time_util.h"

namespace dlq {
namespace {

using std::chrono::hours;

ArchiveContext TestContext() {
  ArchiveContext ctx;
  ctx.queue = "orders-dlq";
  ctx.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  ctx.region = "us-east-1";
  ctx.account_id = "123456789012";
  ctx.archiver_version = "0.1.0";
  ctx.host = "host-1";
  ctx.fifo = false;
  ctx.retention = std::chrono::duration_cast<std::chrono::seconds>(hours(24 * 4));
  return ctx;
}

Message FullMessage() {
  Message m;
  m.message_id = "059f36b4-87a3-44ab-83d2-661975830a7d";
  m.receipt_handle = "AQEBsecret-receipt-handle";
  m.body = "héllo \"world\" 🎉\n\t\\ \x01 end";
  m.md5_of_body = Md5Hex(m.body);
  m.md5_of_message_attributes = "d25a6aea97eb8f585bfa92d314504a92";
  m.attributes = {{"SentTimestamp", "1757507400123"},
                  {"ApproximateReceiveCount", "5"},
                  {"ApproximateFirstReceiveTimestamp", "1757507401000"},
                  {"SenderId", "AIDAEXAMPLE"},
                  {"DeadLetterQueueSourceArn", "arn:aws:sqs:us-east-1:123456789012:orders"}};
  m.message_attributes = {
      {"s", {"String", "hello", ""}},
      {"n", {"Number", "42", ""}},
      {"b", {"Binary", "", std::string("\x00\x01\xff", 3)}},
      {"f", {"Number.float", "3.14", ""}},
      {"j", {"String.json", "{\"a\":1}", ""}},
  };
  return m;
}

const SystemTime kArchivedAt = FromUnixMillis(1757600000000);

TEST(ArchiveRecord, WritesGoldenLineWithEveryAttributeType) {
  std::string out;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  const std::string expected =
      R"({"schema":1,"queue":"orders-dlq","queue_url":"https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",)"
      R"("region":"us-east-1","account_id":"123456789012","message_id":"059f36b4-87a3-44ab-83d2-661975830a7d",)"
      R"("body":"héllo \"world\" 🎉\n\t\\ \u0001 end","md5_of_body":")" +
      Md5Hex(FullMessage().body) +
      R"(","md5_of_message_attributes":"d25a6aea97eb8f585bfa92d314504a92",)"
      R"("attributes":{"ApproximateFirstReceiveTimestamp":"1757507401000","ApproximateReceiveCount":"5",)"
      R"("DeadLetterQueueSourceArn":"arn:aws:sqs:us-east-1:123456789012:orders","SenderId":"AIDAEXAMPLE",)"
      R"("SentTimestamp":"1757507400123"},)"
      R"("message_attributes":{"b":{"DataType":"Binary","BinaryValue":"AAH/"},)"
      R"("f":{"DataType":"Number.float","StringValue":"3.14"},"j":{"DataType":"String.json","StringValue":"{\"a\":1}"},)"
      R"("n":{"DataType":"Number","StringValue":"42"},"s":{"DataType":"String","StringValue":"hello"}},)"
      R"("sent_at":"2025-09-10T12:30:00.123Z","expires_at":"2025-09-14T12:30:00.123Z",)"
      R"("archived_at":"2025-09-11T14:13:20.000Z","receive_count":5,)"
      R"("source_queue_arn":"arn:aws:sqs:us-east-1:123456789012:orders","extended_client_pointer":false,)"
      R"("archiver":{"version":"0.1.0","host":"host-1"}})"
      "\n";
  EXPECT_EQ(out, expected);
}

TEST(ArchiveRecord, NeverStoresTheReceiptHandle) {
  std::string out;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  EXPECT_EQ(out.find("AQEBsecret"), std::string::npos);
  EXPECT_EQ(out.find("receipt"), std::string::npos);
}

TEST(ArchiveRecord, AppendsExactlyOneLinePerMessage) {
  std::string out = "previous\n";
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  int newlines = 0;
  for (char c : out) newlines += c == '\n';
  EXPECT_EQ(newlines, 3);
  EXPECT_EQ(out.rfind("previous\n", 0), 0u);
  EXPECT_EQ(out.back(), '\n');
}

TEST(ArchiveRecord, RoundTripKeepsBodyAndEveryAttribute) {
  Message m = FullMessage();
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, MakeArchiveRecord(m, TestContext(), kArchivedAt));
  EXPECT_EQ(r->receive_count, 5);
  EXPECT_EQ(r->source_queue_arn, "arn:aws:sqs:us-east-1:123456789012:orders");
  ASSERT_TRUE(r->sent_at.has_value());
  EXPECT_EQ(ToUnixMillis(*r->sent_at), 1757507400123);

  Message back = RecordToMessage(*r);
  EXPECT_EQ(back.message_id, m.message_id);
  EXPECT_EQ(back.body, m.body);
  EXPECT_EQ(Md5Hex(back.body), m.md5_of_body);
  EXPECT_EQ(back.md5_of_body, m.md5_of_body);
  EXPECT_EQ(back.md5_of_message_attributes, m.md5_of_message_attributes);
  EXPECT_EQ(back.attributes, m.attributes);
  EXPECT_EQ(back.message_attributes, m.message_attributes);
  EXPECT_TRUE(back.receipt_handle.empty());
}

TEST(ArchiveRecord, RecordRoundTripsThroughItsOwnWriter) {
  ArchiveRecord rec = MakeArchiveRecord(FullMessage(), TestContext(), kArchivedAt);
  std::string a, b;
  AppendRecordJson(rec, a);
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, b);
  EXPECT_EQ(a, b);
}

TEST(ArchiveRecord, OwnReceiveCountIsWrittenWhenKnownAndSplitsTheConsumersShare) {
  std::string line;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, line, /*own_receive_count=*/2);
  EXPECT_NE(line.find(R"("receive_count":5,"own_receive_count":2,)"), std::string::npos) << line;
  auto rec = ParseRecordJson(line);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->receive_count, 5);  // as SQS reported it
  EXPECT_EQ(rec->own_receive_count, 2);
  EXPECT_EQ(ConsumerReceiveCount(*rec), 3);
  std::string again;
  AppendRecordJson(*rec, again);
  EXPECT_EQ(again, line);
}

TEST(ArchiveRecord, LinesWithoutOwnReceiveCountStillParseAndCountEveryReceiveAsTheConsumers) {
  std::string line;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, line);
  EXPECT_EQ(line.find("own_receive_count"), std::string::npos) << line;
  auto rec = ParseRecordJson(line);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_FALSE(rec->own_receive_count);
  EXPECT_EQ(ConsumerReceiveCount(*rec), 5);
}

TEST(ArchiveRecord, NegativeOwnReceiveCountIsRejected) {
  std::string line;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, line, 2);
  const size_t at = line.find("\"own_receive_count\":2");
  ASSERT_NE(at, std::string::npos);
  line.replace(at, 21, "\"own_receive_count\":-1");
  auto rec = ParseRecordJson(line);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("own_receive_count"), std::string::npos) << rec.status().ToString();
}

TEST(ArchiveRecord, EscapesEveryControlCharacterAndKeepsNonAscii) {
  Message m = FullMessage();
  m.message_attributes.clear();
  m.body.clear();
  for (int c = 0; c < 0x20; ++c) m.body.push_back(static_cast<char>(c));
  m.body += "\"\\/\x7f日本語 Ω 😀 long run of safe ascii bytes to cross the 8-byte fast path \"q\"";
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  EXPECT_NE(out.find(R"(\u0000\u0001)"), std::string::npos);
  EXPECT_NE(out.find(R"(\b\t\n\u000b\f\r)"), std::string::npos);
  EXPECT_NE(out.find("日本語 Ω 😀"), std::string::npos);
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // the only raw newline ends the line
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, m.body);
}

TEST(ArchiveRecord, EveryAsciiByteRoundTripsAtEveryOffset) {
  Message m = FullMessage();
  m.message_attributes.clear();
  for (int c = 0; c < 0x80; ++c) {
    for (size_t offset = 0; offset < 19; ++offset) {
      m.body = std::string(offset, 'a') + static_cast<char>(c) + std::string(20 - offset, 'b') + "é";
      std::string out;
      AppendRecordJson(m, TestContext(), kArchivedAt, out);
      ASSERT_EQ(out.find('\n'), out.size() - 1) << c << " at " << offset;
      Result<ArchiveRecord> r = ParseRecordJson(out);
      ASSERT_TRUE(r.ok()) << c << " at " << offset << ": " << r.status().ToString();
      ASSERT_EQ(r->body, m.body) << c << " at " << offset;
    }
  }
}

TEST(ArchiveRecord, InvalidUtf8AtAnyOffsetFallsBackToBase64) {
  Message m = FullMessage();
  for (const std::string bad : {"\xff", "\xc3", "\xed\xa0\x80", "\xe0\x80\x80", "\xf4\x90\x80\x80", "\x80"}) {
    for (size_t offset = 0; offset < 19; ++offset) {
      m.body = std::string(offset, 'a') + "\"" + bad + std::string(20 - offset, 'b');
      std::string out;
      AppendRecordJson(m, TestContext(), kArchivedAt, out);
      ASSERT_NE(out.find("\"body_base64\""), std::string::npos) << offset;
      Result<ArchiveRecord> r = ParseRecordJson(out);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->body, m.body);
    }
  }
}

TEST(ArchiveRecord, InvalidUtf8BodyIsStoredAsBase64Losslessly) {
  Message m = FullMessage();
  m.body = std::string("ok \xff\xfe bad \xc3(", 13);
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  EXPECT_NE(out.find(R"("body_encoding":"base64","body_base64":")" + Base64Encode(m.body) + "\""), std::string::npos);
  EXPECT_EQ(out.find(R"("body":)"), std::string::npos);
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, m.body);
}

TEST(ArchiveRecord, InvalidUtf8AttributeStringIsStoredAsBase64) {
  Message m = FullMessage();
  m.message_attributes["bad"] = {"String", std::string("\xc0\xaf", 2), ""};
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message_attributes, m.message_attributes);
}

TEST(ArchiveRecord, MissingSentTimestampIsWrittenAsNull) {
  Message m = FullMessage();
  m.attributes.erase("SentTimestamp");
  m.attributes.erase("DeadLetterQueueSourceArn");
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  EXPECT_NE(out.find(R"("sent_at":null)"), std::string::npos);
  EXPECT_NE(out.find(R"("source_queue_arn":null)"), std::string::npos);
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->sent_at.has_value());
  EXPECT_TRUE(r->source_queue_arn.empty());
}

TEST(ArchiveRecord, DetectsExtendedClientPointers) {
  Message m = FullMessage();
  m.message_attributes.clear();
  m.body = R"(["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"big-payloads","s3Key":"a1b2"}])";
  EXPECT_TRUE(MakeArchiveRecord(m, TestContext(), kArchivedAt).extended_client_pointer);
  std::string out;
  AppendRecordJson(m, TestContext(), kArchivedAt, out);
  EXPECT_NE(out.find(R"("extended_client_pointer":true)"), std::string::npos);

  m.body = "plain text mentioning PayloadS3Pointer";
  EXPECT_FALSE(MakeArchiveRecord(m, TestContext(), kArchivedAt).extended_client_pointer);
  m.message_attributes["ExtendedPayloadSize"] = {"Number", "300000", ""};
  EXPECT_TRUE(MakeArchiveRecord(m, TestContext(), kArchivedAt).extended_client_pointer);
  m.message_attributes.clear();
  m.message_attributes["SQSLargePayloadSize"] = {"Number", "300000", ""};
  EXPECT_TRUE(MakeArchiveRecord(m, TestContext(), kArchivedAt).extended_client_pointer);
}

TEST(ArchiveRecord, ParserIgnoresUnknownFields) {
  std::string out;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  out.insert(1, R"("future_field":{"x":[1,2,3]},)");
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message_id, FullMessage().message_id);
}

// Replaces `from` with `to` in a freshly written line and returns the parse error.
std::string ParseErrorAfter(const std::string& from, const std::string& to) {
  std::string out;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  size_t pos = out.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos == std::string::npos) return "";
  out.replace(pos, from.size(), to);
  Result<ArchiveRecord> r = ParseRecordJson(out);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().ToString();
}

TEST(ArchiveRecord, ParseErrorsNameTheField) {
  EXPECT_NE(
      ParseErrorAfter(R"("message_id":"059f36b4-87a3-44ab-83d2-661975830a7d",)", "").find("\"message_id\" is missing"),
      std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"("message_id":"059f36b4-87a3-44ab-83d2-661975830a7d")", R"("message_id":7)")
                .find("\"message_id\" must be a string"),
            std::string::npos);
  EXPECT_NE(
      ParseErrorAfter(R"("receive_count":5)", R"("receive_count":"5")").find("\"receive_count\" must be an integer"),
      std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"("sent_at":"2025-09-10T12:30:00.123Z")", R"("sent_at":"yesterday")").find("\"sent_at\""),
            std::string::npos);
  EXPECT_NE(
      ParseErrorAfter(R"("BinaryValue":"AAH/")", R"("BinaryValue":"!!!")").find("message_attributes.b.BinaryValue"),
      std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"("attributes":{)", R"("attributes":[],"x":{)").find("\"attributes\" must be an object"),
            std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"("BinaryValue":"AAH/")", R"("StringValue":"AAH/")").find("does not match DataType"),
            std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"({"DataType":"Number",)", R"({)").find("message_attributes.n.DataType\" is missing"),
            std::string::npos);
  EXPECT_NE(ParseErrorAfter(R"("archived_at":"2025-)", R"("archived_at":"0025-)")
                .find("\"archived_at\" year 25 is out of range"),
            std::string::npos);
  std::string schema = ParseErrorAfter(R"("schema":1)", R"("schema":2)");
  EXPECT_NE(schema.find("unsupported schema version 2"), std::string::npos);
  EXPECT_NE(schema.find("FailedPrecondition"), std::string::npos);
}

// Found by archive_reader_fuzz: a second value under one attribute name was
// parsed over the first and kept its BinaryValue under a String DataType, so
// the record no longer round-tripped. Either order is refused now.
TEST(ArchiveRecord, AnAttributeNamedTwiceIsRefusedNotMerged) {
  EXPECT_NE(ParseErrorAfter(R"("message_attributes":{)",
                            R"("message_attributes":{"b":{"DataType":"String","StringValue":"x"},)")
                .find("\"message_attributes.b\" appears more than once"),
            std::string::npos);
  std::string out;
  AppendRecordJson(FullMessage(), TestContext(), kArchivedAt, out);
  const size_t end = out.find("}}", out.find(R"("message_attributes":{)")) + 1;  // after the last attribute
  out.insert(end, R"(,"b":{"DataType":"Number","StringValue":"1"})");
  Result<ArchiveRecord> r = ParseRecordJson(out);
  ASSERT_FALSE(r.ok()) << out;
  EXPECT_NE(r.status().message().find("\"message_attributes.b\" appears more than once"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(ParseErrorAfter(R"("attributes":{)", R"("attributes":{"SentTimestamp":"1",)")
                .find("\"attributes.SentTimestamp\" appears more than once"),
            std::string::npos);
}

TEST(ArchiveRecord, RejectsNonJsonAndNonObjects) {
  EXPECT_EQ(ParseRecordJson("not json").status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(ParseRecordJson("[1,2]").status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(ParseRecordJson("").status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(ParseRecordJson("{}").status().message().find("\"schema\" is missing"), std::string::npos);
}

}  // namespace
}  // namespace dlq

namespace dlq {
namespace {

// Regression: escapes that land just past a 16-byte block near the end of the
// output buffer were once written beyond out.size() and then zeroed, turning
// "\\" into "\<NUL>". Random bodies dense in escapes, every length 0..2100,
// appended after prefixes of varying length, must round-trip exactly.
TEST(ArchiveRecordRoundTrip, RandomEscapeDenseBodiesRoundTripAtEveryLength) {
  std::mt19937 rng(12345);
  const std::string specials = "\"\\\n\t\x01";
  ArchiveContext ctx;
  ctx.queue = "q";
  for (size_t len = 0; len < 2100; ++len) {
    for (int density : {3, 40}) {  // dense and sparse escapes (the bug needed sparse ones)
      Message m;
      m.message_id = "id-" + std::to_string(len);
      m.md5_of_body = "0";
      m.attributes["SentTimestamp"] = "1700000000000";
      for (size_t i = 0; i < len; ++i) {
        if (rng() % density == 0) {
          m.body += specials[rng() % specials.size()];
        } else if (rng() % 97 == 0 && i + 1 < len) {
          m.body += "\xc3\xa9";
          ++i;
        } else {
          m.body += static_cast<char>('a' + rng() % 26);
        }
      }
      std::string out(len % 37, 'p');  // vary where the line starts in the buffer
      out.reserve(out.size() + (len % 5) * 13);
      size_t before = out.size();
      AppendRecordJson(m, ctx, FromUnixMillis(1700000000000), out);
      auto rec = ParseRecordJson(std::string_view(out).substr(before));
      ASSERT_TRUE(rec.ok()) << "length " << len << ": " << rec.status().ToString();
      ASSERT_EQ(rec->body, m.body) << "length " << len;
    }
  }
}

}  // namespace
}  // namespace dlq
