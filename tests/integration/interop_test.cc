// Interoperability with real clients: messages sent by boto3 (Debian's
// 1.26 on the SQS query protocol, and the image's newer boto3 on the JSON
// protocol) are received by our client with matching MD5s; objects we upload
// are read back byte-identical by the AWS CLI.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "harness.h"
#include "s3/s3_client.h"
#include "sqs/md5.h"

namespace dlq::it {
namespace {

// Sends poison messages with `python`, receives them with our client and
// compares body, digests and attributes with what the sender recorded.
void SendWithBoto3AndReceive(const StandIn& s, const std::string& python, const std::string& extra_flags) {
  auto svc = Services(s);
  ASSERT_TRUE(svc);
  auto url = svc->sqs().CreateQueue(UniqueName("interop"), {{"VisibilityTimeout", "60"}});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto sent = RunShell(s.ShellEnv() + python + " " + RepoRoot() + "/tests/interop/send_poison.py --endpoint-url " +
                           s.endpoint() + " --queue-url " + *url + " " + extra_flags,
                       /*merge_stderr=*/false);
  ASSERT_EQ(sent.exit_code, 0) << sent.out;
  simdjson::dom::parser parser;
  simdjson::dom::array arr;
  ASSERT_EQ(parser.parse(sent.out).get(arr), simdjson::SUCCESS) << sent.out.substr(0, 500);
  std::map<std::string, Message> received;
  ReceiveOptions ro;
  ro.max_messages = 10;
  for (int i = 0; i < 20 && received.size() < arr.size(); ++i) {
    auto got = svc->sqs().ReceiveMessages(*url, ro);  // verifies both MD5s
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (auto& m : *got) received[m.message_id] = m;
  }
  ASSERT_EQ(received.size(), arr.size());
  bool saw_big = false, saw_binary = false;
  for (auto el : arr) {
    std::string id{std::string_view(el["message_id"])};
    ASSERT_TRUE(received.count(id)) << id;
    const Message& m = received[id];
    EXPECT_EQ(m.body, std::string(std::string_view(el["body"]))) << id;
    EXPECT_EQ(Md5OfBody(m.body), std::string(std::string_view(el["body_md5"])));
    EXPECT_EQ(m.md5_of_message_attributes, std::string(std::string_view(el["md5_of_message_attributes"])));
    EXPECT_EQ(Md5OfMessageAttributes(m.message_attributes), m.md5_of_message_attributes);
    if (m.body.size() > 200000) saw_big = true;
    for (const auto& [name, v] : m.message_attributes)
      if (v.IsBinary()) saw_binary = true;
  }
  EXPECT_TRUE(saw_big) << "the 256 KiB message was not among those received";
  EXPECT_TRUE(saw_binary);
}

TEST(Interop, Boto3QueryProtocolMessagesReceivedWithMatchingMd5s) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  SendWithBoto3AndReceive(moto, "/usr/bin/python3", "");
}

TEST(Interop, Boto3JsonProtocolMessagesReceivedFromFauxqs) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  SendWithBoto3AndReceive(fauxqs, "python3", "--bmp-only");
}

TEST(Interop, UploadedObjectsReadBackByteIdenticalWithAwsCli) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string bucket = UniqueName("interop-bucket");
  S3Client& s3 = svc->s3_for(bucket);
  ASSERT_TRUE(s3.CreateBucket(bucket).ok());
  // One single-part object and one above the 16 MiB multipart threshold.
  for (size_t size : {size_t{1} << 20, size_t{20} << 20}) {
    std::string data(size, '\0');
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
    std::string key = "dlq-archive/q/20260101/q-000000-" + RandomHex(8) + ".json.gz";
    PutOptions po;
    po.content_type = "application/gzip";
    auto etag = s3.PutObject(bucket, key, data, po);
    ASSERT_TRUE(etag.ok()) << etag.status().ToString();
    auto r = RunShell(moto.ShellEnv() + "/usr/bin/aws --endpoint-url " + moto.endpoint() + " s3 cp s3://" + bucket +
                          "/" + key + " - | md5sum",
                      false);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out.substr(0, 32), Md5Hex(data)) << "size " << size;
  }
}

}  // namespace
}  // namespace dlq::it
