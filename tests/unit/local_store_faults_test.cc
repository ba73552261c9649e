// The file:// store on a filesystem that fails on command: every injected
// failure makes Put fail with the path and the errno text, leaves nothing
// partial under the final key, and an archive run on that store releases the
// messages instead of deleting them.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "archiver/drainer.h"
#include "common/crypto.h"
#include "s3/local_object_store.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"
#include "testing/fault_injection_file_system.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using FaultOp = FaultInjectionFileSystem::Op;
using ::testing::HasSubstr;
using ::testing::Not;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("dlq-faults-{}-{}", ::getpid(), RandomHex(4))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  // Every regular file below, relative, hidden ones included.
  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(path_)) {
      if (e.is_regular_file()) out.push_back(fs::relative(e.path(), path_).string());
    }
    return out;
  }

 private:
  fs::path path_;
};

struct Fault {
  std::string name;
  std::function<void(FaultInjectionFileSystem&)> inject;
  std::string errno_text;  // strerror of the injected errno
  ErrorCode code;
  std::string advice;  // what an archive run's error says of the disk
};

std::string Errno(int err) {
  return std::strerror(err);
}

constexpr std::string_view kFull = "is full, over quota or failing";
constexpr std::string_view kNotWritable = "cannot be written (its permissions, or a read-only filesystem)";

std::vector<Fault> Faults() {
  return {
      {"FsyncFails", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kSync, EIO); }, Errno(EIO),
       ErrorCode::kUnavailable, std::string(kFull)},
      {"RenameFails", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kRename, EXDEV); }, Errno(EXDEV),
       ErrorCode::kInternal, "and the disk under it"},
      {"DiskFull", [](FaultInjectionFileSystem& f) { f.SetFreeSpace(40); }, Errno(ENOSPC), ErrorCode::kUnavailable,
       std::string(kFull)},
      {"ShortWritesThenDiskFull",
       [](FaultInjectionFileSystem& f) {
         f.SetMaxWrite(7);
         f.SetFreeSpace(60);
       },
       Errno(ENOSPC), ErrorCode::kUnavailable, std::string(kFull)},
      {"QuotaExceeded", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kWrite, EDQUOT); }, Errno(EDQUOT),
       ErrorCode::kUnavailable, std::string(kFull)},
      {"WriteFailsMidFile",
       [](FaultInjectionFileSystem& f) {
         f.SetMaxWrite(16);
         f.Fail(FaultOp::kWrite, EIO, /*after=*/2);
       },
       Errno(EIO), ErrorCode::kUnavailable, std::string(kFull)},
      {"CloseFails", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kClose, EIO); }, Errno(EIO),
       ErrorCode::kUnavailable, std::string(kFull)},
      {"CreateFails", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kCreateFile, EROFS); }, Errno(EROFS),
       ErrorCode::kPermissionDenied, std::string(kNotWritable)},
      {"MkdirFails", [](FaultInjectionFileSystem& f) { f.Fail(FaultOp::kCreateDir, EACCES); }, Errno(EACCES),
       ErrorCode::kPermissionDenied, std::string(kNotWritable)},
  };
}

class LocalStoreFaultTest : public ::testing::TestWithParam<Fault> {
 protected:
  LocalStoreFaultTest() : faulty_(PosixFileSystem::Default()), store_(dir_.path().string(), 1000, &faulty_) {}

  TempDir dir_;
  FaultInjectionFileSystem faulty_;
  LocalObjectStore store_;
};

TEST_P(LocalStoreFaultTest, PutFailsWithPathAndErrnoAndLeavesNothingPartial) {
  const std::string key = "dlq-archive/orders-dlq/20250910/obj.json.gz";
  const std::string data(1000, 'x');
  GetParam().inject(faulty_);
  Status st = store_.Put(key, data, PutOptions{});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), GetParam().code) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(dir_.path().string() + "/dlq-archive/")) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(GetParam().errno_text)) << st.ToString();

  faulty_.Clear();
  EXPECT_EQ(store_.Get(key).status().code(), ErrorCode::kNotFound);
  auto page = store_.List("", "", "");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->objects.empty());
  EXPECT_TRUE(dir_.Files().empty()) << "left behind: " << dir_.Files().front();

  // The same key can be written once the fault is gone (create-only is not tripped by debris).
  ASSERT_TRUE(store_.Put(key, data, PutOptions{}).ok());
  EXPECT_EQ(*store_.Get(key), data);
}

INSTANTIATE_TEST_SUITE_P(Faults, LocalStoreFaultTest, ::testing::ValuesIn(Faults()),
                         [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

TEST(LocalStoreFaults, ShortWritesStillStoreEveryByte) {
  TempDir dir;
  FaultInjectionFileSystem faulty(PosixFileSystem::Default());
  LocalObjectStore store(dir.path().string(), 1000, &faulty);
  faulty.SetMaxWrite(3);
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  ASSERT_TRUE(store.Put("k/v", data, PutOptions{}).ok());
  EXPECT_GE(faulty.calls(FaultOp::kWrite), 334);
  EXPECT_EQ(*store.Get("k/v"), data);
  EXPECT_EQ(store.Head("k/v")->etag, Md5Hex(data));
}

TEST(LocalStoreFaults, DirectoryFsyncFailureIsReportedAndTheObjectIsWholeOrAbsent) {
  TempDir dir;
  FaultInjectionFileSystem faulty(PosixFileSystem::Default());
  LocalObjectStore store(dir.path().string(), 1000, &faulty);
  faulty.Fail(FaultOp::kSyncDir, EIO);
  const std::string data(5000, 'y');
  Status st = store.Put("a/b", data, PutOptions{});
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("fsync directory " + dir.path().string()));
  EXPECT_THAT(st.message(), HasSubstr(Errno(EIO)));
  faulty.Clear();
  auto got = store.Get("a/b");
  if (got.ok()) {
    EXPECT_EQ(*got, data);  // renamed before the failed directory fsync: complete, never partial
  } else {
    EXPECT_EQ(got.status().code(), ErrorCode::kNotFound);
  }
}

TEST(LocalStoreFaults, ReadFailureInGetNamesThePath) {
  TempDir dir;
  FaultInjectionFileSystem faulty(PosixFileSystem::Default());
  LocalObjectStore store(dir.path().string(), 1000, &faulty);
  ASSERT_TRUE(store.Put("k", "data", PutOptions{}).ok());
  faulty.Fail(FaultOp::kRead, EIO);
  auto got = store.Get("k");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr(dir.path().string() + "/k"));
  EXPECT_THAT(got.status().message(), HasSubstr(Errno(EIO)));
}

// An archive run whose uploads go to a local store on a failing disk deletes
// nothing and releases what it received.
class DrainerOnFaultyDiskTest : public ::testing::TestWithParam<Fault> {
 protected:
  DrainerOnFaultyDiskTest()
      : sqs_(clock_), faulty_(PosixFileSystem::Default()), store_(dir_.path().string(), 1000, &faulty_) {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}, {"VisibilityTimeout", "30"}});
    EXPECT_TRUE(url.ok());
    url_ = *url;
    options_.wait_time_seconds = 0;
    options_.receivers = 2;
    options_.deleters = 2;
    options_.heartbeat_interval = std::chrono::milliseconds(20);
    options_.visibility_timeout = std::chrono::seconds(60);
    options_.batch.max_messages = 10;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  TempDir dir_;
  FaultInjectionFileSystem faulty_;
  LocalObjectStore store_;
  std::string url_;
  DrainOptions options_;
};

TEST_P(DrainerOnFaultyDiskTest, ReleasesMessagesInsteadOfDeletingThem) {
  for (int i = 0; i < 30; ++i) {
    SendEntry e;
    e.body = fmt::format("poison #{}", i);
    ASSERT_TRUE(sqs_.InjectMessage(url_, e, clock_.Now()).ok());
  }
  GetParam().inject(faulty_);
  auto q = ResolveQueue(sqs_, url_, "us-east-1");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ArchiveContext ctx;
  ctx.queue = q->name;
  ctx.queue_url = q->url;
  ctx.region = q->region;
  ctx.retention = q->retention;
  QueueDrainer drainer(sqs_, store_, clock_, *q, options_, ctx);
  DrainResult r = drainer.Run();

  EXPECT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.ToString(), HasSubstr(GetParam().errno_text));
  // The error is about this disk and directory, not S3's health.
  EXPECT_THAT(r.status.message(), HasSubstr("writing to the local disk failed"));
  EXPECT_THAT(r.status.message(), HasSubstr(GetParam().advice));
  EXPECT_THAT(r.status.message(), HasSubstr(dir_.path().string()));
  EXPECT_THAT(r.status.message(), HasSubstr("the messages stay in the DLQ"));
  EXPECT_THAT(r.status.message(), Not(HasSubstr("S3")));
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
  EXPECT_GT(r.stats.released, 0u);
  // Released, not left invisible: every message is receivable again at once.
  ReceiveOptions ro;
  ro.max_messages = 10;
  size_t visible = 0;
  for (int i = 0; i < 10; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, 30u);
  faulty_.Clear();
  EXPECT_TRUE(store_.List("", "", "")->objects.empty());
  EXPECT_TRUE(dir_.Files().empty());
}

INSTANTIATE_TEST_SUITE_P(Faults, DrainerOnFaultyDiskTest, ::testing::ValuesIn(Faults()),
                         [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

TEST(LocalStoreFaults, AFullDiskIsReportedWithTheSpaceLeftNotAsS3Failing) {
  TempDir dir;
  FaultInjectionFileSystem faulty(PosixFileSystem::Default());
  LocalObjectStore store(dir.path().string(), 1000, &faulty);
  faulty.SetFreeSpace(100);
  Status st = store.Put("k/v", std::string(1000, 'z'), PutOptions{});
  ASSERT_EQ(st.code(), ErrorCode::kUnavailable) << st.ToString();
  PutFailureAdvice advice = store.AdvisePutFailure(st);
  EXPECT_EQ(advice.operation, "writing to the local disk");
  EXPECT_THAT(advice.hint, HasSubstr("the disk under " + dir.path().string() + " is full"));
  EXPECT_THAT(advice.hint, HasSubstr("(0 B free)"));  // the 100 bytes went into the partial write
  EXPECT_THAT(advice.hint, HasSubstr("the messages stay in the DLQ"));
  EXPECT_THAT(advice.hint, Not(HasSubstr("S3")));

  faulty.Clear();
  faulty.Fail(FaultOp::kFreeSpace, EIO);  // statvfs failing too still gives advice
  EXPECT_THAT(store.AdvisePutFailure(st).hint, HasSubstr("(free space unknown)"));
}

}  // namespace
}  // namespace dlq
