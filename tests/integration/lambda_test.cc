// The packaged Lambda function as Lambda runs it: scripts/package-lambda's
// zip is unpacked into an empty directory and its `bootstrap` runs with a
// clean environment (env -i plus the Lambda and AWS variables only) against
// a fake Runtime API served by the test, archiving DLQs on fauxqs (over http,
// and over https through a TLS proxy: the package's own OpenSSL verifies the
// endpoint against AWS_CA_BUNDLE, or the host's bundle the bootstrap picks).
// Denied S3 and SQS calls run on moto-auth, as an assumed role (LambdaDenied).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <deque>
#include <mutex>
#include <regex>

#include "archive/gzip.h"
#include "archive/record.h"
#include "aws/http.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "harness.h"
#include "tls_proxy.h"
#include "unit/loopback_http_server.h"

namespace dlq::it {
namespace {

// Serves queued events on /next (each with its own deadline) and records the
// answers; once the events run out, /next answers 410 and the runtime exits.
class FakeRuntimeApi {
 public:
  struct Event {
    std::string body;
    std::chrono::milliseconds time_left{60000};
  };
  struct Answer {
    std::string request_id;
    std::string kind;  // "response" or "error"
    std::string body;
    std::string error_type;
  };

  explicit FakeRuntimeApi(std::vector<Event> events)
      : events_(events.begin(), events.end()),
        server_([this](const LoopbackHttpServer::Request& r) { return Handle(r); }) {}

  std::string api() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::vector<Answer> answers() const {
    std::lock_guard lock(mu_);
    return answers_;
  }

 private:
  LoopbackHttpServer::Reply Handle(const LoopbackHttpServer::Request& r) {
    std::lock_guard lock(mu_);
    LoopbackHttpServer::Reply reply;
    if (r.method == "GET" && r.target == "/2018-06-01/runtime/invocation/next") {
      if (events_.empty()) {
        reply.status = 410;
        return reply;
      }
      Event ev = events_.front();
      events_.pop_front();
      std::string id = "req-" + std::to_string(++served_);
      int64_t deadline = ToUnixMillis(std::chrono::system_clock::now()) + ev.time_left.count();
      reply.headers = {{"Lambda-Runtime-Aws-Request-Id", id},
                       {"Lambda-Runtime-Deadline-Ms", std::to_string(deadline)},
                       {"Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:dlq"},
                       {"Content-Type", "application/json"}};
      reply.body = ev.body;
      return reply;
    }
    const std::string prefix = "/2018-06-01/runtime/invocation/";
    if (r.method == "POST" && r.target.rfind(prefix, 0) == 0) {
      std::string rest = r.target.substr(prefix.size());
      auto slash = rest.find('/');
      Answer a;
      a.request_id = rest.substr(0, slash);
      a.kind = rest.substr(slash + 1);
      a.body = r.body;
      if (const std::string* t = FindHeader(r.headers, "Lambda-Runtime-Function-Error-Type")) a.error_type = *t;
      answers_.push_back(a);
      reply.status = 202;
      return reply;
    }
    reply.status = 404;
    return reply;
  }

  mutable std::mutex mu_;
  std::deque<Event> events_;
  int served_ = 0;
  std::vector<Answer> answers_;
  LoopbackHttpServer server_;
};

// Packages the binary under test once and unpacks the zip into an empty dir.
const std::string& UnpackedFunction() {
  static const std::string dir = [] {
    std::string tmp = RunShell("mktemp -d").out;
    tmp.erase(tmp.find_last_not_of('\n') + 1);
    auto pkg = RunShell("bash " + RepoRoot() + "/scripts/package-lambda " + DLQ_LAMBDA_BINARY);
    EXPECT_EQ(pkg.exit_code, 0) << pkg.out;
    std::string zip = RepoRoot() + "/dist/dlq-archive-lambda-x86_64.zip";
    auto unzip = RunShell("cd " + tmp + " && unzip -q " + zip);
    EXPECT_EQ(unzip.exit_code, 0) << unzip.out;
    return tmp;
  }();
  return dir;
}

std::string MakeQueue(AwsServices& svc, const std::string& name, int messages) {
  auto url = svc.sqs().CreateQueue(name, {});
  EXPECT_TRUE(url.ok()) << url.status().ToString();
  for (int i = 0; i < messages; i += 10) {
    std::vector<SendEntry> batch;
    for (int j = i; j < std::min(messages, i + 10); ++j) {
      SendEntry e;
      e.id = std::to_string(j);
      e.body = name + " poison " + std::to_string(j);
      batch.push_back(e);
    }
    auto r = svc.sqs().SendMessageBatch(*url, batch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  return *url;
}

int64_t Depth(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  if (!a.ok()) return -1;
  return std::stoll((*a)["ApproximateNumberOfMessages"]) + std::stoll((*a)["ApproximateNumberOfMessagesNotVisible"]);
}

// Runs the unpacked bootstrap with only the Lambda and AWS variables set.
CommandResult RunBootstrap(const StandIn& s, const FakeRuntimeApi& api, const std::string& extra_env) {
  std::string env = "env -i PATH=/usr/bin:/bin AWS_LAMBDA_RUNTIME_API=" + api.api() +
                    " AWS_REGION=us-east-1 AWS_ENDPOINT_URL=" + s.endpoint() +
                    " AWS_ACCESS_KEY_ID=" + s.env.at("AWS_ACCESS_KEY_ID") +
                    " AWS_SECRET_ACCESS_KEY=" + s.env.at("AWS_SECRET_ACCESS_KEY") +
                    " AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512 " + extra_env;
  return RunShell("cd " + UnpackedFunction() + " && " + env + " ./bootstrap");
}

std::string AlarmAction(const std::string& queue) {
  return R"({"source":"aws.cloudwatch","alarmArn":"arn:aws:cloudwatch:us-east-1:000000000000:alarm:a","accountId":"000000000000","region":"us-east-1","alarmData":{"alarmName":"a","state":{"value":"ALARM"},"configuration":{"metrics":[{"id":"m1","metricStat":{"metric":{"namespace":"AWS/SQS","name":"ApproximateNumberOfMessagesVisible","dimensions":{"QueueName":")" +
         queue + R"("}},"period":60,"stat":"Maximum"},"returnData":true}]}}})";
}

std::string SnsAlarm(const std::string& queue) {
  return R"({"Records":[{"EventSource":"aws:sns","Sns":{"Type":"Notification","Message":"{\"AlarmName\":\"b\",\"NewStateValue\":\"ALARM\",\"Trigger\":{\"Namespace\":\"AWS/SQS\",\"Dimensions\":[{\"value\":\")" +
         queue + R"(\",\"name\":\"QueueName\"}]}}"}}]})";
}

std::string EventBridgeAlarm(const std::string& queue) {
  return R"({"version":"0","detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":{"alarmName":"c","state":{"value":"ALARM"},"configuration":{"metrics":[{"id":"m1","metricStat":{"metric":{"namespace":"AWS/SQS","name":"ApproximateAgeOfOldestMessage","dimensions":{"QueueName":")" +
         queue + R"("}}},"returnData":true}]}}})";
}

constexpr const char* kSchedule =
    R"({"version":"0","detail-type":"Scheduled Event","source":"aws.events","resources":["arn:aws:events:us-east-1:000000000000:rule/sweep"],"detail":{}})";

TEST(LambdaPackage, BootstrapServesEveryEventKindFromACleanEnvironment) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string bucket = UniqueName("lambda-archive");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::vector<std::string> names, urls;
  for (const char* kind : {"action", "sns", "eb", "sched", "direct"}) {
    names.push_back(UniqueName(std::string("lambda-") + kind + "-dlq"));
    urls.push_back(MakeQueue(*svc, names.back(), 25));
  }
  FakeRuntimeApi api({{AlarmAction(names[0])},
                      {SnsAlarm(names[1])},
                      {EventBridgeAlarm(names[2])},
                      {kSchedule},
                      {R"({"queues":[")" + names[4] + R"("]})"},
                      {R"({"queues":[)"},
                      {R"({"hello":"world"})"}});
  auto run =
      RunBootstrap(fauxqs, api, "DLQ_ARCHIVE_DESTINATION=s3://" + bucket + "/lambda DLQ_ARCHIVE_QUEUES=" + names[3]);
  // The fake API ends the run with a 410 on /next: the runtime exits 1.
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("next invocation returned HTTP 410"), std::string::npos) << run.out;

  auto answers = api.answers();
  ASSERT_EQ(answers.size(), 7u) << run.out;
  const char* kinds[] = {"\"event\":\"alarm\"", "\"event\":\"alarm_sns\"", "\"event\":\"alarm_eventbridge\"",
                         "\"event\":\"schedule\"", "\"event\":\"direct\""};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(answers[i].kind, "response") << answers[i].body;
    EXPECT_NE(answers[i].body.find(kinds[i]), std::string::npos) << answers[i].body;
    EXPECT_NE(answers[i].body.find("\"queue\":\"" + names[i] + "\",\"result\":\"done\",\"archived\":25,\"deleted\":25"),
              std::string::npos)
        << answers[i].body;
    EXPECT_NE(answers[i].body.find("\"complete\":true"), std::string::npos) << answers[i].body;
    EXPECT_EQ(Depth(*svc, urls[i]), 0) << names[i];
    // One EMF line per queue on stdout.
    EXPECT_NE(run.out.find("\"Queue\":\"" + names[i] + "\",\"Archived\":25,\"Failed\":0"), std::string::npos)
        << run.out;
  }
  EXPECT_EQ(answers[5].kind, "error");
  EXPECT_EQ(answers[5].error_type, "DlqArchive.InvalidEvent");
  EXPECT_NE(answers[5].body.find("not valid JSON"), std::string::npos) << answers[5].body;
  EXPECT_EQ(answers[6].kind, "error");
  EXPECT_NE(answers[6].body.find("looked for"), std::string::npos) << answers[6].body;

  ListObjectsV2Request req;
  req.prefix = "lambda/";
  auto listed = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_GE(listed->objects.size(), 5u);
}

TEST(LambdaPackage, ShortDeadlineStopsAndReleases) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string bucket = UniqueName("lambda-deadline");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::string name = UniqueName("lambda-deadline-dlq");
  constexpr int kMessages = 5000;
  std::string url = MakeQueue(*svc, name, kMessages);
  // 600 ms left with a 1 s margin: the margin becomes half the time left, so
  // receiving stops ~300 ms in, long before 5000 messages are received. No
  // batch seals on its own (count and age limits are far away), so what was
  // received goes back to the queue.
  FakeRuntimeApi api({{R"({"queues":[")" + name + R"("]})", std::chrono::milliseconds(600)}});
  auto run = RunBootstrap(fauxqs, api,
                          "DLQ_ARCHIVE_DESTINATION=s3://" + bucket +
                              "/d DLQ_ARCHIVE_DEADLINE_MARGIN=1s DLQ_ARCHIVE_BATCH_MAX_AGE=1h "
                              "DLQ_ARCHIVE_BATCH_MAX_MESSAGES=100000");
  auto answers = api.answers();
  ASSERT_EQ(answers.size(), 1u) << run.out;
  const std::string& body = answers[0].body;
  EXPECT_EQ(answers[0].kind, "response") << body;
  EXPECT_NE(body.find("\"complete\":false"), std::string::npos) << body;
  // No AWS_LAMBDA_FUNCTION_NAME: no self-invocation, the schedule follows up.
  EXPECT_NE(body.find("\"follow_up\":\"schedule\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"result\":\"stopped\""), std::string::npos) << body;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(body, m, std::regex(R"re("deleted":(\d+),"released":(\d+))re"))) << body;
  int deleted = std::stoi(m[1]);
  EXPECT_LT(deleted, kMessages);
  EXPECT_GT(std::stoi(m[2]), 0) << "nothing was received before the stop: " << body;
  // Nothing lost and nothing left invisible: every message not deleted is
  // visible in the queue again right away.
  auto attrs =
      svc->sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  ASSERT_TRUE(attrs.ok());
  EXPECT_EQ((*attrs)["ApproximateNumberOfMessages"], std::to_string(kMessages - deleted)) << body;
  EXPECT_EQ((*attrs)["ApproximateNumberOfMessagesNotVisible"], "0") << body;
}

// The package's https path end to end: its statically linked OpenSSL
// handshakes with a TLS proxy in front of fauxqs, verifying the proxy's
// certificate against AWS_CA_BUNDLE, and archives through it. Without that
// bundle (the bootstrap then picks the host's, which does not hold the test
// certificate) every call is refused before anything is received: nothing
// moves.
TEST(LambdaPackage, ArchivesOverHttpsAndRefusesAnUntrustedEndpoint) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dir = RunShell("mktemp -d").out;
  dir.erase(dir.find_last_not_of('\n') + 1);
  auto cert = RunShell(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem");
  ASSERT_EQ(cert.exit_code, 0) << cert.out;
  auto backend = ParseUrl(fauxqs.endpoint());
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  TlsProxy proxy(dir + "/cert.pem", dir + "/key.pem", backend->host, backend->port);
  const std::string https = "https://127.0.0.1:" + std::to_string(proxy.port());

  std::string bucket = UniqueName("lambda-tls");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::string name = UniqueName("lambda-tls-dlq");
  std::string url = MakeQueue(*svc, name, 25);

  FakeRuntimeApi untrusted_api({{R"({"queues":[")" + name + R"("]})"}});
  auto untrusted = RunBootstrap(fauxqs, untrusted_api,
                                "AWS_ENDPOINT_URL=" + https + " DLQ_ARCHIVE_DESTINATION=s3://" + bucket + "/tls");
  ASSERT_EQ(untrusted_api.answers().size(), 1u) << untrusted.out;
  const auto refused = untrusted_api.answers()[0];
  EXPECT_EQ(refused.kind, "error") << refused.body;
  EXPECT_EQ(refused.error_type, "DlqArchive.QueueFailed") << refused.body;
  EXPECT_NE(refused.body.find("peer certificate not verified"), std::string::npos) << refused.body;
  EXPECT_GT(proxy.failed_handshakes(), 0);
  EXPECT_EQ(proxy.handshakes(), 0);
  EXPECT_EQ(Depth(*svc, url), 25) << "nothing may move over an unverified connection";

  FakeRuntimeApi api({{R"({"queues":[")" + name + R"("]})"}});
  auto run = RunBootstrap(fauxqs, api,
                          "AWS_ENDPOINT_URL=" + https + " AWS_CA_BUNDLE=" + dir +
                              "/cert.pem DLQ_ARCHIVE_DESTINATION=s3://" + bucket + "/tls");
  auto answers = api.answers();
  ASSERT_EQ(answers.size(), 1u) << run.out;
  EXPECT_EQ(answers[0].kind, "response") << answers[0].body;
  EXPECT_NE(answers[0].body.find("\"queue\":\"" + name + "\",\"result\":\"done\",\"archived\":25,\"deleted\":25"),
            std::string::npos)
      << answers[0].body << "\n"
      << run.out;
  EXPECT_GT(proxy.handshakes(), 0);
  EXPECT_EQ(Depth(*svc, url), 0);
  ListObjectsV2Request req;
  req.prefix = "tls/";
  auto listed = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_GE(listed->objects.size(), 1u);
  RunShell("rm -rf " + dir);
}

// Denials inside the packaged function, on moto-auth (SigV4 checked, IAM
// policies enforced): the function runs with temporary credentials of a role
// that may do everything but the denied actions, as Lambda injects them
// (key, secret and session token).
class LambdaDenied : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LoadStandIn("moto-auth", moto_)) {
      if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "stand-in moto-auth is not running";
      GTEST_SKIP() << "stand-in moto-auth not running (scripts/stand-ins start moto-auth)";
    }
    admin_ = Services(moto_);
    ASSERT_TRUE(admin_);
    name_ = UniqueName("lambda-denied-dlq");
    url_ = MakeQueue(*admin_, name_, kMessages);
    bucket_ = UniqueName("lambda-denied");
    ASSERT_TRUE(admin_->s3_for(bucket_).CreateBucket(bucket_).ok());
  }

  void TearDown() override {
    if (admin_ && !url_.empty()) (void)admin_->sqs().DeleteQueue(url_);
  }

  // Runs the bootstrap for one direct invoke of the queue as a role denied
  // `deny` (IAM actions, space-separated); returns the one answer.
  FakeRuntimeApi::Answer InvokeDenied(const std::string& deny) {
    std::string args;
    for (std::string_view action : Split(deny, ' ')) args += " --deny " + std::string(action);
    auto creds = RunShell(moto_.ShellEnv() + "/usr/bin/python3 " + RepoRoot() +
                              "/tests/integration/denied_role.py --endpoint-url " + moto_.endpoint() + " --role " +
                              UniqueName("dlq-lambda-denied") + args,
                          /*merge_stderr=*/false);
    auto parts = Split(Trim(creds.out), ' ');
    EXPECT_EQ(creds.exit_code, 0) << creds.out;
    EXPECT_EQ(parts.size(), 3u) << creds.out;
    if (parts.size() != 3) return {};
    StandIn role = moto_;
    role.env["AWS_ACCESS_KEY_ID"] = std::string(parts[0]);
    role.env["AWS_SECRET_ACCESS_KEY"] = secret_ = std::string(parts[1]);
    token_ = std::string(parts[2]);
    FakeRuntimeApi api({{R"({"queues":[")" + name_ + R"("]})"}});
    run_ =
        RunBootstrap(role, api, "AWS_SESSION_TOKEN=" + token_ + " DLQ_ARCHIVE_DESTINATION=s3://" + bucket_ + "/lambda");
    auto answers = api.answers();
    EXPECT_EQ(answers.size(), 1u) << run_.out;
    return answers.empty() ? FakeRuntimeApi::Answer{} : answers[0];
  }

  // The answer and the process output hold neither the secret key nor the session token.
  void ExpectNoSecrets(const FakeRuntimeApi::Answer& a) {
    ASSERT_FALSE(secret_.empty());
    ASSERT_FALSE(token_.empty());
    for (const std::string& text : {a.body, run_.out}) {
      EXPECT_EQ(text.find(secret_), std::string::npos) << "secret key leaked: " << text;
      EXPECT_EQ(text.find(token_), std::string::npos) << "session token leaked: " << text;
      // A prefix is enough to give a token away in a truncated log.
      EXPECT_EQ(text.find(token_.substr(0, 24)), std::string::npos) << "session token leaked: " << text;
    }
  }

  // Message ids in the bucket's objects (listed without a prefix: moto-auth
  // rejects the signature of a ListObjectsV2 whose prefix holds a '/').
  std::vector<std::string> ArchivedIds() {
    std::vector<std::string> ids;
    S3Client& s3 = admin_->s3_for(bucket_);
    auto listed = s3.ListObjectsV2(bucket_, {});
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    if (!listed.ok()) return ids;
    for (const auto& object : listed->objects) {
      auto gz = s3.GetObject(bucket_, object.key, std::nullopt);
      EXPECT_TRUE(gz.ok()) << object.key << ": " << gz.status().ToString();
      if (!gz.ok()) continue;
      auto text = GzipDecompress(*gz, 64 << 20);
      EXPECT_TRUE(text.ok()) << object.key << ": " << text.status().ToString();
      if (!text.ok()) continue;
      for (std::string_view line : Split(*text, '\n')) {
        if (line.empty()) continue;
        auto record = ParseRecordJson(line);
        EXPECT_TRUE(record.ok()) << object.key << ": " << record.status().ToString();
        if (record.ok()) ids.push_back(record->message_id);
      }
    }
    return ids;
  }

  // The queue summary of a DlqArchive.QueueFailed answer to the first
  // invocation, posted to /runtime/invocation/req-1/error: its body is the
  // Runtime API's {"errorMessage","errorType"}, the message the summary JSON.
  struct QueueSummary {
    std::string result, error;
    int64_t archived = -1, deleted = -1, released = -1;
  };
  static QueueSummary QueueFailedSummary(const FakeRuntimeApi::Answer& a) {
    EXPECT_EQ(a.request_id, "req-1");
    EXPECT_EQ(a.kind, "error") << a.body;
    EXPECT_EQ(a.error_type, "DlqArchive.QueueFailed") << a.body;
    QueueSummary q;
    simdjson::dom::parser outer, inner;
    simdjson::dom::element doc, summary;
    simdjson::dom::array queues;
    std::string_view type, message;
    if (outer.parse(simdjson::padded_string(a.body)).get(doc) != simdjson::SUCCESS ||
        doc["errorType"].get(type) != simdjson::SUCCESS || doc["errorMessage"].get(message) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not a Runtime API error body: " << a.body;
      return q;
    }
    EXPECT_EQ(type, a.error_type) << "errorType differs from Lambda-Runtime-Function-Error-Type";
    if (inner.parse(simdjson::padded_string(message)).get(summary) != simdjson::SUCCESS ||
        summary["queues"].get(queues) != simdjson::SUCCESS || queues.size() != 1) {
      ADD_FAILURE() << "errorMessage is not a one-queue summary: " << message;
      return q;
    }
    simdjson::dom::element queue = queues.at(0);
    std::string_view result, error;
    if (queue["result"].get(result) == simdjson::SUCCESS) q.result = result;
    if (queue["error"].get(error) == simdjson::SUCCESS) q.error = error;
    auto count = [&](const char* field) {
      int64_t n = -1;
      return queue[field].get(n) == simdjson::SUCCESS ? n : -1;
    };
    q.archived = count("archived");
    q.deleted = count("deleted");
    q.released = count("released");
    return q;
  }

  std::map<std::string, std::string> Counts() {
    auto a = admin_->sqs().GetQueueAttributes(url_,
                                              {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : std::map<std::string, std::string>{};
  }

  static constexpr int kMessages = 25;
  StandIn moto_;
  std::unique_ptr<AwsServices> admin_;
  std::string name_, url_, bucket_;
  std::string secret_, token_;
  CommandResult run_;
};

TEST_F(LambdaDenied, PutObjectDeniedIsAnInvocationErrorNamingActionAndBucketAndReleasesEverything) {
  FakeRuntimeApi::Answer a = InvokeDenied("s3:PutObject");
  QueueSummary q = QueueFailedSummary(a);
  EXPECT_EQ(q.result, "failed") << a.body;
  EXPECT_NE(q.error.find("s3:PutObject failed with AccessDenied on s3://" + bucket_ + "/"), std::string::npos)
      << q.error;
  EXPECT_EQ(q.archived, 0) << a.body;
  EXPECT_EQ(q.deleted, 0) << a.body;
  // Every delivery released: moto now and then hands one message to two
  // concurrent receives, so that can be more than the messages.
  EXPECT_GE(q.released, kMessages) << a.body;
  ExpectNoSecrets(a);
  // Nothing stored, nothing deleted, and every message visible again at once.
  EXPECT_TRUE(ArchivedIds().empty());
  auto counts = Counts();
  EXPECT_EQ(counts["ApproximateNumberOfMessages"], std::to_string(kMessages)) << a.body;
  EXPECT_EQ(counts["ApproximateNumberOfMessagesNotVisible"], "0") << a.body;
}

TEST_F(LambdaDenied, DeleteDeniedIsAnInvocationErrorAndLeavesTheArchivedMessagesInTheQueue) {
  // moto authorizes DeleteMessageBatch as its own action; AWS as sqs:DeleteMessage.
  FakeRuntimeApi::Answer a = InvokeDenied("sqs:DeleteMessage sqs:DeleteMessageBatch");
  QueueSummary q = QueueFailedSummary(a);
  EXPECT_EQ(q.result, "failed") << a.body;
  EXPECT_NE(q.error.find("sqs:DeleteMessage failed on " + name_), std::string::npos) << q.error;
  EXPECT_NE(q.error.find("AccessDenied"), std::string::npos) << q.error;
  // At-least-once (README "Exit codes", exit 3): what was archived stays in
  // the DLQ and is archived again by the next run.
  EXPECT_NE(q.error.find("will be archived again"), std::string::npos) << q.error;
  EXPECT_EQ(q.deleted, 0) << a.body;
  ExpectNoSecrets(a);
  // The summary counts what is in the bucket (a message moto delivered
  // twice is archived twice: at-least-once).
  std::vector<std::string> ids = ArchivedIds();
  EXPECT_GT(q.archived, 0) << a.body;
  EXPECT_EQ(static_cast<int64_t>(ids.size()), q.archived) << a.body;
  // Nothing left the queue: the archived messages stay (in flight until
  // their visibility timeout), the rest is visible.
  auto counts = Counts();
  EXPECT_EQ(
      std::stoll(counts["ApproximateNumberOfMessages"]) + std::stoll(counts["ApproximateNumberOfMessagesNotVisible"]),
      kMessages)
      << a.body;
}

}  // namespace
}  // namespace dlq::it
