// Honest summaries (issue 29 section 5) through the binary on fauxqs: --keep
// counts what went back, a stop during a long poll says the receive was
// abandoned and by when its messages are visible again.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string Bin(const StandIn& s, const std::string& command, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " " + command + " --endpoint-url " + s.endpoint() + " " + args;
}

TEST(Summaries, KeepReportsEveryArchivedMessageAsReleased) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string name = UniqueName("sk");
  std::string url = *svc->sqs().CreateQueue(name, {});
  std::vector<SendEntry> batch;
  for (int i = 0; i < 3; ++i) {
    SendEntry e;
    e.id = "e" + std::to_string(i);
    e.body = "m";
    batch.push_back(std::move(e));
  }
  ASSERT_TRUE(svc->sqs().SendMessageBatch(url, batch).ok());
  std::string dir = "/tmp/dlq-summaries-it-" + RandomHex(4);
  fs::create_directories(dir);
  auto r = RunShell(Bin(fauxqs, "archive", "--queue " + name + " --keep --to file://" + dir + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(name + ": archived 3, deleted 0, released 3,"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(Summaries, StopDuringALongPollSaysTheReceiveWasAbandonedAndWhenItsMessagesReturn) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string name = UniqueName("ss");
  ASSERT_TRUE(svc->sqs().CreateQueue(name, {}).ok());
  std::string dir = "/tmp/dlq-summaries-it-" + RandomHex(4);
  fs::create_directories(dir);
  // An empty queue: the receivers sit in their 2 s long poll when the signal comes.
  auto r = RunShell(
      Bin(fauxqs, "archive", "--queue " + name + " --to file://" + dir + " --progress never --visibility-timeout 2m") +
      " & pid=$!; sleep 1; kill -INT $pid; wait $pid");
  EXPECT_EQ(r.exit_code, 130) << r.out;
  EXPECT_NE(r.out.find("0 messages were released back to " + name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("abandoned: any messages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2m visibility timeout ends, by 20"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlq::it
