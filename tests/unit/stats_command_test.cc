#include "app/stats_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/time_util.h"
#include "testing/fake_object_store.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;

const SystemTime kNow = *ParseIso8601("2025-09-20T00:00:00Z");

std::string Line(const std::string& queue, const std::string& id, const std::string& body, const char* sent) {
  ArchiveRecord r;
  r.queue = queue;
  r.message_id = id;
  r.body = body;
  r.md5_of_body = "x";
  r.sent_at = ParseIso8601(sent);
  r.archived_at = r.expires_at = *ParseIso8601("2025-09-15T00:00:00Z");
  std::string out;
  AppendRecordJson(r, out);
  return out;
}

// A FILE* writing into memory.
class MemoryFile {
 public:
  MemoryFile() : file_(open_memstream(&buf_, &len_)) {}
  ~MemoryFile() {
    std::fclose(file_);
    std::free(buf_);
  }
  std::FILE* get() { return file_; }
  std::string str() {
    std::fflush(file_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* file_;
};

class StatsCommandTest : public ::testing::Test {
 protected:
  void Put(const std::string& key, const std::string& lines) {
    ASSERT_TRUE(store_.Put(key, GzipCompress(lines, 1).value(), PutOptions{}).ok());
  }
  int Run(const std::string& group_by, const std::string& output = "json", bool terminal = false) {
    options_.group_by = group_by;
    options_.output = output;
    MemoryFile out, err;
    Destination from = ParseDestination("file:///archive").value();
    int code = RunStatsCommand(options_, store_, from, kNow, terminal, stop_, out.get(), err.get());
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  FakeObjectStore store_;
  StatsCommandOptions options_;
  std::atomic<bool> stop_{false};
  std::string out_, err_;
};

TEST_F(StatsCommandTest, CountsEachMessageOnceAcrossObjects) {
  Put("dlq-archive/q/20250910/q-120000-aaaaaaaaaaaaaaaa.json.gz",
      Line("q", "m1", "order 1 failed", "2025-09-10T12:00:00Z") +
          Line("q", "m2", "order 2 failed", "2025-09-10T13:00:00Z"));
  Put("dlq-archive/q/20250911/q-120000-bbbbbbbbbbbbbbbb.json.gz",
      Line("q", "m2", "order 2 failed", "2025-09-10T13:00:00Z") + Line("q", "m3", "boom", "2025-09-11T12:00:00Z"));
  ASSERT_EQ(Run("fingerprint", "jsonl"), 0) << err_;
  EXPECT_EQ(
      out_,
      "{\"id\":\"5295bdb8e81e\",\"key\":\"order <num> failed\",\"count\":2,\"first_seen\":\"2025-09-10T12:00:00.000Z\","
      "\"last_seen\":\"2025-09-10T13:00:00.000Z\",\"example_id\":\"m1\",\"failed_again\":0}\n"
      "{\"id\":\"81f52337ebb4\",\"key\":\"boom\",\"count\":1,\"first_seen\":\"2025-09-11T12:00:00.000Z\","
      "\"last_seen\":\"2025-09-11T12:00:00.000Z\",\"example_id\":\"m3\",\"failed_again\":0}\n");
  EXPECT_THAT(err_, HasSubstr("2 objects read, 3 records, 1 duplicate skipped"));
}

TEST_F(StatsCommandTest, AppliesTheFilterFlags) {
  Put("dlq-archive/a/20250910/a-120000-aaaaaaaaaaaaaaaa.json.gz",
      Line("a", "m1", "x", "2025-09-10T12:00:00Z") + Line("a", "m2", "y", "2025-09-12T12:00:00Z"));
  Put("dlq-archive/b/20250910/b-120000-bbbbbbbbbbbbbbbb.json.gz", Line("b", "m3", "x", "2025-09-10T12:00:00Z"));
  options_.filter.queues = {"a"};
  options_.filter.since = "2025-09-11";
  ASSERT_EQ(Run("queue"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\"records\":1,"));
  EXPECT_THAT(out_, HasSubstr("{\"key\":\"a\",\"count\":1,\"first_seen\":\"2025-09-12T12:00:00.000Z\""));
}

TEST_F(StatsCommandTest, CorruptObjectIsNamedAndExitsThree) {
  Put("dlq-archive/q/20250910/q-120000-aaaaaaaaaaaaaaaa.json.gz", Line("q", "m1", "x", "2025-09-10T12:00:00Z"));
  ASSERT_TRUE(store_.Put("dlq-archive/q/20250910/q-130000-bbbbbbbbbbbbbbbb.json.gz", "not gzip", PutOptions{}).ok());
  Put("dlq-archive/q/20250910/q-140000-cccccccccccccccc.json.gz",
      Line("q", "m2", "x", "2025-09-10T12:00:00Z") + "{\"schema\":1,\"queue\":\"q\"\n");
  EXPECT_EQ(Run("queue"), 3);
  EXPECT_THAT(err_, HasSubstr("warning: file:///archive/dlq-archive/q/20250910/q-130000-bbbbbbbbbbbbbbbb.json.gz: "
                              "unreadable object skipped"));
  EXPECT_THAT(err_,
              HasSubstr("warning: file:///archive/dlq-archive/q/20250910/q-140000-cccccccccccccccc.json.gz line 2: "));
  EXPECT_THAT(err_, HasSubstr("incomplete: 1 unreadable object and 1 unreadable line were skipped"));
  EXPECT_THAT(out_, HasSubstr("{\"key\":\"q\",\"count\":2,"));  // the rest is still counted
}

TEST_F(StatsCommandTest, ListingFailureExitsOne) {
  store_.FailNextList(Unavailable("injected 503"), 10);
  EXPECT_EQ(Run("queue"), 1);
  EXPECT_THAT(err_, HasSubstr("injected 503"));
  EXPECT_TRUE(out_.empty());
}

TEST_F(StatsCommandTest, StopPrintsNoReportAndExits130) {
  Put("dlq-archive/q/20250910/q-120000-aaaaaaaaaaaaaaaa.json.gz", Line("q", "m1", "x", "2025-09-10T12:00:00Z"));
  stop_ = true;
  EXPECT_EQ(Run("queue"), 130);
  EXPECT_TRUE(out_.empty());
}

TEST_F(StatsCommandTest, BadFlagsExitTwoNamingThem) {
  EXPECT_EQ(Run("json:$.["), 2);
  EXPECT_THAT(err_, HasSubstr("--group-by json:$.["));
  options_.filter.body_regex = "(";
  EXPECT_EQ(Run("queue"), 2);
  EXPECT_THAT(err_, HasSubstr("--body-regex"));
  options_.filter.body_regex.clear();
  options_.max_groups = 0;
  EXPECT_EQ(Run("queue"), 2);
  EXPECT_THAT(err_, HasSubstr("--max-groups"));
  EXPECT_EQ(store_.list_calls(), 0);  // nothing was read
}

TEST_F(StatsCommandTest, TableIsTheDefaultOnATerminal) {
  Put("dlq-archive/q/20250910/q-120000-aaaaaaaaaaaaaaaa.json.gz", Line("q", "m1", "x", "2025-09-10T12:00:00Z"));
  ASSERT_EQ(Run("queue", "", true), 0);
  EXPECT_THAT(out_, HasSubstr("COUNT  FIRST SEEN"));
  ASSERT_EQ(Run("queue", "", false), 0);
  EXPECT_THAT(out_, HasSubstr("{\"key\":\"q\""));
}

TEST_F(StatsCommandTest, BadKeyTemplateExitsTwo) {
  options_.source.key_templates = {"{prefix}/{nope}/{batch_id}"};
  EXPECT_EQ(Run("queue"), 2);
  EXPECT_THAT(err_, HasSubstr("--key-template"));
}

}  // namespace
}  // namespace dlq
