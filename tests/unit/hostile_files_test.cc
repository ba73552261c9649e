// Files and objects a local user or a writer of the archive can plant (issue
// 38): temporary files are never written through a planted link, audit
// records, checkpoints and journals over their size bound are refused by
// name without being read, and the directories dlq-archive makes for its
// state are owner-only whatever the umask.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/audit_command.h"
#include "archive/destination.h"
#include "common/crypto.h"
#include "common/file_util.h"
#include "replay/audit.h"
#include "replay/checkpoint.h"
#include "replay/redrive_journal.h"
#include "s3/local_object_store.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/read_all.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

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

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

// A file of `size` bytes that takes no disk (a hole): a stand-in for a
// planted multi-gigabyte file.
void MakeSparse(const fs::path& p, uint64_t size) {
  WriteFile(p, "");
  fs::resize_file(p, size);
}

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

CheckpointState SampleCheckpoint() {
  CheckpointState state;
  state.identity_text = CheckpointIdentityText("s", "f", "d", "");
  state.identity = CheckpointIdentity(state.identity_text);
  return state;
}

// ---- Temporary files: created exclusively, never through a link.

TEST(HostileFilesTest, CheckpointSaveNeverWritesThroughALinkPlantedAtItsTemporaryName) {
  TempDir dir("planted-tmp");
  const fs::path victim = dir.path() / "victim";
  WriteFile(victim, "precious");
  const fs::path cp = dir.path() / "cp.json";
  // The name earlier builds used, and a few more a local user could guess.
  fs::create_symlink(victim, fmt::format("{}.tmp.{}", cp.string(), ::getpid()));
  ASSERT_TRUE(SaveCheckpoint(cp.string(), SampleCheckpoint()).ok());
  EXPECT_EQ(ReadFile(victim), "precious");
  auto back = LoadCheckpoint(cp.string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->has_value());
  EXPECT_EQ(ModeOf(cp), 0600u);
  // Nothing but the checkpoint, the planted link and the victim is left.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 3);
}

TEST(HostileFilesTest, RedriveJournalRefusesALinkAtItsPath) {
  TempDir dir("journal-link");
  const fs::path victim = dir.path() / "victim";
  WriteFile(victim, "precious");
  const fs::path journal = dir.path() / "run.journal";
  fs::create_symlink(victim, journal);
  auto w = RedriveJournalWriter::Open(journal.string(), 0600, 0);
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(ReadFile(victim), "precious");
}

// ---- Size bounds: refused by name, never read.

TEST(HostileFilesTest, ACheckpointOverItsBoundIsRefusedByNameWithoutBeingRead) {
  TempDir dir("cp-huge");
  const fs::path cp = dir.path() / "cp.json";
  MakeSparse(cp, kMaxCheckpointBytes + 1);
  auto loaded = LoadCheckpoint(cp.string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(),
              HasSubstr(fmt::format("checkpoint {} is {} bytes, more than the {} bytes one may take", cp.string(),
                                    kMaxCheckpointBytes + 1, kMaxCheckpointBytes)));
}

TEST(HostileFilesTest, ARedriveJournalOverItsBoundIsRefusedByNameWithoutBeingRead) {
  TempDir dir("journal-huge");
  const fs::path journal = dir.path() / "run.journal";
  MakeSparse(journal, kMaxRedriveJournalBytes + 1);
  auto loaded = LoadRedriveJournal(journal.string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr(fmt::format("redrive journal {} is {} bytes", journal.string(), kMaxRedriveJournalBytes + 1)));
}

TEST(HostileFilesTest, ReadFileAtMostReadsAFileUpToItsBoundAndNotOneByteMore) {
  TempDir dir("at-most");
  const fs::path p = dir.path() / "f";
  WriteFile(p, "12345");
  auto whole = ReadFileAtMost(p.string(), 5, "test file");
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, "12345");
  auto over = ReadFileAtMost(p.string(), 4, "test file");
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(), HasSubstr("is 5 bytes, more than the 4 bytes"));
  EXPECT_EQ(ReadFileAtMost((dir.path() / "none").string(), 4, "test file").status().code(), ErrorCode::kNotFound);
}

TEST(HostileFilesTest, GetAtMostDoesNotFetchAnObjectOverTheBoundAndNeverHoldsMoreThanItPlusOneByte) {
  FakeObjectStore store("fake://b");
  store.Insert("k", std::string(10, 'x'));
  auto over = GetAtMost(store, "k", 9, "audit record");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(over.status().message(), HasSubstr("audit record fake://b/k is 10 bytes, more than the 9 bytes"));
  EXPECT_EQ(store.get_calls(), 0);
  // Replaced by a larger object between the size check and the read.
  store.SetGetHook([&](const std::string&) {
    store.SetGetHook(nullptr);
    store.Insert("k", std::string(1000, 'y'));
  });
  auto grown = GetAtMost(store, "k", 100, "audit record");
  ASSERT_FALSE(grown.ok());
  EXPECT_THAT(grown.status().message(), HasSubstr("is at least 101 bytes"));
  auto fits = GetAtMost(store, "k", 1000, "audit record");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->size(), 1000u);
}

class HugeAuditRecordTest : public ::testing::Test {
 protected:
  HugeAuditRecordTest() : root_("audit-huge"), store_(root_.str()) {
    from_ = *ParseDestination("file://" + root_.str());
    fs::create_directories(root_.path() / "dlq-archive" / "_audit");
    huge_ = "dlq-archive/_audit/20250101T000000Z-0000000000000000.json";
    MakeSparse(root_.path() / huge_, kMaxAuditRecordBytes + 1);
    AuditRecord r;
    r.started_at = r.finished_at = SystemTime(std::chrono::seconds(1757667600));
    r.source = "file:///a";
    r.destination = "orders";
    r.outcome = "done";
    r.failed_again = {{"id-1", "new-1", "https://q/orders", "https://q/orders-dlq", r.finished_at}};
    r.sent = {{"id-1", "new-1", "https://q/orders"}};
    EXPECT_TRUE(WriteAudit(store_, "dlq-archive", r).ok());
  }
  ~HugeAuditRecordTest() override {
    std::fclose(out_);
    std::fclose(err_);
  }
  std::string TooLarge() const {
    return fmt::format("audit record {}/{} is {} bytes, more than the {} bytes one may take; not read",
                       store_.Describe(), huge_, kMaxAuditRecordBytes + 1, kMaxAuditRecordBytes);
  }

  TempDir root_;
  LocalObjectStore store_;
  Destination from_;
  std::string huge_;
  std::FILE* out_ = std::tmpfile();
  std::FILE* err_ = std::tmpfile();
};

TEST_F(HugeAuditRecordTest, AuditLsLeavesOutARecordOverTheBoundByNameAndListsTheRest) {
  AuditCommandOptions options;
  EXPECT_EQ(RunAuditLsCommand(options, store_, from_, out_, err_), 3);
  EXPECT_THAT(ReadAll(out_), HasSubstr("1 audit record in"));
  EXPECT_THAT(ReadAll(err_), HasSubstr(TooLarge()));
}

TEST_F(HugeAuditRecordTest, AuditShowOfARecordOverTheBoundSaysSoAndExits1) {
  AuditCommandOptions options;
  options.id = AuditIdOfKey(huge_);
  EXPECT_EQ(RunAuditShowCommand(options, store_, from_, out_, err_), 1);
  EXPECT_THAT(ReadAll(err_), HasSubstr(TooLarge()));
}

// What replay (--dry-run too), search --failed-again and the dashboard's
// replay read: the failed-again messages of every other record still count.
TEST_F(HugeAuditRecordTest, FailedAgainIndexNamesARecordOverTheBoundAndKeepsTheOthers) {
  auto index = ReadFailedAgain(store_, "dlq-archive");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_TRUE(index->Contains("id-1"));
  ASSERT_EQ(index->unreadable.size(), 1u);
  EXPECT_EQ(index->unreadable[0].first, huge_);
  EXPECT_EQ(index->unreadable[0].second, TooLarge());
}

// ---- Directories for state: owner-only whatever the umask.

TEST(HostileFilesTest, MakePrivateDirectoriesCreatesEveryMissingLevelOwnerOnly) {
  ScopedUmask umask(0);
  TempDir parent("private-dirs");
  auto mode = MakePrivateDirectories((parent.path() / "a" / "b").string());
  ASSERT_TRUE(mode.ok()) << mode.status().ToString();
  EXPECT_EQ(*mode, 0700u);
  EXPECT_EQ(ModeOf(parent.path() / "a"), 0700u);
  EXPECT_EQ(ModeOf(parent.path() / "a" / "b"), 0700u);
  // An existing directory keeps its bits, which are returned for a warning.
  fs::create_directory(parent.path() / "open");
  fs::permissions(parent.path() / "open", fs::perms(0755));
  EXPECT_EQ(*MakePrivateDirectories((parent.path() / "open").string()), 0755u);
  EXPECT_EQ(ModeOf(parent.path() / "open"), 0755u);
  WriteFile(parent.path() / "file", "");
  EXPECT_FALSE(MakePrivateDirectories((parent.path() / "file").string()).ok());
}

}  // namespace
}  // namespace dlq
