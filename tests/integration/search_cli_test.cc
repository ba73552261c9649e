// ls, search and show over archives written by `dlq-archive archive` from
// real queues: file:// in the default and Hive layouts (fauxqs) and s3://
// (moto). Every filter, de-duplication of a re-archived object, a truncated
// object and an object S3 will not return (Glacier) reported by key with exit
// 3, and malformed input rejected with exit 2. A signal ends a search inside
// an object within 1 s, and hostile objects (a 200 MB line, gzip bombs) stay
// within the documented memory bound.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/crypto.h"
#include "common/time_util.h"
#include "fault_proxy.h"
#include "harness.h"
#include "s3/s3_object_store.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string Dlq(const StandIn& s, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " --endpoint-url " + s.endpoint() + " " + args;
}

// Sends the test messages: JSON bodies with an error type, a String and a
// Binary attribute, and one plain-text body without attributes.
std::vector<std::string> Fill(AwsServices& svc, const std::string& url) {
  std::vector<std::string> ids;
  const char* errors[] = {"Timeout", "Timeout", "Throttled", "Timeout", "Declined"};
  for (int i = 0; i < 5; ++i) {
    SendEntry e;
    e.body = fmt::format(R"({{"error":{{"type":"{}","code":{}}},"order":{}}})", errors[i], 500 + i, 100 + i);
    e.message_attributes["tenant"] = {"String", i < 3 ? "acme" : "globex", ""};
    if (i == 0) e.message_attributes["blob"] = {"Binary", "", std::string("\x00\x01\xff", 3)};
    auto sent = svc.sqs().SendMessage(url, e);
    EXPECT_TRUE(sent.ok()) << sent.status().ToString();
    ids.push_back(sent.ok() ? sent->message_id : "");
  }
  SendEntry plain;
  plain.body = "plain text: order 7 failed";
  auto sent = svc.sqs().SendMessage(url, plain);
  EXPECT_TRUE(sent.ok());
  ids.push_back(sent.ok() ? sent->message_id : "");
  return ids;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> Objects(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SearchCli, FileArchiveInBothLayoutsWithEveryFilterDuplicatesAndDamage) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  const std::string q = UniqueName("search-dlq"), q2 = UniqueName("hive-dlq");
  auto url = svc->sqs().CreateQueue(q, {});
  auto url2 = svc->sqs().CreateQueue(q2, {});
  ASSERT_TRUE(url.ok() && url2.ok());
  std::vector<std::string> ids = Fill(*svc, *url);
  SendEntry other;
  other.body = R"({"error":{"type":"Timeout"}})";
  ASSERT_TRUE(svc->sqs().SendMessage(*url2, other).ok());
  const std::string dir = "/tmp/dlq-search-" + RandomHex(4);
  fs::create_directories(dir);
  auto a1 = RunShell(Dlq(fauxqs, "archive --queue " + q + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(a1.exit_code, 0) << a1.out;
  auto a2 = RunShell(Dlq(fauxqs, "archive --hive --queue " + q2 + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(a2.exit_code, 0) << a2.out;
  const std::string from = " --from file://" + dir;

  auto ls = RunShell(Dlq(fauxqs, "ls" + from));
  EXPECT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find(q), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find(q2), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("2 queues"), std::string::npos) << ls.out;
  auto ls_q = RunShell(Dlq(fauxqs, "ls --objects --queue " + q2 + from));
  EXPECT_NE(ls_q.out.find("queue=" + q2 + "/dt="), std::string::npos) << ls_q.out;
  EXPECT_EQ(ls_q.out.find(q + "/"), std::string::npos) << ls_q.out;

  auto count = [&](const std::string& filter) {
    auto r = RunShell(Dlq(fauxqs, "search --output count" + from + " " + filter), false);
    EXPECT_EQ(r.exit_code, 0) << filter << ": " << r.out;
    return r.out;
  };
  EXPECT_EQ(count(""), "7\n");
  EXPECT_EQ(count("--queue " + q), "6\n");
  EXPECT_EQ(count("--queue " + q2 + " --queue " + q), "7\n");
  EXPECT_EQ(count("--since 1h"), "7\n");
  EXPECT_EQ(count("--until 1h"), "0\n");
  EXPECT_EQ(count("--by archived --since 10m --until 2100-01-01"), "7\n");
  EXPECT_EQ(count("--id " + ids[2] + " --id " + ids[5]), "2\n");
  EXPECT_EQ(count("--attr tenant=acme"), "3\n");
  EXPECT_EQ(count("--attr tenant=acme --body-contains Throttled"), "1\n");
  EXPECT_EQ(count("--attr-exists blob"), "1\n");
  EXPECT_EQ(count("--body-contains 'order 7 failed'"), "1\n");
  EXPECT_EQ(count("--body-regex '\"code\":50[34]'"), "2\n");
  EXPECT_EQ(count("--json '$.error.type=Timeout'"), "4\n");
  EXPECT_EQ(count("--json '$.error.type=Timeout' --queue " + q), "3\n");
  EXPECT_EQ(count("--json '$.error.code=501'"), "1\n");
  // Sent straight to the DLQ: the one receive each had was the archive's own,
  // and --min-receive-count counts the consumer's receives only.
  EXPECT_EQ(count("--min-receive-count 0"), "7\n");
  EXPECT_EQ(count("--min-receive-count 1"), "0\n");
  EXPECT_EQ(count("--min-receive-count 99"), "0\n");
  auto id_out = RunShell(Dlq(fauxqs, "search --output ids --attr-exists blob" + from), false);
  EXPECT_EQ(id_out.out, ids[0] + "\n");
  auto limited = RunShell(Dlq(fauxqs, "search --output ids --limit 2" + from), false);
  EXPECT_EQ(std::count(limited.out.begin(), limited.out.end(), '\n'), 2) << limited.out;
  // Piped, the default output is the archive's own line format.
  auto jsonl = RunShell(Dlq(fauxqs, "search --id " + ids[0] + from), false);
  Result<ArchiveRecord> rec = ParseRecordJson(jsonl.out);
  ASSERT_TRUE(rec.ok()) << jsonl.out;
  EXPECT_EQ(rec->message_attributes.at("blob").binary_value, std::string("\x00\x01\xff", 3));

  auto show = RunShell(Dlq(fauxqs, "show " + ids[0] + from), false);
  EXPECT_EQ(show.exit_code, 0) << show.out;
  for (const std::string& want :
       {std::string("message_id                 ") + ids[0], std::string("stored in"), std::string(" line 1"),
        std::string("3 bytes, base64 AAH/"), std::string("tenant                   String         acme"),
        std::string("SentTimestamp"),
        std::string("body (51 bytes, JSON):\n{\n  \"error\": {\n"
                    "    \"type\": \"Timeout\",\n    \"code\": 500\n")}) {
    EXPECT_NE(show.out.find(want), std::string::npos) << want << "\n" << show.out;
  }
  auto missing = RunShell(Dlq(fauxqs, "show no-such-id" + from));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("message no-such-id is not in file://" + dir), std::string::npos) << missing.out;

  // A crash between upload and delete archived the first object again under another key.
  std::vector<fs::path> objs = Objects(dir + "/dlq-archive/" + q);
  ASSERT_EQ(objs.size(), 1u);
  const std::string gz = ReadFile(objs[0]);
  fs::path copy = objs[0].parent_path() / (q + "-235959-ffffffffffffffff.json.gz");
  std::ofstream(copy, std::ios::binary) << gz;
  EXPECT_EQ(count(""), "7\n");
  auto show_dup = RunShell(Dlq(fauxqs, "show " + ids[0] + from), false);
  EXPECT_NE(show_dup.out.find("also archived in           file://" + copy.string()), std::string::npos) << show_dup.out;

  // A truncated object: what precedes the damage is read, the key and line are named, exit 3.
  fs::path cut = objs[0].parent_path() / (q + "-235959-eeeeeeeeeeeeeeee.json.gz");
  std::ofstream(cut, std::ios::binary) << gz.substr(0, gz.size() - 20);
  auto damaged = RunShell(Dlq(fauxqs, "search --output count" + from));
  EXPECT_EQ(damaged.exit_code, 3) << damaged.out;
  EXPECT_NE(damaged.out.find("7\n"), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("warning: file://" + cut.string() + " line "), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("incomplete"), std::string::npos) << damaged.out;
  fs::remove_all(dir);
}

TEST(SearchCli, MalformedInputExitsTwoWithTheReason) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  const std::string dir = "/tmp/dlq-search-bad-" + RandomHex(4);
  fs::create_directories(dir);
  struct Case {
    std::string args, reason;
  };
  for (const Case& c : std::vector<Case>{
           {"search --from file://" + dir + " --since yesterday", "--since 'yesterday': not a time"},
           {"search --from file://" + dir + " --json 'error.type=x'", "a path must start with '$'"},
           {"search --from file://" + dir + " --json '$.a'", "expected PATH=VALUE"},
           {"search --from file://" + dir + " --body-regex '('", "not a valid regular expression (missing )"},
           {"search --from file://" + dir + " --attr novalue", "expected NAME=VALUE"},
           {"search --from file://" + dir + " --key-template '{queue}/{nope}'", "unknown placeholder {nope}"},
           {"search --from ftp://x", "must be s3://BUCKET/PREFIX or file:///DIR"},
           {"search", "--from is required"},
           {"ls --from file://" + dir + " --until 2026-02-30x", "--until '2026-02-30x'"},
           {"show --from file://" + dir, "MESSAGE_ID"},
       }) {
    auto r = RunShell(Dlq(fauxqs, c.args));
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.reason), std::string::npos) << c.args << ": " << r.out;
  }
  fs::remove_all(dir);
}

// Writes `bodies` as one default-layout archive object of queue big-dlq under `dir`.
void WriteArchive(const std::string& dir, const std::vector<std::string>& bodies) {
  ArchiveContext ctx;
  ctx.queue = "big-dlq";
  ctx.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/big-dlq";
  ctx.region = "us-east-1";
  ctx.account_id = "123456789012";
  ctx.archiver_version = "test";
  ctx.host = "test";
  const SystemTime t = *ParseIso8601("2026-11-20T08:00:00Z");
  std::string lines;
  for (size_t i = 0; i < bodies.size(); ++i) {
    Message m;
    m.message_id = fmt::format("m-{}", i);
    m.body = bodies[i];
    m.md5_of_body = Md5Hex(m.body);
    m.attributes = {{"SentTimestamp", std::to_string(ToUnixMillis(t))}, {"ApproximateReceiveCount", "4"}};
    AppendRecordJson(m, ctx, t, lines);
  }
  Result<std::string> gz = GzipCompress(lines, 1);
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  fs::path path = fs::path(dir) / KeyTemplate::Default().Render(
                                      {"dlq-archive", ctx.queue, ctx.region, ctx.account_id, t, "0000000000000001"});
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(gz->data(), static_cast<std::streamsize>(gz->size()));
}

// Issue 28: these patterns killed `search` with SIGSEGV (std::regex recursion)
// on 20-200 KB bodies. On 1 MiB bodies (SQS's maximum) the real binary answers
// with the right count; a construct RE2 cannot take is a usage error naming it.
TEST(SearchCli, BodyRegexOnOneMebibyteBodiesCountsRightAndUnsupportedConstructsExitTwo) {
  const std::string dir = "/tmp/dlq-search-regex-" + RandomHex(4);
  auto mib = [](std::string_view unit, std::string_view tail) {
    std::string s;
    while (s.size() + unit.size() + tail.size() <= (size_t{1} << 20)) s += unit;
    return s.append(tail);
  };
  WriteArchive(
      dir, {mib("ab", ""), mib("ab", "c"), mib("x", ""), mib("x", "zzz"), mib("order 42 failed\n\tretry later\n", ""),
            mib("order 42 failed\n\tretry later\n", "zzz"), mib("a", ""), mib("a", "!")});
  const std::string search = std::string(DLQ_BINARY) + " search --from file://" + dir + " --output count --body-regex ";
  struct Case {
    std::string pattern, count;
  };
  for (const Case& c :
       std::vector<Case>{{"(a|b)*c", "1\n"}, {".*zzz", "2\n"}, {R"((.|\s)*zzz)", "2\n"}, {"^(.+)+!$", "1\n"}}) {
    auto r = RunShell(search + "'" + c.pattern + "'", false);
    EXPECT_EQ(r.exit_code, 0) << c.pattern << ": " << r.out;
    EXPECT_EQ(r.out, c.count) << c.pattern;
  }
  struct Refused {
    std::string pattern, reason;
  };
  for (const Refused& c : std::vector<Refused>{
           {R"((a)\1)", R"(--body-regex '(a)\1': backreferences (\1) are not supported; patterns use RE2 syntax)"},
           {"(?<=a)b", "lookbehind assertions ((?<=) are not supported"},
           {"a++", "possessive quantifiers (++) are not supported"}}) {
    auto r = RunShell(search + "'" + c.pattern + "'");
    EXPECT_EQ(r.exit_code, 2) << c.pattern << ": " << r.out;
    EXPECT_NE(r.out.find(c.reason), std::string::npos) << c.pattern << ": " << r.out;
  }
  fs::remove_all(dir);
}

TEST(SearchCli, S3ArchiveOnMotoAndAGlacierObjectReportedByKey) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string bucket = UniqueName("search-bucket"), q = UniqueName("s3-dlq");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  auto url = svc->sqs().CreateQueue(q, {});
  ASSERT_TRUE(url.ok());
  std::vector<std::string> ids = Fill(*svc, *url);
  auto a = RunShell(Dlq(moto, "archive --hive --queue " + q + " --to s3://" + bucket + "/team/dlq --progress never"));
  ASSERT_EQ(a.exit_code, 0) << a.out;
  const std::string from = " --from s3://" + bucket + "/team/dlq";
  auto r = RunShell(Dlq(moto, "search --output count --json '$.error.type=Timeout'" + from), false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "3\n");
  auto show = RunShell(Dlq(moto, "show " + ids[5] + from), false);
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("plain text: order 7 failed"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("s3://" + bucket + "/team/dlq/queue=" + q + "/dt="), std::string::npos) << show.out;

  // An object moved to Glacier by a lifecycle rule cannot be read until restored.
  S3ObjectStore store(svc->s3_for(bucket), bucket);
  PutOptions cold;
  cold.storage_class = "GLACIER";
  const std::string key = "team/dlq/queue=" + q + "/dt=2026-01-01/" + q + "-000000-0123456789abcdef.json.gz";
  ASSERT_TRUE(store.Put(key, "x", cold).ok());
  auto cold_r = RunShell(Dlq(moto, "search --output count" + from));
  EXPECT_EQ(cold_r.exit_code, 3) << cold_r.out;
  EXPECT_NE(cold_r.out.find("warning: s3://" + bucket + "/" + key + ": unreadable object skipped"), std::string::npos)
      << cold_r.out;
  EXPECT_NE(cold_r.out.find("6\n"), std::string::npos) << cold_r.out;
}

// S3 refusing the reader, as a missing s3:ListBucket or s3:GetObject does:
// a fault proxy in front of fauxqs answers 403 AccessDenied (S3's XML error).
// (moto-auth cannot stand in here: moto 5.2 rejects the signature of every
// ListObjectsV2 whose prefix holds a '/', boto3's included, before IAM is
// evaluated.) A refused listing is exit 1 naming the permissions and the exact
// ARNs; refused objects are reported by key with the GetObject hint and exit 3.
TEST(SearchCli, AccessDeniedNamesThePermissionAndTheExactArns) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  const std::string bucket = UniqueName("denied-bucket"), q = UniqueName("denied-dlq");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  auto url = svc->sqs().CreateQueue(q, {});
  ASSERT_TRUE(url.ok());
  SendEntry e;
  e.body = "order 1 failed";
  auto sent = svc->sqs().SendMessage(*url, e);
  ASSERT_TRUE(sent.ok());
  auto a = RunShell(Dlq(fauxqs, "archive --queue " + q + " --to s3://" + bucket + "/team --progress never"));
  ASSERT_EQ(a.exit_code, 0) << a.out;
  const std::string from = " --from s3://" + bucket + "/team";
  auto via = [&](const FaultProxy& proxy, const std::string& cmd) {
    return RunShell(fauxqs.ShellEnv() + DLQ_BINARY + " --max-attempts 1 --endpoint-url " + proxy.url() + " " + cmd);
  };

  FaultPlan no_list;
  no_list.s3_deny = FaultRule::Always({"S3:LIST"});
  auto proxy = FaultProxy::Start(fauxqs.endpoint(), no_list);
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  for (const std::string& cmd : {"ls" + from, "search --output count" + from, "show " + sent->message_id + from,
                                 "stats --group-by queue" + from}) {
    auto r = via(**proxy, cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("AccessDenied"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("s3:ListBucket on arn:aws:s3:::" + bucket + " and s3:GetObject on arn:aws:s3:::" + bucket +
                         "/team/*"),
              std::string::npos)
        << cmd << ": " << r.out;
    EXPECT_EQ(r.out.find(fauxqs.env.at("AWS_SECRET_ACCESS_KEY")), std::string::npos) << "secret leaked: " << r.out;
  }

  FaultPlan no_get;
  no_get.s3_deny = FaultRule::Always({"S3:GET"});
  (*proxy)->SetPlan(no_get);
  auto r = via(**proxy, "search --output count" + from);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("unreadable object skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: S3 refused objects with AccessDenied: reading needs s3:GetObject on arn:aws:s3:::" +
                       bucket + "/team/*"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0\n"), std::string::npos) << r.out;
}

// ---- Bounded reads: signals and memory.

// A child dlq-archive with stdout and stderr in files. fork, not vfork or
// posix_spawn: a child that borrows the test's address space until exec
// inherits the test's peak RSS in ru_maxrss; a forked one starts from the
// test's current RSS (small: the big inputs are freed before).
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path) {
    pid_ = fork();
    if (pid_ == 0) {
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (out < 0 || err < 0) _exit(127);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(DLQ_BINARY));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(DLQ_BINARY, argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      Wait();
    }
  }
  pid_t pid() const { return pid_; }
  // Waits for the exit: the exit code (128 + signal if killed) and the peak RSS.
  int Wait() {
    int status = 0;
    rusage ru{};
    while (wait4(pid_, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    max_rss_kib_ = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Whether it has exited, without blocking.
  bool Exited(int& code) {
    int status = 0;
    rusage ru{};
    pid_t r = wait4(pid_, &status, WNOHANG, &ru);
    if (r != pid_) return false;
    reaped_ = true;
    max_rss_kib_ = ru.ru_maxrss;
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  long max_rss_kib() const { return max_rss_kib_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  long max_rss_kib_ = 0;
};

std::string ArchiveKey(const std::string& queue, int n) {
  return fmt::format("dlq-archive/{0}/20250910/{0}-123000-{1:016x}.json.gz", queue, n);
}

void WriteObject(const std::string& dir, const std::string& key, const std::string& data) {
  fs::create_directories(fs::path(dir + "/" + key).parent_path());
  std::ofstream(dir + "/" + key, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
}

// One record line with a body of `body` ('a' * n).
std::string RecordLine(const std::string& id, size_t body_bytes) {
  Message m;
  m.message_id = id;
  m.body = std::string(body_bytes, 'a');
  m.md5_of_body = Md5Hex(m.body);
  m.attributes["SentTimestamp"] = "1757507400000";
  ArchiveContext ctx;
  ctx.queue = "big-dlq";
  std::string out;
  AppendRecordJson(m, ctx, SystemTime(std::chrono::seconds(1757507400)), out);
  return out;
}

// A gzip file of `members` copies of one member holding `unit`: small on
// disk, `members * unit.size()` bytes decompressed.
std::string RepeatedGzip(const std::string& unit, int members) {
  std::string one = GzipCompress(unit, 9).value();
  one.shrink_to_fit();
  std::string out;
  for (int i = 0; i < members; ++i) out += one;
  return out;
}

TEST(SearchCli, SigintEndsASearchInsideAnObjectWithinOneSecond) {
  const std::string dir = "/tmp/dlq-sigint-" + RandomHex(4);
  // One object of ~1 GiB of records (2 MiB compressed): several seconds of work.
  std::string unit;
  for (int i = 0; unit.size() < (size_t{16} << 20); ++i) unit += RecordLine(fmt::format("m-{}", i), 500);
  WriteObject(dir, ArchiveKey("big-dlq", 1), RepeatedGzip(unit, 64));
  Child child({"search", "--from", "file://" + dir, "--output", "ids"}, dir + "/out", dir + "/err");
  ASSERT_GT(child.pid(), 0);
  // Wait until it prints ids: it is inside the object.
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  while ((fs::file_size(dir + "/out", ec) == 0 || ec) &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GT(fs::file_size(dir + "/out", ec), 0u) << ReadFile(dir + "/err");
  const auto signalled = std::chrono::steady_clock::now();
  kill(child.pid(), SIGINT);
  int code = -1;
  while (!child.Exited(code) && std::chrono::steady_clock::now() - signalled < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  const std::string err = ReadFile(dir + "/err");
  std::printf("search ended %.3f s after SIGINT\n", seconds);
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(code, 130) << err;
  EXPECT_NE(err.find("search: stopped by a signal after 0 of 1 object"), std::string::npos) << err;
  EXPECT_NE(err.find("results printed are partial"), std::string::npos) << err;
  fs::remove_all(dir);
}

// The bound doc/querying.md states for search and show with 16-way
// parallelism: --memory (256 MiB) + the de-duplication table (128 MiB) +
// 30 MiB.
constexpr long kDocumentedBoundKib = (256 + 128 + 30) * 1024;

TEST(SearchCli, StaysWithinItsMemoryBoundOnA200MegabyteLine) {
  const std::string dir = "/tmp/dlq-bigline-" + RandomHex(4);
  // A 300 KB object whose one valid line is 200 MB, built in a child process
  // of its own: the children measured below are forked from this process,
  // which must not have held the 200 MB (a fork inherits its parent's RSS in
  // ru_maxrss, and under ASan freed memory stays resident in its quarantine).
  const pid_t maker = fork();
  ASSERT_GE(maker, 0);
  if (maker == 0) {
    std::string gz = GzipCompress(RecordLine("huge", size_t{200} << 20), 9).value();
    WriteObject(dir, ArchiveKey("big-dlq", 1), gz);
    _exit(gz.size() < 400000u ? 0 : 1);
  }
  int maker_status = 0;
  ASSERT_EQ(waitpid(maker, &maker_status, 0), maker);
  ASSERT_TRUE(WIFEXITED(maker_status) && WEXITSTATUS(maker_status) == 0) << "the 200 MB line did not gzip to < 400 KB";
  WriteObject(dir, ArchiveKey("big-dlq", 2), GzipCompress(RecordLine("small", 10), 6).value());
  for (const std::string cmd : {"search", "show"}) {
    std::vector<std::string> args = {cmd, "--from", "file://" + dir, "--parallelism", "16"};
    if (cmd == "show") args.push_back("small");
    Child child(args, dir + "/out", dir + "/err");
    const int code = child.Wait();
    const std::string err = ReadFile(dir + "/err");
    std::printf("%s over a 200 MB line: peak RSS %ld KiB\n", cmd.c_str(), child.max_rss_kib());
    EXPECT_EQ(code, 3) << err;
    EXPECT_NE(err.find(ArchiveKey("big-dlq", 1) + " line 1: line of"), std::string::npos) << err;
    EXPECT_NE(ReadFile(dir + "/out").find("small"), std::string::npos);
    EXPECT_LT(child.max_rss_kib(), kDocumentedBoundKib);
    // Far below it, in fact: the line is never held.
    EXPECT_LT(child.max_rss_kib(), 120 * 1024);
  }
  fs::remove_all(dir);
}

TEST(SearchCli, StaysWithinItsMemoryBoundOnGzipBombs) {
  const std::string dir = "/tmp/dlq-bombs-" + RandomHex(4);
  // Five objects of ~1 MiB, each 1 GiB decompressed: one endless line.
  const std::string bomb = RepeatedGzip(std::string(size_t{16} << 20, 'z'), 64);
  for (int i = 1; i <= 5; ++i) WriteObject(dir, ArchiveKey("big-dlq", i), bomb);
  WriteObject(dir, ArchiveKey("big-dlq", 6), GzipCompress(RecordLine("small", 10), 6).value());
  Child child({"search", "--from", "file://" + dir, "--parallelism", "16"}, dir + "/out", dir + "/err");
  const int code = child.Wait();
  const std::string err = ReadFile(dir + "/err");
  std::printf("search over five 1 GiB gzip bombs: peak RSS %ld KiB\n", child.max_rss_kib());
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(ReadFile(dir + "/out").find("small"), std::string::npos);
  for (int i = 1; i <= 5; ++i) EXPECT_NE(err.find(ArchiveKey("big-dlq", i) + " line 1"), std::string::npos) << err;
  EXPECT_LT(child.max_rss_kib(), kDocumentedBoundKib);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlq::it
