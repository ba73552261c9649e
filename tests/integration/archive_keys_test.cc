// Archive keys and paths mean exactly one place, end to end on moto: the key
// S3 stores is the key `archive` prints, with either HTTP client (libcurl is
// what a proxy variable selects); a destination whose prefix would be
// rewritten by a client is refused before anything is received; a file://
// archive is never written through a link below its root, readers name what
// they skip, and files are created with the mode the operator asked for.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <tuple>

#include "harness.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string Cli(const StandIn& s, const std::string& env, const std::string& args) {
  return s.ShellEnv() + env + DLQ_BINARY + " " + args;
}

std::string MakeQueue(AwsServices& svc, const std::string& name, int messages) {
  auto url = svc.sqs().CreateQueue(name, {});
  EXPECT_TRUE(url.ok()) << url.status().ToString();
  for (int i = 0; i < messages; ++i) {
    SendEntry e;
    e.body = "poison " + std::to_string(i);
    EXPECT_TRUE(svc.sqs().SendMessage(*url, e).ok());
  }
  return *url;
}

std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

// Every message is still in the queue and none was received before: the
// first receive sees ApproximateReceiveCount 1.
void ExpectUntouched(AwsServices& svc, const std::string& url, size_t messages) {
  ReceiveOptions ro;
  ro.max_messages = 10;
  ro.visibility_timeout = 0;
  auto got = svc.sqs().ReceiveMessages(url, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), messages);
  for (const Message& m : *got) EXPECT_EQ(m.attributes.at("ApproximateReceiveCount"), "1");
}

class ArchiveKeysTest : public ::testing::TestWithParam<std::string> {};

// The prefix holds what HTTP clients are tempted to rewrite: dots inside
// segments and characters that are percent-encoded.
TEST_P(ArchiveKeysTest, KeyStoredEqualsKeyPrinted) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string q = UniqueName("keys-" + GetParam() + "-dlq");
  MakeQueue(*svc, q, 3);
  const std::string bucket = UniqueName("keys-" + GetParam());
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  const std::string prefix = "it/.../..x/a+b=c/d.";
  auto r = RunShell(Cli(moto, "export DLQ_HTTP_CLIENT=" + GetParam() + "; ",
                        "archive --queue " + q + " --to 's3://" + bucket + "/" + prefix +
                            "' --keep --output json --progress never --log-level off") +
                        " | jq -r '.. | .objects_written? // empty | .[]'",
                    false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> printed = Lines(r.out);
  ASSERT_EQ(printed.size(), 1u) << r.out;
  EXPECT_EQ(printed.begin()->rfind("s3://" + bucket + "/" + prefix + "/" + q + "/", 0), 0u) << *printed.begin();

  // What S3 holds, listed by the AWS CLI (not our client).
  auto listed = RunShell(moto.ShellEnv() + "aws --endpoint-url " + moto.endpoint() +
                             " s3api list-objects-v2 --bucket " + bucket + " --query 'Contents[].Key' --output text",
                         false);
  ASSERT_EQ(listed.exit_code, 0) << listed.out;
  std::set<std::string> stored;
  for (const std::string& key : Lines(listed.out)) stored.insert("s3://" + bucket + "/" + key);
  EXPECT_EQ(stored, printed) << listed.out;
}

TEST_P(ArchiveKeysTest, DotSegmentPrefixIsRefusedBeforeAnythingIsReceived) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string q = UniqueName("dots-" + GetParam() + "-dlq");
  const std::string url = MakeQueue(*svc, q, 2);
  auto r = RunShell(Cli(moto, "export DLQ_HTTP_CLIENT=" + GetParam() + "; ",
                        "archive --queue " + q + " --to 's3://bucketa/../bucketb/pwn' --keep --progress never"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("error: --to: destination 's3://bucketa/../bucketb/pwn': prefix segment '..' is not allowed "
                       "(dot segments would be removed by HTTP clients and name another place)"),
            std::string::npos)
      << r.out;
  ExpectUntouched(*svc, url, 2);
}

INSTANTIATE_TEST_SUITE_P(HttpClients, ArchiveKeysTest, ::testing::Values("builtin", "curl"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

class TempDir {
 public:
  TempDir() : path_("/tmp/dlq-keys-" + RandomHex(4)) { fs::create_directories(path_); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The writer refuses a linked queue directory before deleting anything, and
// ls names the link instead of reporting an empty archive.
TEST(ArchiveKeysFile, LinkedQueueDirectoryFailsTheRunAndLsNamesIt) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string q = UniqueName("sym-dlq");
  const std::string url = MakeQueue(*svc, q, 3);
  TempDir root, elsewhere;
  fs::create_directories(root.path() + "/dlq-archive");
  fs::create_directory_symlink(elsewhere.path(), root.path() + "/dlq-archive/" + q);

  auto r = RunShell(Cli(moto, "", "archive --queue " + q + " --to file://" + root.path() + " --progress never"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(root.path() + "/dlq-archive/" + q + " is a symbolic link"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing unarchived was deleted"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
  ReceiveOptions ro;
  ro.max_messages = 10;
  ro.visibility_timeout = 0;
  size_t visible = 0;
  for (int i = 0; i < 3 && visible < 3; ++i) visible += svc->sqs().ReceiveMessages(url, ro)->size();
  EXPECT_EQ(visible, 3u) << "every message stays in the DLQ";

  auto ls = RunShell(Cli(moto, "", "ls --from file://" + root.path()));
  EXPECT_EQ(ls.exit_code, 3) << ls.out;
  EXPECT_NE(ls.out.find("warning: file://" + root.path() + "/dlq-archive/" + q + ": skipped: symbolic link"),
            std::string::npos)
      << ls.out;
}

TEST(ArchiveKeysFile, FilesAreOwnerOnlyUnlessDlqFileModeWidensThem) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  for (const auto& [mode, file_mode, dir_mode] :
       {std::tuple<std::string, mode_t, mode_t>{"", 0600, 0700}, {"0640", 0640, 0750}}) {
    const std::string q = UniqueName("mode-dlq");
    MakeQueue(*svc, q, 2);
    TempDir root;
    const std::string env = "umask 022; " + (mode.empty() ? "" : "export DLQ_FILE_MODE=" + mode + "; ");
    auto r = RunShell(Cli(moto, env, "archive --queue " + q + " --to file://" + root.path() + " --progress never"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(root.path())) {
      struct stat st;
      ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
      const mode_t want = e.is_directory() ? dir_mode : file_mode;
      EXPECT_EQ(st.st_mode & 07777, want) << e.path() << " with DLQ_FILE_MODE='" << mode << "'";
      files += e.is_regular_file() ? 1 : 0;
    }
    EXPECT_GE(files, 1u);
  }
  auto bad = RunShell(Cli(moto, "export DLQ_FILE_MODE=0755; ", "archive --queue x --to file:///tmp --progress never"));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("DLQ_FILE_MODE: file mode '0755' has execute bits"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace dlq::it
