#include "s3/local_object_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LocalObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("dlq-local-store-{}-{}", ::getpid(), RandomHex(4));
    fs::create_directories(root_);
    auto store = LocalObjectStore::Open(root_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  // Every file under root, relative, including hidden ones.
  std::vector<std::string> AllFiles() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root_).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> Keys(const ListPage& page) {
    std::vector<std::string> keys;
    for (const ObjectInfo& o : page.objects) keys.push_back(o.key);
    return keys;
  }

  fs::path root_;
  std::unique_ptr<LocalObjectStore> store_;
};

TEST_F(LocalObjectStoreTest, RoundTripsObjectsInNestedDirectories) {
  const std::string data("gzip\0bytes\xff", 11);
  ASSERT_TRUE(store_->Put("dlq-archive/orders-dlq/20250910/a.json.gz", data, {}).ok());
  auto got = store_->Get("dlq-archive/orders-dlq/20250910/a.json.gz");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);

  auto range = store_->Get("dlq-archive/orders-dlq/20250910/a.json.gz", std::make_pair<uint64_t, uint64_t>(5, 100));
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, data.substr(5));

  auto info = store_->Head("dlq-archive/orders-dlq/20250910/a.json.gz");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 11u);
  EXPECT_EQ(info->etag, Md5Hex(data));
  EXPECT_EQ(store_->Describe(), "file://" + root_.string());
}

TEST_F(LocalObjectStoreTest, CreateOnlyRefusesToOverwrite) {
  ASSERT_TRUE(store_->Put("k", "first", {}).ok());
  Status again = store_->Put("k", "second", {});
  EXPECT_EQ(again.code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(*store_->Get("k"), "first");
  EXPECT_THAT(AllFiles(), ElementsAre("k"));  // the failed attempt left no temporary file

  PutOptions overwrite;
  overwrite.create_only = false;
  ASSERT_TRUE(store_->Put("k", "third", overwrite).ok());
  EXPECT_EQ(*store_->Get("k"), "third");
}

TEST_F(LocalObjectStoreTest, ConcurrentCreateOnlyPutsStoreExactlyOne) {
  std::atomic<int> stored{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      Status st = store_->Put("race/k", fmt::format("writer {}", i), {});
      if (st.ok()) ++stored;
      if (st.code() == ErrorCode::kAlreadyExists) ++refused;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(stored.load(), 1);
  EXPECT_EQ(refused.load(), 7);
  EXPECT_THAT(AllFiles(), ElementsAre("race/k"));
}

TEST_F(LocalObjectStoreTest, LeavesNoTemporaryFilesAfterSuccessOrFailure) {
  ASSERT_TRUE(store_->Put("a/b", "x", {}).ok());
  ASSERT_TRUE(store_->Put("a/c", "y", {}).ok());
  EXPECT_EQ(store_->Put("a/b", "z", {}).code(), ErrorCode::kAlreadyExists);
  // A key whose parent is a file cannot be created.
  EXPECT_FALSE(store_->Put("a/b/c", "z", {}).ok());
  // Moving the written temporary file onto a directory fails after it was written.
  fs::create_directories(root_ / "a" / "dir");
  PutOptions overwrite;
  overwrite.create_only = false;
  EXPECT_FALSE(store_->Put("a/dir", "z", overwrite).ok());
  EXPECT_THAT(AllFiles(), ElementsAre("a/b", "a/c"));
}

TEST_F(LocalObjectStoreTest, RejectsKeysThatEscapeTheRoot) {
  for (const char* key : {"", "/abs", "a/../b", "../x", "a//b", "./a", "a/.dlq-tmp-1"}) {
    EXPECT_EQ(store_->Put(key, "x", {}).code(), ErrorCode::kInvalidArgument) << key;
  }
  EXPECT_TRUE(AllFiles().empty());
}

TEST_F(LocalObjectStoreTest, ListsInKeyOrderWithPrefixDelimiterAndPages) {
  LocalObjectStore paged(root_.string(), /*page_size=*/2);
  for (const char* key : {"p/b", "p/a", "p/d/1", "p/d/2", "p/c", "q/z", "p-x"}) {
    ASSERT_TRUE(paged.Put(key, key, {}).ok()) << key;
  }
  auto all = store_->List("", "", "");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(Keys(*all), ElementsAre("p-x", "p/a", "p/b", "p/c", "p/d/1", "p/d/2", "q/z"));
  EXPECT_EQ(all->next_token, "");

  // Pages of 2 with the delimiter: p/a p/b | p/c p/d/ | (end)
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = paged.List("p/", "/", token);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& k : Keys(*page)) seen.push_back(k);
    for (const auto& p : page->common_prefixes) seen.push_back(p);
    token = page->next_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 2);
  EXPECT_THAT(seen, ElementsAre("p/a", "p/b", "p/c", "p/d/"));

  auto partial = store_->List("p/d", "", "");
  ASSERT_TRUE(partial.ok());
  EXPECT_THAT(Keys(*partial), ElementsAre("p/d/1", "p/d/2"));
  auto missing = store_->List("nothing/here/", "/", "");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->objects.empty());
}

TEST_F(LocalObjectStoreTest, ListSkipsTemporaryFiles) {
  ASSERT_TRUE(store_->Put("a", "x", {}).ok());
  std::FILE* f = std::fopen((root_ / ".dlq-tmp-deadbeef").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto page = store_->List("", "", "");
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(Keys(*page), ElementsAre("a"));
}

TEST_F(LocalObjectStoreTest, GetHeadDeleteOfMissingKeys) {
  EXPECT_EQ(store_->Get("missing").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->Head("missing").status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(store_->Delete("missing").ok());
  ASSERT_TRUE(store_->Put("k", "abc", {}).ok());
  EXPECT_EQ(store_->Get("k", std::make_pair<uint64_t, uint64_t>(3, 4)).status().code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(store_->Delete("k").ok());
  EXPECT_EQ(store_->Get("k").status().code(), ErrorCode::kNotFound);
}

TEST(LocalObjectStoreOpenTest, MissingDirectoryIsNotFoundNamingThePath) {
  auto store = LocalObjectStore::Open("file:///nonexistent/dlq-store-test");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(store.status().message(), HasSubstr("/nonexistent/dlq-store-test"));
}

TEST(LocalObjectStoreOpenTest, CreatesDirectoryOnRequest) {
  fs::path dir = fs::temp_directory_path() / fmt::format("dlq-local-create-{}", RandomHex(4)) / "nested";
  auto store = LocalObjectStore::Open("file://" + dir.string(), /*create=*/true);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE(fs::is_directory(dir));
  fs::remove_all(dir.parent_path());
}

// Runs `body` as an unprivileged user when the tests run as root (root
// ignores permission bits). Returns the ErrorCode body produced.
int RunUnprivileged(const std::function<int()>& body) {
  if (::geteuid() != 0) return body();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
    ::_exit(body());
  }
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 101;
}

TEST_F(LocalObjectStoreTest, UnwritableDirectoryIsPermissionDeniedAndLeavesNothing) {
  fs::path locked = root_ / "locked";
  fs::create_directories(locked);
  fs::permissions(root_, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  fs::permissions(locked,
                  fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read | fs::perms::others_exec);
  std::string root = root_.string();
  int code = RunUnprivileged([root] {
    LocalObjectStore store(root);
    Status st = store.Put("locked/k", "data", {});
    if (st.code() != ErrorCode::kPermissionDenied) return 50 + static_cast<int>(st.code());
    if (st.message().find(root + "/locked") == std::string::npos) return 99;
    return 0;
  });
  EXPECT_EQ(code, 0) << "50+ErrorCode means the wrong code, 99 means the path was not named";
  EXPECT_TRUE(fs::is_empty(locked));
}

TEST(FakeObjectStoreTest, FailsOnCommandCountsCallsAndHonoursCreateOnly) {
  FakeClock clock;
  FakeObjectStore store("fake://b", &clock, /*page_size=*/2);
  store.FailNextPut(Unavailable("503 SlowDown"), 2);
  EXPECT_EQ(store.Put("k", "v", {}).code(), ErrorCode::kUnavailable);
  EXPECT_EQ(store.Put("k", "v", {}).code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(store.Put("k", "v", {}).ok());
  EXPECT_EQ(store.Put("k", "w", {}).code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(store.put_calls(), 4);
  EXPECT_EQ(store.successful_puts(), 1);
  EXPECT_EQ(store.Object("k")->data, "v");

  std::vector<std::string> hooked;
  store.SetPutHook([&](const std::string& key, std::string_view) {
    hooked.push_back(key);
    return Status::Ok();
  });
  store.SetPutDelay(std::chrono::seconds(30));
  SystemTime before = clock.Now();
  ASSERT_TRUE(store.Put("a/1", "x", {}).ok());
  ASSERT_TRUE(store.Put("a/2", "x", {}).ok());
  EXPECT_EQ(clock.Now() - before, std::chrono::seconds(60));
  EXPECT_THAT(hooked, ElementsAre("a/1", "a/2"));

  auto page1 = store.List("", "/", "");
  ASSERT_TRUE(page1.ok());
  EXPECT_THAT(page1->common_prefixes, ElementsAre("a/"));
  ASSERT_EQ(page1->objects.size(), 1u);
  EXPECT_EQ(page1->objects[0].key, "k");
  EXPECT_EQ(page1->next_token, "");
  auto page2 = store.List("a/", "", "a/1");
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->objects.size(), 1u);
  EXPECT_EQ(page2->objects[0].key, "a/2");
}

}  // namespace
}  // namespace dlq
