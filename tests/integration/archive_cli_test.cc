// `dlq-archive archive` as an operator meets it, on fauxqs: the destination
// is checked before anything is received, failures print one line (or one
// JSON document), queue ARNs work, a run that cannot finish says so with
// exit 4, and the progress line is never broken by a log line (under a
// pseudo-terminal from `script`). A proxy in the environment is used.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <regex>

#include "fault_proxy.h"
#include "harness.h"
#include "query/scan.h"
#include "s3/local_object_store.h"
#include "unit/loopback_http_server.h"

namespace dlq::it {
namespace {

std::string Archive(const StandIn& s, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " archive --endpoint-url " + s.endpoint() + " " + args;
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

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(ArchiveCli, MissingBucketFailsOnAnEmptyQueueBeforeReceiving) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("empty-dlq");
  MakeQueue(*svc, q, 0);
  auto r =
      RunShell(Archive(fauxqs, "--queue " + q + " --to s3://no-such-bucket-" + RandomHex(3) + "/x --progress never"));
  EXPECT_EQ(r.exit_code, 1) << r.out;  // a cron job must not report success
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
}

TEST(ArchiveCli, MissingBucketOnAFullQueueReceivesNothingAndSaysItOnce) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("full-dlq");
  std::string url = MakeQueue(*svc, q, 3);
  auto r =
      RunShell(Archive(fauxqs, "--queue " + q + " --to s3://no-such-bucket-" + RandomHex(3) + "/x --progress never"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(Count(r.out, "does not exist"), 1u) << r.out;
  // Nothing was received: the first receive now sees receive count 1.
  ReceiveOptions ro;
  ro.max_messages = 10;
  ro.visibility_timeout = 0;
  auto got = svc->sqs().ReceiveMessages(url, ro);
  ASSERT_TRUE(got.ok());
  ASSERT_FALSE(got->empty());
  for (const Message& m : *got) EXPECT_EQ(m.attributes.at("ApproximateReceiveCount"), "1");
}

TEST(ArchiveCli, MissingDirectoryIsAnErrorAndNothingIsCreated) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("dir-dlq");
  MakeQueue(*svc, q, 1);
  std::string dir = "/tmp/dlq-missing-" + RandomHex(4) + "/archive";
  auto r = RunShell(Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --progress never"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("mkdir -p"), std::string::npos) << r.out;
  struct stat st;
  EXPECT_NE(::stat(dir.c_str(), &st), 0) << "created " << dir;
  // A missing queue is reported before the destination is even looked at.
  auto missing = RunShell(Archive(fauxqs, "--queue nope-" + RandomHex(3) + " --to file://" + dir));
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("not found in region us-east-1"), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("account " + fauxqs.env.at("DLQ_STANDIN_ACCOUNT_ID")), std::string::npos) << missing.out;
  EXPECT_NE(::stat(dir.c_str(), &st), 0);
}

TEST(ArchiveCli, JsonOutputOnFailureIsOneDocumentWithTheErrorCode) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  std::string file = "/tmp/dlq-json-" + RandomHex(4) + ".json";
  auto r = RunShell(
      Archive(fauxqs, "--queue nope-" + RandomHex(3) + " --to file:///tmp --output json 2>/dev/null > " + file), false);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  auto jq = RunShell(
      "jq -e '.ok == false and .exit_code == 1 and .error.code == \"NotFound\" "
      "and (.error.message | contains(\"region us-east-1\"))' " +
      file);
  EXPECT_EQ(jq.exit_code, 0) << r.out << jq.out;
}

TEST(ArchiveCli, QueueArnIsAcceptedAndAWrongRegionArnIsExplained) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("arn-dlq");
  std::string url = MakeQueue(*svc, q, 4);
  auto arn = svc->sqs().GetQueueAttributes(url, {"QueueArn"});
  ASSERT_TRUE(arn.ok());
  std::string dir = "/tmp/dlq-arn-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  auto r = RunShell(Archive(fauxqs, "--queue " + arn->at("QueueArn") + " --to file://" + dir + " --progress never"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("archived 4, deleted 4"), std::string::npos) << r.out;
  std::string other = std::regex_replace(arn->at("QueueArn"), std::regex(":us-east-1:"), ":eu-west-1:");
  auto wrong = RunShell(Archive(fauxqs, "--queue " + other + " --to file://" + dir));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("--region eu-west-1"), std::string::npos) << wrong.out;
}

// A proxy variable is honoured: the default client is then libcurl, through
// the proxy, and NO_PROXY exempts hosts; a forced DLQ_HTTP_CLIENT=builtin
// goes direct (documented: it ignores proxies). http_proxy is lower case, as
// curl reads it for http:// endpoints.
TEST(ArchiveCli, AProxyVariableSendsTheRunThroughTheProxyUnlessExempted) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  auto proxy = FaultProxy::Start(fauxqs.endpoint());
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  std::string q = UniqueName("proxied-dlq");
  std::string url = MakeQueue(*svc, q, 3);
  std::string dir = "/tmp/dlq-proxied-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string via = "export http_proxy=" + (*proxy)->url() + "; ";

  auto r = RunShell(via + Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --progress never"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("archived 3, deleted 3"), std::string::npos) << r.out;
  FaultProxyStats through = (*proxy)->Stats();
  EXPECT_GE(through.Requests("ReceiveMessage"), 1u);
  EXPECT_EQ(through.absolute_form, through.requests) << "every call went through the proxy";

  for (const std::string& direct :
       {std::string("export NO_PROXY=127.0.0.1; "), std::string("export DLQ_HTTP_CLIENT=builtin; ")}) {
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(svc->sqs().SendMessage(url, SendEntry{.body = "again"}).ok());
    auto d = RunShell(via + direct + Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --progress never"));
    EXPECT_EQ(d.exit_code, 0) << direct << d.out;
    EXPECT_NE(d.out.find("archived 2, deleted 2"), std::string::npos) << direct << d.out;
    EXPECT_EQ((*proxy)->Stats().requests, through.requests) << direct << "went through the proxy";
  }
}

// A proxy that refuses (407 asking for credentials, or 403) gets one clear
// line naming what to fix, at once: the same answer would come on every
// retry. Both ways a proxy answers: to a plain-http request (http_proxy) and
// to the CONNECT of an https endpoint (https_proxy). Credentials in the proxy
// variable never appear in the output.
TEST(ArchiveCli, AProxyThatRefusesSaysWhatToFixAndDoesNotRetry) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  std::atomic<int> asked{0};
  std::atomic<int> status{407};
  LoopbackHttpServer proxy([&](const LoopbackHttpServer::Request&) {
    ++asked;
    LoopbackHttpServer::Reply reply;
    reply.status = status;
    reply.headers = {{"Proxy-Authenticate", "Basic realm=\"corp\""}};
    return reply;
  });
  const std::string proxy_url = "http://alice:pr0xy-s3cret@127.0.0.1:" + std::to_string(proxy.port());
  const std::string https_endpoint = "https://" + fauxqs.endpoint().substr(fauxqs.endpoint().find("://") + 3);
  struct Case {
    std::string variable, endpoint;
    int status;
    std::string expect;
  };
  for (const Case& c : {Case{"http_proxy", fauxqs.endpoint(), 407, "the proxy answered HTTP 407"},
                        Case{"https_proxy", https_endpoint, 407, "the proxy answered HTTP 407"},
                        Case{"https_proxy", https_endpoint, 403, "the proxy refused the connection with HTTP 403"}}) {
    asked = 0;
    status = c.status;
    auto r = RunShell(fauxqs.ShellEnv() + "export " + c.variable + "=" + proxy_url + "; " + DLQ_BINARY +
                      " archive --endpoint-url " + c.endpoint + " --queue any-dlq --to file:///tmp --progress never");
    EXPECT_EQ(r.exit_code, 1) << c.variable << " " << c.status << ": " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("NO_PROXY"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("pr0xy-s3cret"), std::string::npos) << r.out;
    EXPECT_EQ(asked, 1) << c.variable << " " << c.status << ": not retried";
  }
}

// A proxy that cannot be reached: curl's text names only its host and port,
// which reads like the endpoint's. The error says a proxy variable sent the
// call there (never its value: it may hold credentials), exit 1, and the
// messages are untouched: a direct run then archives them all.
TEST(ArchiveCli, AnUnreachableProxyIsNamedByItsVariableAndLosesNothing) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("noproxy-dlq");
  MakeQueue(*svc, q, 2);
  const std::string proxy = "http://alice:pr0xy-s3cret@127.0.0.1:" + std::to_string(RefusingLoopbackPort());
  std::string dir = "/tmp/dlq-noproxy-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string run = Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --progress never");

  auto r = RunShell("export http_proxy=" + proxy + "; " + run);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("through the proxy in http_proxy unless NO_PROXY exempts the host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DLQ_HTTP_CLIENT=builtin"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pr0xy-s3cret"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("alice"), std::string::npos) << r.out;

  auto direct = RunShell(run);
  EXPECT_EQ(direct.exit_code, 0) << direct.out;
  EXPECT_NE(direct.out.find("archived 2, deleted 2"), std::string::npos) << direct.out;
}

TEST(ArchiveCli, MessagesHeldByAnotherConsumerExitFourWithAHint) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("held-dlq");
  std::string url = MakeQueue(*svc, q, 6);
  ReceiveOptions other;
  other.max_messages = 2;
  other.visibility_timeout = 600;
  auto held = svc->sqs().ReceiveMessages(url, other);
  ASSERT_TRUE(held.ok());
  ASSERT_FALSE(held->empty());
  std::string dir = "/tmp/dlq-held-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  auto r =
      RunShell(Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --visibility-timeout 10s --progress never"));
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("another consumer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("archived " + std::to_string(6 - held->size())), std::string::npos) << r.out;
}

TEST(ArchiveCli, ProgressLineIsClearedBeforeEveryLogLineOnATerminal) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("pty-dlq");
  std::string url = MakeQueue(*svc, q, 0);
  for (int b = 0; b < 30; ++b) {
    std::vector<SendEntry> batch(10);
    for (int i = 0; i < 10; ++i) {
      batch[i].id = std::to_string(i);
      batch[i].body = std::string(200, 'x');
    }
    ASSERT_TRUE(svc->sqs().SendMessageBatch(url, batch).ok());
  }
  std::string dir = "/tmp/dlq-pty-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::string out_file = dir + ".typescript";
  // `script` gives the archiver a terminal; small batches make many log
  // lines (archive.object) while the progress line is drawn.
  std::string inner =
      Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --batch-max-messages 20 --progress always");
  auto r = RunShell("script -qec \"" + inner + "\" " + out_file + " >/dev/null; cat " + out_file);
  ASSERT_NE(r.out.find("archive.object"), std::string::npos) << r.out;
  ASSERT_NE(r.out.find("msg/s"), std::string::npos) << r.out;
  // Every log line starts at the beginning of a line: right after a newline
  // or after the clear-line sequence, never glued to a progress line.
  std::regex log_start(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (info|warn |error) )");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), log_start); it != std::sregex_iterator(); ++it) {
    size_t pos = static_cast<size_t>(it->position());
    if (pos == 0) continue;
    bool after_newline = r.out[pos - 1] == '\n';
    bool after_clear = pos >= 4 && r.out.compare(pos - 4, 4, "\r\033[K") == 0;
    EXPECT_TRUE(after_newline || after_clear) << "log line glued to: " << r.out.substr(pos >= 80 ? pos - 80 : 0, 100);
  }
}

}  // namespace
}  // namespace dlq::it

namespace dlq::it {
namespace {

TEST(ArchiveCli, OneMebibyteMessagesArchiveByteForByte) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("big-dlq");
  std::string url = MakeQueue(*svc, q, 0);
  std::map<std::string, std::string> sent;
  for (int i = 0; i < 3; ++i) {
    SendEntry e;
    e.body = std::string((1 << 20) - 64, static_cast<char>('a' + i));  // with the attribute: just under the 1 MiB limit
    e.body[10] = '"';                                                  // escaped in the JSON line
    e.body[20] = '\\';
    e.message_attributes["kind"] = {"String", "big", ""};
    auto m = svc->sqs().SendMessage(url, e);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    sent[m->message_id] = e.body;
  }
  std::string dir = "/tmp/dlq-big-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  auto r = RunShell(Archive(fauxqs, "--queue " + q + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  LocalObjectStore store(dir);
  std::map<std::string, std::string> archived;
  auto stats = ScanArchive(store, ParseDestination("file://" + dir).value(), ScanOptions{},
                           [&](const ArchiveRecord& rec, const RecordLocation&) {
                             archived[rec.message_id] = rec.body;
                             return true;
                           });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->complete());
  EXPECT_EQ(archived, sent);
}

// --concurrency is an upper bound: a standard queue's run starts with two
// receivers (a small drain never measures more), --fixed-concurrency uses
// them all; the JSON summary and the archive.done line say which.
TEST(ArchiveCli, ConcurrencyIsAnUpperBoundUnlessFixed) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  for (const bool fixed : {false, true}) {
    std::string q = UniqueName(fixed ? "fixed-dlq" : "governed-dlq");
    std::string url = MakeQueue(*svc, q, 25);
    std::string dir = "/tmp/dlq-conc-" + RandomHex(4);
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    auto r = RunShell(Archive(fauxqs, "--queue " + q + " --to file://" + dir +
                                          " --concurrency 8 --output json --progress never --log-level info" +
                                          (fixed ? " --fixed-concurrency" : "") + " 2>&1"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::string receivers = fixed ? "8" : "2";
    EXPECT_NE(r.out.find("\"receivers\":" + receivers + ","), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("receivers=" + receivers + " drained=true"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"archived\":25,"), std::string::npos) << r.out;
  }
}

// Receives that take long at a server that answers them side by side (real
// SQS: tens of milliseconds each; here 40 ms of proxy latency before fauxqs's
// replies): each doubling raises the rate, so the run climbs to every
// receiver and says so.
TEST(ArchiveCli, ReceiversClimbToTheMaximumWhenTheServerAnswersSideBySide) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("parallel-dlq");
  std::string url = MakeQueue(*svc, q, 0);
  for (int b = 0; b < 150; ++b) {
    std::vector<SendEntry> entries(10);
    for (int i = 0; i < 10; ++i) {
      entries[i].id = std::to_string(i);
      entries[i].body = "poison " + std::to_string(b * 10 + i);
    }
    auto sent = svc->sqs().SendMessageBatch(url, entries);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString();
    ASSERT_TRUE(sent->failed.empty());
  }
  FaultPlan plan;
  plan.delay = FaultRule::Always({"ReceiveMessage"});
  plan.latency = std::chrono::milliseconds(40);
  auto proxy = FaultProxy::Start(fauxqs.endpoint(), plan);
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  std::string dir = "/tmp/dlq-climb-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  auto r = RunShell(fauxqs.ShellEnv() + DLQ_BINARY + " archive --endpoint-url " + (*proxy)->url() + " --queue " + q +
                    " --to file://" + dir + " --concurrency 8 --output json --progress never --log-level info 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"archived\":1500,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"receivers\":8,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("archive.receivers"), std::string::npos) << "the level it settled on is logged:\n" << r.out;
  EXPECT_NE(r.out.find("receivers=8 max=8"), std::string::npos) << r.out;
}

TEST(RunCli, LogFlagsWinOverTheConfigFile) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  std::string dir = "/tmp/dlq-runlog-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::string config = dir + "/c.yaml";
  {
    std::ofstream f(config);
    f << "listen: 127.0.0.1:0\ncollection_interval: 1s\nlog: { level: info, format: text }\n"
         "defaults:\n  destination: file://"
      << dir
      << "\n"
         "groups:\n  - name: g\n    queues: [nothing-"
      << RandomHex(3) << "]\n    allow_empty: true\n";
  }
  // The config says text; the flag says json: every stderr line is JSON.
  auto r = RunShell(fauxqs.ShellEnv() + "timeout -s TERM 3 " + DLQ_BINARY + " --log-format json run --config " +
                    config + " 2>" + dir + "/err >/dev/null; jq -c . " + dir + "/err | head -3");
  EXPECT_NE(r.out.find("\"event\""), std::string::npos) << r.out;
  auto lines = RunShell("wc -l < " + dir + "/err; jq -e . " + dir + "/err >/dev/null && echo ALLJSON");
  EXPECT_NE(lines.out.find("ALLJSON"), std::string::npos) << lines.out << RunShell("cat " + dir + "/err").out;
}

}  // namespace
}  // namespace dlq::it
