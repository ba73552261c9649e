#include <gtest/gtest.h>

#include "sqs/md5.h"

namespace dlq {
namespace {

// Expected digests were computed independently of this code with moto 5.2.1's
// SQS model (moto.sqs.models.Message.body_md5 / attribute_md5) and Python's
// hashlib, e.g.
//   python3 -c 'from moto.sqs.models import Message; m = Message("id", "b", 0);
//               m.message_attributes = {...}; print(m.attribute_md5)'
// Where the AWS CLI documentation (awscli/examples/sqs/*.rst) shows real SQS
// output for the same input (abbreviated as "first8...last8"), the digest
// matches it too; those cases say so.

MessageAttributeValue Str(std::string v) {
  return {.data_type = "String", .string_value = std::move(v)};
}
MessageAttributeValue Num(std::string v) {
  return {.data_type = "Number", .string_value = std::move(v)};
}
MessageAttributeValue Bin(std::string type, std::string bytes) {
  return {.data_type = std::move(type), .string_value = {}, .binary_value = std::move(bytes)};
}

TEST(SqsMd5Test, BodyDigestMatchesSqsSendMessageExample) {
  // awscli send-message example: MD5OfMessageBody "51b0a325...39163aa0".
  EXPECT_EQ(Md5OfBody("Information about the largest city in Any Region."), "51b0a3256d59467f973009b739163aa0");
  // awscli send-message-batch example: "203c4a38...7943237e".
  EXPECT_EQ(Md5OfBody("Fuel report for account 0001 on 2015-09-16 at 02:07:31 PM."),
            "203c4a38f1cee1cb10269e847943237e");
}

TEST(SqsMd5Test, BodyDigestHashesUtf8BytesOfNonAsciiAndEmoji) {
  // hashlib.md5("caf\u00e9 \U0001F680 \"q\" \\ \n\t".encode()).hexdigest()
  EXPECT_EQ(Md5OfBody("caf\xc3\xa9 \xf0\x9f\x9a\x80 \"q\" \\ \n\t"), "3563e19498ccc3353a6eab8079ad97ac");
}

TEST(SqsMd5Test, AttributeDigestMatchesSqsReceiveMessageExamples) {
  // awscli receive-message example 1: "9424c491...26bc3ae7".
  EXPECT_EQ(Md5OfMessageAttributes({{"PostalCode", Str("ABC123")}, {"City", Str("Any City")}}),
            "9424c491ff2bbec06ecbc9d226bc3ae7");
  // awscli receive-message example 2: "b8e89563...e088e74f".
  EXPECT_EQ(Md5OfMessageAttributes({{"PostalCode", Str("ABC123")}}), "b8e89563a83b6381835710c1e088e74f");
}

TEST(SqsMd5Test, AttributeDigestSortsNamesAndEncodesNumbers) {
  // awscli send-message-batch example, first entry: "10809b55...baf283ef".
  MessageAttributes attrs = {{"SellerName", Str("Example Store")},
                             {"City", Str("Any City")},
                             {"Region", Str("WA")},
                             {"PostalCode", Str("99065")},
                             {"PricePerGallon", Num("1.99")}};
  EXPECT_EQ(Md5OfMessageAttributes(attrs), "10809b55e3d9b22c17220b7dbaf283ef");
}

TEST(SqsMd5Test, AttributeDigestUsesRawBytesForBinaryAttributes) {
  MessageAttributes attrs = {
      {"City", Str("Any City")}, {"Greeting", Bin("Binary", "Hello, World!")}, {"Population", Num("1250800")}};
  EXPECT_EQ(Md5OfMessageAttributes(attrs), "28eb0e573cf8e8a77e349a2f968eac4a");
}

TEST(SqsMd5Test, AttributeDigestHandlesCustomTypesZeroBytesAndUnicode) {
  MessageAttributes attrs = {
      {"blob", Bin("Binary.gzip", std::string("\x00\x01\x02\xff\xfe", 5))},
      {"trace", {.data_type = "String.custom", .string_value = "h\xc3\xa9llo \xf0\x9f\x98\x80"}},
      {"n", {.data_type = "Number.float", .string_value = "-3.5e10"}},
  };
  EXPECT_EQ(Md5OfMessageAttributes(attrs), "82d69659f09bd5be0368e698f0814646");
}

TEST(SqsMd5Test, NoAttributesGiveEmptyDigest) {
  EXPECT_EQ(Md5OfMessageAttributes({}), "");
}

Message GoodMessage() {
  Message m;
  m.message_id = "m-1";
  m.body = "Information about the largest city in Any Region.";
  m.md5_of_body = "51b0a3256d59467f973009b739163aa0";
  m.message_attributes = {{"PostalCode", Str("ABC123")}};
  m.md5_of_message_attributes = "b8e89563a83b6381835710c1e088e74f";
  return m;
}

TEST(SqsMd5Test, VerifyAcceptsMatchingDigestsInAnyCase) {
  EXPECT_TRUE(VerifyMessage(GoodMessage()).ok());
  Message upper = GoodMessage();
  upper.md5_of_body = "51B0A3256D59467F973009B739163AA0";
  EXPECT_TRUE(VerifyMessage(upper).ok());
}

TEST(SqsMd5Test, VerifyReportsBodyMismatchWithMessageId) {
  Message m = GoodMessage();
  m.body += "!";
  Status s = VerifyMessage(m);
  EXPECT_EQ(s.code(), ErrorCode::kDataLoss);
  EXPECT_NE(s.message().find("m-1"), std::string::npos);
  EXPECT_NE(s.message().find("MD5OfBody"), std::string::npos);
}

TEST(SqsMd5Test, VerifyReportsAttributeMismatchWithMessageId) {
  Message m = GoodMessage();
  m.message_attributes["PostalCode"].string_value = "ABC124";
  Status s = VerifyMessage(m);
  EXPECT_EQ(s.code(), ErrorCode::kDataLoss);
  EXPECT_NE(s.message().find("m-1"), std::string::npos);
  EXPECT_NE(s.message().find("MD5OfMessageAttributes"), std::string::npos);
}

TEST(SqsMd5Test, VerifyRejectsMissingDigests) {
  Message no_body_md5 = GoodMessage();
  no_body_md5.md5_of_body.clear();
  EXPECT_EQ(VerifyMessage(no_body_md5).code(), ErrorCode::kDataLoss);
  Message no_attr_md5 = GoodMessage();
  no_attr_md5.md5_of_message_attributes.clear();
  EXPECT_EQ(VerifyMessage(no_attr_md5).code(), ErrorCode::kDataLoss);
  Message attrs_dropped = GoodMessage();
  attrs_dropped.message_attributes.clear();
  EXPECT_EQ(VerifyMessage(attrs_dropped).code(), ErrorCode::kDataLoss);
}

TEST(SqsMd5Test, VerifyMessagesGivesVerifyMessagesVerdictForEachOfAMixedReply) {
  // A reply as a receive brings it: good and bad messages, with and without
  // attributes, more than one SIMD pass of them.
  std::vector<Message> reply;
  for (int i = 0; i < 23; ++i) {
    Message m = GoodMessage();
    m.message_id = "m-" + std::to_string(i);
    switch (i % 6) {
      case 1: m.body += "!"; break;                                          // body changed in transit
      case 2: m.message_attributes["PostalCode"].string_value = "X"; break;  // attribute changed
      case 3: m.md5_of_body = "51B0A3256D59467F973009B739163AA0"; break;     // upper case: fine
      case 4:
        m.message_attributes.clear();
        m.md5_of_message_attributes.clear();
        break;                                                     // none: fine
      case 5: m.md5_of_body = m.md5_of_body.substr(0, 31); break;  // truncated digest
      default: break;
    }
    reply.push_back(std::move(m));
  }
  reply[0].message_attributes.clear();  // attributes dropped, digest still sent
  std::vector<Status> got = VerifyMessages(reply);
  ASSERT_EQ(got.size(), reply.size());
  int bad = 0;
  for (size_t i = 0; i < reply.size(); ++i) {
    Status want = VerifyMessage(reply[i]);
    EXPECT_EQ(got[i].code(), want.code()) << reply[i].message_id;
    EXPECT_EQ(got[i].message(), want.message()) << reply[i].message_id;
    if (!got[i].ok()) ++bad;
  }
  EXPECT_EQ(bad, 1 + 4 + 4 + 3);  // message 0, and cases 1, 2 and 5
  EXPECT_TRUE(VerifyMessages({}).empty());
}

}  // namespace
}  // namespace dlq
