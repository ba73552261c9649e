// `dlq-archive run` end to end against moto: a short-retention DLQ with a few
// messages goes into ALARM, gets archived to S3, and the alarm returns to OK;
// /metrics passes promtool; SIGTERM stops the daemon with exit 0. And
// `dlq-archive check` flags a reference-like config as UNSAFE.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness.h"

namespace dlq::it {
namespace {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 0;
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DaemonMotoTest, AlarmArchivesShortRetentionDlqAndReturnsToOk) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("daemon");
  std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::string dlq_name = base + "-dlq";
  auto dlq = svc->sqs().CreateQueue(dlq_name, {{"MessageRetentionPeriod", "120"}});
  ASSERT_TRUE(dlq.ok()) << dlq.status().ToString();
  for (int i = 0; i < 5; ++i) {
    SendEntry e;
    e.id = std::to_string(i);
    e.body = "poison " + std::to_string(i);
    ASSERT_TRUE(svc->sqs().SendMessage(*dlq, e).ok());
  }

  int port = FreePort();
  ASSERT_GT(port, 0);
  std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  std::string config = dir + "/dlq-archive.yaml";
  WriteFile(config, "listen: 127.0.0.1:" + std::to_string(port) +
                        "\n"
                        "collection_interval: 1s\n"
                        "sweep_interval: 2s\n"
                        "defaults:\n"
                        "  destination: s3://" + bucket + "/dlq-archive\n"
                        "  visibility_timeout: 30s\n"
                        "  batch: { max_age: 1s }\n"
                        "groups:\n"
                        "  - name: it\n"
                        "    endpoint_url: " + moto.endpoint() + "\n"
                        "    queues: [" + dlq_name + "]\n"
                        "    alarms:\n"
                        "      expiry: { threshold: 30s, period: 2s }\n"
                        "      depth: { enabled: false }\n");
  auto check_config = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config);
  EXPECT_NE(check_config.out.find(dlq_name), std::string::npos) << check_config.out;

  RunShell(moto.ShellEnv() + "sh -c '" + DLQ_BINARY + " run --config " + config + " 2> " + dir + "/log & echo $! > " +
           dir + "/pid; wait $!; echo $? > " + dir + "/rc' > /dev/null 2>&1 &");
  std::string api = "curl -s --max-time 2 http://127.0.0.1:" + std::to_string(port);
  bool ok = false;
  std::string body;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  while (std::chrono::steady_clock::now() < deadline) {
    body = RunShell(api + "/api/queues", false).out;
    if (body.find("\"to\":\"ALARM\"") != std::string::npos &&
        body.find("\"from\":\"ALARM\",\"to\":\"OK\"") != std::string::npos &&
        body.find("\"visible\":0,\"not_visible\":0") != std::string::npos) {
      ok = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_TRUE(ok) << body << "\n--- log:\n" << ReadFile(dir + "/log");
  EXPECT_EQ(RunShell(api + "/readyz", false).out.rfind("ready", 0), 0u);

  ListObjectsV2Request req;
  req.prefix = "dlq-archive/" + dlq_name + "/";
  auto listed = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_FALSE(listed->objects.empty());

  auto metrics = RunShell(api + "/metrics > " + dir + "/metrics.txt && promtool check metrics < " + dir +
                          "/metrics.txt");
  EXPECT_EQ(metrics.exit_code, 0) << metrics.out;
  EXPECT_NE(ReadFile(dir + "/metrics.txt").find("dlq_archive_messages_archived_total{queue=\"" + dlq_name +
                                                  "\",region=\"us-east-1\"} 5"),
            std::string::npos);

  std::string pid = ReadFile(dir + "/pid");
  ASSERT_FALSE(pid.empty());
  RunShell("kill -TERM " + pid);
  std::string rc;
  for (int i = 0; i < 100 && rc.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rc = ReadFile(dir + "/rc");
  }
  EXPECT_EQ(rc, "0\n") << ReadFile(dir + "/log");
  EXPECT_NE(ReadFile(dir + "/log").find("\"event\":\"alarm_transition\""), std::string::npos);
}

TEST(DaemonMotoTest, CheckFlagsReferenceConfigUnsafe) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("refcheck");
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {{"MessageRetentionPeriod", "345600"}});
  ASSERT_TRUE(dlq.ok());
  auto attrs = svc->sqs().GetQueueAttributes(*dlq, {"QueueArn"});
  ASSERT_TRUE(attrs.ok());
  auto src = svc->sqs().CreateQueue(
      base + "-src", {{"MessageRetentionPeriod", "345600"},
                      {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + attrs->at("QueueArn") +
                                            "\",\"maxReceiveCount\":\"3\"}"}});
  ASSERT_TRUE(src.ok());
  std::string config = "/tmp/" + base + ".yaml";
  WriteFile(config, "defaults:\n"
                    "  destination: s3://" + base + "-archive/dlq-archive\n"
                    "  cloudwatch_age: true\n"
                    "  alarms:\n"
                    "    expiry: { threshold: 345000s, period: 5m }\n"
                    "groups:\n"
                    "  - name: reference\n"
                    "    endpoint_url: " + moto.endpoint() + "\n"
                    "    queues: [" + base + "-dlq]\n");
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(base + "-dlq: UNSAFE (margin -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("345000"), std::string::npos) << r.out;
  std::remove(config.c_str());
}

}  // namespace
}  // namespace dlq::it
