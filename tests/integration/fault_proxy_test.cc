// FaultProxy against fauxqs: each fault mode does what it says, checked from
// both sides (the client's error through the proxy, the stand-in's state read
// directly).
#include "fault_proxy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>

#include "archive/gzip.h"
#include "harness.h"

namespace dlq::it {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The connection closed with no reply, as each HTTP client words it (builtin,
// libcurl's error 52).
bool IsEmptyReply(const Status& st) {
  const std::string text = st.ToString();
  return st.code() == ErrorCode::kUnavailable &&
         (text.find("connection closed before a response") != std::string::npos ||
          text.find("Empty reply from server (curl error 52)") != std::string::npos);
}

class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
    fauxqs_ = fauxqs;
    direct_ = Services(fauxqs_);
    ASSERT_TRUE(direct_);
    auto proxy = FaultProxy::Start(fauxqs_.endpoint());
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);
    StandIn via = fauxqs_;
    via.env["AWS_ENDPOINT_URL"] = proxy_->url();
    proxied_ = Services(via);
    ASSERT_TRUE(proxied_);
    queue_ = UniqueName("fault-proxy");
    auto url = direct_->sqs().CreateQueue(queue_, {});
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    bucket_ = queue_ + "-bucket";
    ASSERT_TRUE(direct_->s3_for(bucket_).CreateBucket(bucket_).ok());
  }

  void TearDown() override {
    if (proxy_) {
      EXPECT_EQ(proxy_->Stats().upstream_failures, 0u);
      proxy_->Stop();
    }
    if (direct_ && !url_.empty()) (void)direct_->sqs().DeleteQueue(url_);
  }

  void SendDirect(int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "fault proxy message " + std::to_string(i);
      ASSERT_TRUE(direct_->sqs().SendMessage(url_, e).ok());
    }
  }

  // Everything receivable right now, read straight from fauxqs (and hidden for a minute).
  std::vector<Message> ReceiveAllDirect() {
    std::vector<Message> all;
    ReceiveOptions ro;
    ro.visibility_timeout = 60;
    for (int empty = 0; empty < 2;) {
      auto got = direct_->sqs().ReceiveMessages(url_, ro);
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok() || got->empty()) {
        ++empty;
        continue;
      }
      all.insert(all.end(), got->begin(), got->end());
    }
    return all;
  }

  S3Client& S3Direct() { return direct_->s3_for(bucket_); }
  S3Client& S3Proxied() { return proxied_->s3_for(bucket_); }

  StandIn fauxqs_;
  std::unique_ptr<AwsServices> direct_, proxied_;
  std::unique_ptr<FaultProxy> proxy_;
  std::string queue_, url_, bucket_;
};

TEST_F(FaultProxyTest, ForwardsSqsAndS3CallsByteForByte) {
  SendEntry e;
  e.body = "through the proxy";
  e.message_attributes["a"] = {"String", "x", ""};
  ASSERT_TRUE(proxied_->sqs().SendMessage(url_, e).ok());
  auto got = proxied_->sqs().ReceiveMessages(url_, ReceiveOptions{});
  ASSERT_TRUE(got.ok()) << got.status().ToString();  // MD5s of body and attributes verified by the client
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->at(0).body, "through the proxy");

  // A gzip object stored with Content-Encoding gzip must not be decoded on the way.
  auto gz = GzipCompress(std::string(5000, 'z') + "\n", 1);
  ASSERT_TRUE(gz.ok());
  PutOptions po;
  po.content_encoding = "gzip";
  po.create_only = false;
  ASSERT_TRUE(S3Proxied().PutObject(bucket_, "p/one.json.gz", *gz, po).ok());
  auto direct = S3Direct().GetObject(bucket_, "p/one.json.gz");
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_EQ(*direct, *gz);
  auto back = S3Proxied().GetObject(bucket_, "p/one.json.gz");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *gz);
  auto head = S3Proxied().HeadObject(bucket_, "p/one.json.gz");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, gz->size());
  ListObjectsV2Request list;
  list.prefix = "p/";
  auto listed = S3Proxied().ListObjectsV2(bucket_, list);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();

  FaultProxyStats s = proxy_->Stats();
  EXPECT_EQ(s.forwarded, s.requests);
  EXPECT_EQ(s.Requests("SendMessage"), 1u);
  EXPECT_EQ(s.Requests("ReceiveMessage"), 1u);
  EXPECT_EQ(s.Requests("S3:PUT"), 1u);
  EXPECT_EQ(s.Requests("S3:HEAD"), 1u);
  EXPECT_EQ(s.puts_passed, 1u);
  EXPECT_EQ(s.InFlight("ReceiveMessage"), 0);
}

TEST_F(FaultProxyTest, DeniesPutsOnceNHavePassedWithAccessDenied) {
  FaultPlan plan;
  plan.deny_puts_after = 2;
  proxy_->SetPlan(plan);
  PutOptions po;
  ASSERT_TRUE(S3Proxied().PutObject(bucket_, "d/1", "one", po).ok());
  ASSERT_TRUE(S3Proxied().PutObject(bucket_, "d/2", "two", po).ok());
  auto third = S3Proxied().PutObject(bucket_, "d/3", "three", po);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), ErrorCode::kPermissionDenied) << third.status().ToString();
  EXPECT_NE(third.status().ToString().find("AccessDenied"), std::string::npos) << third.status().ToString();
  EXPECT_FALSE(S3Direct().HeadObject(bucket_, "d/3").ok()) << "a denied PUT reached the store";
  EXPECT_TRUE(S3Direct().HeadObject(bucket_, "d/2").ok());

  FaultProxyStats s = proxy_->Stats();
  EXPECT_EQ(s.puts_passed, 2u);
  EXPECT_GE(s.puts_denied, 1u);
  ASSERT_FALSE(s.denied_paths.empty());
  EXPECT_EQ(s.denied_paths[0], "/" + bucket_ + "/d/3");
  // GETs are never denied.
  EXPECT_TRUE(S3Proxied().GetObject(bucket_, "d/1").ok());
}

TEST_F(FaultProxyTest, AnswersSlowDownToPutsAndInternalErrorToChosenSqsCalls) {
  FaultPlan plan;
  plan.s3_slowdown = FaultRule::Always();
  plan.sqs_error = FaultRule::Always({"GetQueueAttributes"});
  proxy_->SetPlan(plan);
  auto put = S3Proxied().PutObject(bucket_, "s/1", "x", PutOptions{});
  ASSERT_FALSE(put.ok());
  EXPECT_NE(put.status().ToString().find("SlowDown"), std::string::npos) << put.status().ToString();
  auto attrs = proxied_->sqs().GetQueueAttributes(url_, {"All"});
  ASSERT_FALSE(attrs.ok());
  EXPECT_NE(attrs.status().ToString().find("InternalError"), std::string::npos) << attrs.status().ToString();
  EXPECT_EQ(attrs.status().code(), ErrorCode::kUnavailable) << attrs.status().ToString();
  EXPECT_TRUE(proxied_->sqs().SendMessage(url_, SendEntry{.body = "not filtered"}).ok());
  FaultProxyStats s = proxy_->Stats();
  EXPECT_EQ(s.slowdowns, s.Requests("S3:PUT"));
  EXPECT_EQ(s.sqs_errors, s.Requests("GetQueueAttributes"));
  EXPECT_EQ(s.puts_passed, 0u);
}

TEST_F(FaultProxyTest, InjectsErrorsAtTheSeededProbability) {
  FaultPlan plan;
  plan.sqs_error = FaultRule::WithProbability(0.3);
  plan.seed = 7;
  proxy_->SetPlan(plan);
  for (int i = 0; i < 150; ++i) (void)proxied_->sqs().GetQueueAttributes(url_, {"QueueArn"});
  FaultProxyStats s = proxy_->Stats();
  ASSERT_GE(s.requests, 150u);
  double rate = static_cast<double>(s.sqs_errors) / static_cast<double>(s.requests);
  EXPECT_GT(rate, 0.18) << s.sqs_errors << " of " << s.requests;
  EXPECT_LT(rate, 0.42) << s.sqs_errors << " of " << s.requests;
}

TEST_F(FaultProxyTest, DropBeforeForwardingIsAConnectionErrorAndNeverReachesUpstream) {
  FaultPlan plan;
  plan.drop_before = FaultRule::Always({"SendMessage"});
  proxy_->SetPlan(plan);
  auto sent = proxied_->sqs().SendMessage(url_, SendEntry{.body = "never arrives"});
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), ErrorCode::kUnavailable) << sent.status().ToString();
  // A transport error (the connection closed without a reply), not an HTTP status.
  EXPECT_TRUE(IsEmptyReply(sent.status())) << sent.status().ToString();
  EXPECT_GE(proxy_->Stats().dropped_before, 1u);
  EXPECT_EQ(proxy_->Stats().forwarded, 0u);
  EXPECT_TRUE(ReceiveAllDirect().empty());
  // Other calls pass.
  EXPECT_TRUE(proxied_->sqs().GetQueueAttributes(url_, {"QueueArn"}).ok());
}

TEST_F(FaultProxyTest, DropAfterForwardingAppliesTheCallButLosesTheReply) {
  FaultPlan plan;
  plan.drop_after = FaultRule::Always({"SendMessage"});
  proxy_->SetPlan(plan);
  auto sent = proxied_->sqs().SendMessage(url_, SendEntry{.body = "applied, reply lost"});
  ASSERT_FALSE(sent.ok());
  EXPECT_TRUE(IsEmptyReply(sent.status())) << sent.status().ToString();
  uint64_t dropped = proxy_->Stats().dropped_after;
  EXPECT_GE(dropped, 1u);
  auto in_queue = ReceiveAllDirect();
  EXPECT_EQ(in_queue.size(), dropped) << "every forwarded send must have been applied";
  for (const auto& m : in_queue) EXPECT_EQ(m.body, "applied, reply lost");

  // A lost ReceiveMessage reply leaves the messages invisible upstream.
  SendDirect(3);
  plan.drop_after = FaultRule::Always({"ReceiveMessage"});
  proxy_->SetPlan(plan);
  ReceiveOptions ro;
  ro.visibility_timeout = 60;
  auto got = proxied_->sqs().ReceiveMessages(url_, ro);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kUnavailable) << got.status().ToString();
  EXPECT_TRUE(ReceiveAllDirect().empty()) << "the lost receive did not take the messages";
}

TEST_F(FaultProxyTest, FlipsOneBodyByteSoTheClientsMd5CheckFails) {
  SendDirect(3);
  FaultPlan plan;
  plan.corrupt_body = FaultRule::Times(1);
  proxy_->SetPlan(plan);
  ReceiveOptions ro;
  ro.visibility_timeout = 1;
  auto got = proxied_->sqs().ReceiveMessages(url_, ro);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kDataLoss) << got.status().ToString();
  EXPECT_EQ(proxy_->Stats().corrupted, 1u);
  // The rule is spent: once visible again, the messages arrive intact.
  std::this_thread::sleep_for(milliseconds(1500));
  ro.visibility_timeout = 60;
  std::set<std::string> bodies;
  for (int i = 0; i < 5 && bodies.size() < 3; ++i) {
    auto again = proxied_->sqs().ReceiveMessages(url_, ro);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    for (const auto& m : *again) bodies.insert(m.body);
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"fault proxy message 0", "fault proxy message 1", "fault proxy message 2"}));
  EXPECT_EQ(proxy_->Stats().corrupted, 1u);
}

TEST_F(FaultProxyTest, RepeatHandsOutThePreviousRepliesMessagesAgainWithNewHandles) {
  SendDirect(4);
  FaultPlan plan;
  plan.repeat_messages = FaultRule::Times(1, {"ReceiveMessage"});
  proxy_->SetPlan(plan);
  ReceiveOptions ro;
  ro.max_messages = 2;
  ro.visibility_timeout = 60;
  auto first = proxied_->sqs().ReceiveMessages(url_, ro);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);
  auto second = proxied_->sqs().ReceiveMessages(url_, ro);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // Its own two, then the first reply's two again, each with a new handle.
  ASSERT_EQ(second->size(), 4u);
  std::set<std::string> own{(*second)[0].message_id, (*second)[1].message_id};
  for (size_t i = 0; i < 2; ++i) {
    const Message& copy = (*second)[2 + i];
    auto original =
        std::find_if(first->begin(), first->end(), [&](const Message& m) { return m.message_id == copy.message_id; });
    ASSERT_NE(original, first->end()) << copy.message_id;
    EXPECT_EQ(copy.body, original->body);
    EXPECT_NE(copy.receipt_handle, original->receipt_handle);
    EXPECT_EQ(own.count(copy.message_id), 0u);
  }
  EXPECT_EQ(proxy_->Stats().repeated, 2u);
  // Nothing else was left held by the proxy: the rest are receivable, and
  // the rule is spent, so no more copies come.
  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto more = proxied_->sqs().ReceiveMessages(url_, ro);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    for (const Message& m : *more) ids.insert(m.message_id);
  }
  EXPECT_TRUE(ids.empty()) << "all four are held by the client";
  EXPECT_EQ(proxy_->Stats().repeated, 2u);
}

TEST_F(FaultProxyTest, DelaysOnlyMatchingRepliesAndShowsThemInFlight) {
  FaultPlan plan;
  plan.delay = FaultRule::Always({"GetQueueAttributes"});
  plan.latency = milliseconds(3000);
  proxy_->SetPlan(plan);
  auto start = steady_clock::now();
  auto slow = std::async(std::launch::async, [&] { return proxied_->sqs().GetQueueAttributes(url_, {"QueueArn"}); });
  EXPECT_TRUE(proxy_->WaitFor([](const FaultProxyStats& s) { return s.InFlight("GetQueueAttributes") == 1; },
                              milliseconds(5000)));
  auto fast_start = steady_clock::now();
  EXPECT_TRUE(proxied_->sqs().ListQueues(queue_).ok());
  EXPECT_LT(steady_clock::now() - fast_start, milliseconds(2000));
  auto r = slow.get();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(steady_clock::now() - start, milliseconds(2950));
  FaultProxyStats s = proxy_->Stats();
  EXPECT_EQ(s.delayed, 1u);
  // The proxy counts the request finished just after the reply is written,
  // which may be after the client has read it.
  EXPECT_TRUE(proxy_->WaitFor([](const FaultProxyStats& st) { return st.InFlight("GetQueueAttributes") == 0; },
                              milliseconds(2000)));
}

TEST_F(FaultProxyTest, StopCutsPendingDelaysShort) {
  FaultPlan plan;
  plan.delay = FaultRule::Always({"GetQueueAttributes"});
  plan.latency = milliseconds(60000);
  proxy_->SetPlan(plan);
  auto slow = std::async(std::launch::async, [&] { return proxied_->sqs().GetQueueAttributes(url_, {"QueueArn"}); });
  ASSERT_TRUE(proxy_->WaitFor([](const FaultProxyStats& s) { return s.InFlight("GetQueueAttributes") == 1; },
                              milliseconds(5000)));
  auto start = steady_clock::now();
  proxy_->Stop();
  EXPECT_LT(steady_clock::now() - start, milliseconds(3000));
  EXPECT_FALSE(slow.get().ok());  // the proxy is gone: connection errors on every attempt
}

}  // namespace
}  // namespace dlq::it
