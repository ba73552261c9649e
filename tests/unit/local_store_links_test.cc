// A file:// archive and symbolic links and file modes: the writer never
// writes through a link below the root (an archive run fails the batch before
// any delete), readers never read through one and name every entry they leave
// out, and what is created is owner-only unless widened.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/ls_command.h"
#include "app/search_command.h"
#include "app/services.h"
#include "archive/gzip.h"
#include "archiver/drainer.h"
#include "common/crypto.h"
#include "common/time_util.h"
#include "query/scan.h"
#include "replay/checkpoint.h"
#include "s3/local_object_store.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const SystemTime kT = *ParseIso8601("2026-11-20T10:00:00Z");

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / fmt::format("dlq-{}-{}-{}", name, ::getpid(), RandomHex(4))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Sets the umask for the test's duration (modes are requested, then masked).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

// An archive object for queue `queue` as the archiver writes it.
std::string ArchiveObject(const std::string& queue, const std::string& id) {
  ArchiveContext ctx;
  ctx.queue = queue;
  Message m;
  m.message_id = id;
  m.body = "order failed";
  m.md5_of_body = Md5Hex(m.body);
  m.attributes["SentTimestamp"] = std::to_string(ToUnixMillis(kT));
  std::string lines;
  AppendRecordJson(m, ctx, kT, lines);
  return GzipCompress(lines, 1).value();
}

// The layout an operator reported: the queue's directory of the archive is a
// link to a directory elsewhere.
class LinkedQueueDirTest : public ::testing::Test {
 protected:
  LinkedQueueDirTest() : root_("links-root"), elsewhere_("links-elsewhere"), store_(root_.str()) {
    fs::create_directories(root_.path() / "dlq-archive");
    fs::create_directory_symlink(elsewhere_.path(), root_.path() / "dlq-archive" / "sym-dlq");
  }
  std::string Key(const std::string& queue, const std::string& batch) const {
    return KeyTemplate::Default().Render({"dlq-archive", queue, "", "", kT, batch});
  }
  std::string LinkPath() const { return (root_.path() / "dlq-archive" / "sym-dlq").string(); }

  TempDir root_;
  TempDir elsewhere_;
  LocalObjectStore store_;
};

TEST_F(LinkedQueueDirTest, PutRefusesToWriteThroughALinkedDirectoryAndWritesNothing) {
  const std::string key = Key("sym-dlq", "00000000000000a1");
  Status st = store_.Put(key, "data", PutOptions{});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr(LinkPath() + " is a symbolic link"));
  EXPECT_THAT(st.message(), HasSubstr("put " + root_.str() + "/" + key));
  EXPECT_TRUE(fs::is_empty(elsewhere_.path()));
}

TEST_F(LinkedQueueDirTest, PutRefusesALinkInTheObjectsPlaceEvenWithTheSameContent) {
  fs::create_directories(root_.path() / "a");
  WriteFile(elsewhere_.path() / "target", "data");
  fs::create_symlink(elsewhere_.path() / "target", root_.path() / "a" / "k");
  fs::create_symlink(elsewhere_.path() / "missing", root_.path() / "a" / "dangling");

  Status same = store_.Put("a/k", "data", PutOptions{});  // would look like a retried put
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(same.message(), HasSubstr(root_.str() + "/a/k is a symbolic link"));

  Status dangling = store_.Put("a/dangling", "data", PutOptions{});
  ASSERT_FALSE(dangling.ok());
  EXPECT_THAT(dangling.message(), HasSubstr("a/dangling is a symbolic link"));
  EXPECT_FALSE(fs::exists(elsewhere_.path() / "missing"));
  EXPECT_EQ(ReadFile(elsewhere_.path() / "target"), "data");
}

TEST_F(LinkedQueueDirTest, GetHeadAndDeleteRefuseToGoThroughALink) {
  fs::create_directories(elsewhere_.path() / "20261120");
  WriteFile(elsewhere_.path() / "20261120" / "obj.json.gz", "held elsewhere");
  const std::string key = "dlq-archive/sym-dlq/20261120/obj.json.gz";
  EXPECT_EQ(store_.Get(key).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store_.Get(key).status().message(), HasSubstr(LinkPath() + " is a symbolic link"));
  EXPECT_EQ(store_.Head(key).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(store_.Delete(key).code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(ReadFile(elsewhere_.path() / "20261120" / "obj.json.gz"), "held elsewhere");
}

TEST_F(LinkedQueueDirTest, ListReportsEveryLinkAndSpecialFileItSkips) {
  ASSERT_TRUE(store_.Put("dlq-archive/orders-dlq/20261120/a.json.gz", "x", PutOptions{}).ok());
  fs::create_symlink(root_.path() / "dlq-archive" / "orders-dlq" / "20261120" / "a.json.gz",
                     root_.path() / "dlq-archive" / "orders-dlq" / "20261120" / "alias.json.gz");
  ASSERT_EQ(::mkfifo((root_.path() / "dlq-archive" / "pipe").c_str(), 0600), 0);

  auto page = store_.List("", "", "");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "dlq-archive/orders-dlq/20261120/a.json.gz");
  std::vector<std::string> skipped;
  for (const SkippedEntry& e : page->skipped) skipped.push_back(e.path + ": " + e.reason);
  std::sort(skipped.begin(), skipped.end());
  EXPECT_THAT(skipped,
              ElementsAre(HasSubstr("dlq-archive/orders-dlq/20261120/alias.json.gz: symbolic link, not followed"),
                          "dlq-archive/pipe: not a regular file or directory",
                          HasSubstr("dlq-archive/sym-dlq: symbolic link, not followed")));

  // With a delimiter, only this level: what is below a common prefix is
  // reported when that prefix is listed.
  auto level = store_.List("dlq-archive/", "/", "");
  ASSERT_TRUE(level.ok());
  std::vector<std::string> at_level;
  for (const SkippedEntry& e : level->skipped) at_level.push_back(e.path);
  std::sort(at_level.begin(), at_level.end());
  EXPECT_THAT(at_level, ElementsAre("dlq-archive/pipe", "dlq-archive/sym-dlq"));

  // Only what the prefix covers, a link the prefix goes into included.
  WriteFile(elsewhere_.path() / "2026.json.gz", "held elsewhere");
  auto into = store_.List("dlq-archive/sym-dlq/2026", "", "");
  ASSERT_TRUE(into.ok());
  EXPECT_THAT(into->objects, IsEmpty()) << "listed through the link";
  ASSERT_EQ(into->skipped.size(), 1u);
  EXPECT_EQ(into->skipped[0].path, "dlq-archive/sym-dlq");
  EXPECT_THAT(store_.List("dlq-archive/orders-dlq/2099", "", "")->skipped, IsEmpty());
}

TEST_F(LinkedQueueDirTest, SkippedEntriesAreOnTheFirstPageOnly) {
  LocalObjectStore paged(root_.str(), /*page_size=*/1);
  ASSERT_TRUE(paged.Put("dlq-archive/a", "1", PutOptions{}).ok());
  ASSERT_TRUE(paged.Put("dlq-archive/b", "2", PutOptions{}).ok());
  auto first = paged.List("", "", "");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->skipped.size(), 1u);
  ASSERT_FALSE(first->next_token.empty());
  auto second = paged.List("", "", first->next_token);
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(second->skipped, IsEmpty());
}

// What an older writer left behind the link is not read, and every reader
// says so: ListArchive and ScanArchive once per entry, ls and search on
// stderr with exit 3.
TEST_F(LinkedQueueDirTest, ReadersNameTheLinkTheySkipAndCallTheResultIncomplete) {
  fs::create_directories(elsewhere_.path() / "20261120");
  WriteFile(elsewhere_.path() / "20261120" / "sym-dlq-100000-00000000000000b1.json.gz",
            ArchiveObject("sym-dlq", "hidden"));
  ASSERT_TRUE(store_.Put(Key("orders-dlq", "00000000000000b2"), ArchiveObject("orders-dlq", "seen"), {}).ok());
  const Destination from = ParseDestination("file://" + root_.str()).value();

  ListStats list_stats;
  auto objects = ListArchive(store_, from, ListOptions{}, &list_stats);
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  EXPECT_EQ(objects->size(), 1u);
  ASSERT_EQ(list_stats.skipped.size(), 1u);
  EXPECT_EQ(list_stats.skipped[0].path, "dlq-archive/sym-dlq");

  std::vector<std::string> ids;
  auto scan = ScanArchive(store_, from, ScanOptions{}, [&](const ArchiveRecord& r, const RecordLocation&) {
    ids.push_back(r.message_id);
    return true;
  });
  ASSERT_TRUE(scan.ok());
  EXPECT_THAT(ids, ElementsAre("seen"));
  EXPECT_FALSE(scan->complete());
  ASSERT_EQ(scan->skipped_entries.size(), 1u);

  char* out_buf = nullptr;
  char* err_buf = nullptr;
  size_t out_len = 0, err_len = 0;
  std::FILE* out = open_memstream(&out_buf, &out_len);
  std::FILE* err = open_memstream(&err_buf, &err_len);
  EXPECT_EQ(RunLsCommand(LsCommandOptions{}, store_, from, kT, out, err), 3);
  SearchCommandOptions search;
  search.output = "count";
  EXPECT_EQ(RunSearchCommand(search, store_, from, kT, false, out, err), 3);
  std::fclose(out);
  std::fclose(err);
  const std::string err_text(err_buf, err_len);
  std::free(out_buf);
  std::free(err_buf);
  const std::string warning = "warning: file://" + root_.str() + "/dlq-archive/sym-dlq: skipped: symbolic link";
  size_t first = err_text.find(warning);
  ASSERT_NE(first, std::string::npos) << err_text;
  EXPECT_NE(err_text.find(warning, first + 1), std::string::npos) << "ls and search both warn: " << err_text;
  EXPECT_THAT(err_text, HasSubstr("1 entry of the archive directory was not"));
}

// A link in a partition the filter prunes would not have been read anyway.
TEST_F(LinkedQueueDirTest, ReadersFilteredToAnotherQueueDoNotReportIt) {
  ASSERT_TRUE(store_.Put(Key("orders-dlq", "00000000000000c1"), ArchiveObject("orders-dlq", "seen"), {}).ok());
  const Destination from = ParseDestination("file://" + root_.str()).value();
  ScanOptions options;
  options.filter.queues = {"orders-dlq"};
  size_t records = 0;
  auto scan = ScanArchive(store_, from, options, [&](const ArchiveRecord&, const RecordLocation&) {
    ++records;
    return true;
  });
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(records, 1u);
  EXPECT_THAT(scan->skipped_entries, IsEmpty());
  EXPECT_TRUE(scan->complete());
  options.filter.queues = {"sym-dlq"};
  auto asked = ScanArchive(store_, from, options, [](const ArchiveRecord&, const RecordLocation&) { return true; });
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->skipped_entries.size(), 1u);
}

// The archive root itself may be a link: that is the operator's choice.
TEST(LocalStoreLinks, RootMayBeALink) {
  TempDir real("links-real");
  TempDir parent("links-parent");
  fs::create_directory_symlink(real.path(), parent.path() / "archive");
  LocalObjectStore store((parent.path() / "archive").string());
  ASSERT_TRUE(store.Put("dlq-archive/q/k", "data", PutOptions{}).ok());
  EXPECT_EQ(*store.Get("dlq-archive/q/k"), "data");
  auto page = store.List("", "", "");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_THAT(page->skipped, IsEmpty());
  EXPECT_EQ(ReadFile(real.path() / "dlq-archive" / "q" / "k"), "data");
}

// An archive run into a directory whose queue directory is a link fails the
// batch before any delete: every message stays in the DLQ.
TEST(LocalStoreLinks, ArchiveRunThroughALinkedQueueDirectoryDeletesNothing) {
  TempDir root("links-drain-root");
  TempDir elsewhere("links-drain-elsewhere");
  fs::create_directories(root.path() / "dlq-archive");
  fs::create_directory_symlink(elsewhere.path(), root.path() / "dlq-archive" / "orders-dlq");
  LocalObjectStore store(root.str());
  FakeClock clock;
  FakeQueueClient sqs(clock);
  auto url = sqs.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}, {"VisibilityTimeout", "30"}});
  ASSERT_TRUE(url.ok());
  for (int i = 0; i < 12; ++i) {
    SendEntry e;
    e.body = fmt::format("poison #{}", i);
    ASSERT_TRUE(sqs.InjectMessage(*url, e, clock.Now()).ok());
  }
  DrainOptions options;
  options.wait_time_seconds = 0;
  options.receivers = 1;
  options.heartbeat_interval = std::chrono::milliseconds(20);
  options.batch.max_messages = 5;
  auto q = ResolveQueue(sqs, *url, "us-east-1");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ArchiveContext ctx;
  ctx.queue = q->name;
  ctx.queue_url = q->url;
  ctx.region = q->region;
  ctx.retention = q->retention;
  QueueDrainer drainer(sqs, store, clock, *q, options, ctx);
  DrainResult r = drainer.Run();

  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.ToString(),
              HasSubstr((root.path() / "dlq-archive" / "orders-dlq").string() + " is a symbolic link"));
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs.calls(FakeQueueClient::Operation::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs.Depth(*url), 12u);
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
}

TEST(LocalStoreModes, CreatesFilesAndDirectoriesOwnerOnlyByDefault) {
  ScopedUmask umask(022);
  TempDir root("modes-default");
  LocalObjectStore store(root.str());
  ASSERT_TRUE(store.Put("dlq-archive/orders-dlq/20261120/k.json.gz", "x", PutOptions{}).ok());
  EXPECT_EQ(ModeOf(root.path() / "dlq-archive/orders-dlq/20261120/k.json.gz"), 0600u);
  EXPECT_EQ(ModeOf(root.path() / "dlq-archive"), 0700u);
  EXPECT_EQ(ModeOf(root.path() / "dlq-archive/orders-dlq"), 0700u);
  EXPECT_EQ(ModeOf(root.path() / "dlq-archive/orders-dlq/20261120"), 0700u);
}

TEST(LocalStoreModes, WidenedModesApplyAndTheUmaskStillNarrowsThem) {
  TempDir root("modes-wide");
  {
    ScopedUmask umask(0);
    LocalObjectStore store(root.str(), LocalObjectStore::kDefaultPageSize, nullptr, ParseFileModes("0644").value());
    ASSERT_TRUE(store.Put("a/k", "x", PutOptions{}).ok());
    EXPECT_EQ(ModeOf(root.path() / "a/k"), 0644u);
    EXPECT_EQ(ModeOf(root.path() / "a"), 0755u);
  }
  {
    ScopedUmask umask(027);
    LocalObjectStore store(root.str(), LocalObjectStore::kDefaultPageSize, nullptr, ParseFileModes("0644").value());
    ASSERT_TRUE(store.Put("b/k", "x", PutOptions{}).ok());
    EXPECT_EQ(ModeOf(root.path() / "b/k"), 0640u);
    EXPECT_EQ(ModeOf(root.path() / "b"), 0750u);
  }
}

TEST(LocalStoreModes, OpenCreatesTheRootOwnerOnly) {
  ScopedUmask umask(022);
  TempDir parent("modes-open");
  auto store = LocalObjectStore::Open((parent.path() / "x" / "y").string(), /*create=*/true);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(ModeOf(parent.path() / "x"), 0700u);
  EXPECT_EQ(ModeOf(parent.path() / "x" / "y"), 0700u);
}

TEST(LocalStoreModes, CheckpointsAreOwnerOnlyByDefault) {
  ScopedUmask umask(022);
  TempDir dir("modes-checkpoint");
  CheckpointState state;
  state.identity_text = CheckpointIdentityText("s", "f", "d", "");
  state.identity = CheckpointIdentity(state.identity_text);
  ASSERT_TRUE(SaveCheckpoint((dir.path() / "cp.json").string(), state).ok());
  EXPECT_EQ(ModeOf(dir.path() / "cp.json"), 0600u);
  ASSERT_TRUE(SaveCheckpoint((dir.path() / "wide.json").string(), state, 0640).ok());
  EXPECT_EQ(ModeOf(dir.path() / "wide.json"), 0640u);
}

TEST(FileModes, ParsesOctalModesAndGivesDirectoriesSearchWhereReadIsGranted) {
  EXPECT_EQ(ParseFileModes("0600")->file, 0600u);
  EXPECT_EQ(ParseFileModes("0600")->dir, 0700u);
  EXPECT_EQ(ParseFileModes("640")->file, 0640u);
  EXPECT_EQ(ParseFileModes("640")->dir, 0750u);
  EXPECT_EQ(ParseFileModes("0644")->dir, 0755u);
  EXPECT_EQ(ParseFileModes("0660")->dir, 0770u);
  EXPECT_EQ(ParseFileModes("0620")->dir, 0720u);
}

TEST(FileModes, RefusesExecuteBitsOwnerWithoutReadWriteAndNonOctal) {
  for (std::string_view bad : {"0755", "0700", "0400", "0200", "0040", "abc", "", "06400", "4600", "0o600", "0608"}) {
    Result<FileModes> m = ParseFileModes(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(m.status().message(), HasSubstr("0640")) << "says what works: " << m.status().message();
  }
}

TEST(FileModes, EnvironmentVariableNamesItselfWhenWrong) {
  MapEnvironment env;
  EXPECT_EQ(FileModesFromEnv(env)->file, 0600u);
  env.Set("DLQ_FILE_MODE", "0640");
  EXPECT_EQ(FileModesFromEnv(env)->file, 0640u);
  env.Set("DLQ_FILE_MODE", "0777");
  Result<FileModes> bad = FileModesFromEnv(env);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("DLQ_FILE_MODE: file mode '0777' has execute bits"));
}

}  // namespace
}  // namespace dlq
