// The dlq-archive binary as a user meets it: exit codes and messages for
// usage errors, help, unknown commands and regions, and doctor on a broken
// setup. Most cases need no stand-in: they run the binary in a clean
// environment (env -i) with a temporary HOME and config files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace dlq::it {
namespace {

class CliTest : public ::testing::Test {
 protected:
  CliTest() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-cli-XXXXXX").string();
    home_ = mkdtemp(tmpl.data());
  }
  ~CliTest() override {
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }

  // Runs the binary with only the given variables set (plus PATH and HOME).
  CommandResult Run(const std::string& args, const std::string& env = "", bool merge_stderr = true) {
    return RunShell("env -i PATH=/usr/bin:/bin HOME=" + home_ + " AWS_EC2_METADATA_DISABLED=true " + env + " " +
                        DLQ_BINARY + " " + args,
                    merge_stderr);
  }

  void WriteFile(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(home_ + "/" + name).parent_path());
    std::ofstream(home_ + "/" + name) << text;
  }

  std::string home_;
};

struct UsageCase {
  std::string args;
  std::string named;  // the flag or word the message must name
};

TEST_F(CliTest, EveryUsageErrorExitsTwoAndNamesTheOffendingArgument) {
  const std::string to = " --queue q --to file:///tmp/dlq-cli-test";
  std::vector<UsageCase> cases = {
      {"archive --bogus", "--bogus"},  // before "--to is required"
      {"archive" + to + " --batch-max-byte 3", "did you mean --batch-max-bytes?"},
      {"archive" + to + " extra", "'extra'"},
      {"archive" + to + " --gzip-level abc", "--gzip-level"},
      {"archive" + to + " --gzip-level 13", "--gzip-level"},
      {"archive" + to + " --batch-max-bytes 0", "--batch-max-bytes"},
      {"archive" + to + " --batch-max-bytes 8mb", "--batch-max-bytes"},
      {"archive" + to + " --batch-max-messages 0", "--batch-max-messages"},
      {"archive" + to + " --concurrency 0", "--concurrency"},
      {"archive" + to + " --concurrency -2", "--concurrency"},
      {"archive" + to + " --max-messages -1", "--max-messages"},
      {"archive" + to + " --older-than soon", "--older-than"},
      {"archive" + to + " --all --older-than 2d", "--all"},
      {"archive" + to + " --output yaml", "--output"},
      {"archive --queue q", "--to is required"},
      {"archive --to", "--to"},
      {"--connect-timeout -1 archive" + to, "--connect-timeout"},
      {"--connect-timeout abc archive" + to, "--connect-timeout"},
      {"--read-timeout 0 archive" + to, "--read-timeout"},
      {"--max-attempts 0 archive" + to, "--max-attempts"},
      {"--log-level loud archive" + to, "--log-level"},
      {"run", "--config is required"},
      {"check --config x.yaml --bogus", "--bogus"},
      {"run --config x.yaml --listen-port 70000", "--listen-port"},
      {"doctor --queu q", "did you mean --queue?"},
      {"doctor --output xml", "--output"},
      {"archive doctor", "'doctor'"},
      {"", "name a command"},
  };
  for (const auto& c : cases) {
    auto r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST_F(CliTest, UnknownCommandIsNamedAndTheCommandsAreListed) {
  auto r = Run("foo");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("'foo' is not a dlq-archive command"), std::string::npos) << r.out;
  for (const char* cmd : {"archive", "doctor", "run", "check", "help"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + cmd + " "), std::string::npos) << cmd << "\n" << r.out;
  }
  auto typo = Run("--region eu-west-1 archvie --to file:///tmp/x");
  EXPECT_EQ(typo.exit_code, 2) << typo.out;
  EXPECT_NE(typo.out.find("did you mean 'archive'?"), std::string::npos) << typo.out;
  EXPECT_EQ(Run("help foo").exit_code, 2);
}

TEST_F(CliTest, HelpArchiveAndArchiveHelpPrintTheArchiveOptionsAndExitCodes) {
  for (const char* args : {"help archive", "archive --help", "archive -h"}) {
    auto r = Run(args, "", /*merge_stderr=*/false);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("Usage: dlq-archive archive"), std::string::npos) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("--batch-max-bytes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Exit codes:"), std::string::npos) << r.out;
    for (const char* code : {"  0 ", "  1 ", "  2 ", "  3 ", "  4 ", "  130 "}) {
      EXPECT_NE(r.out.find(code), std::string::npos) << code << "\n" << r.out;
    }
  }
  for (const char* args : {"--help", "help", "doctor --help", "help doctor"}) {
    auto r = Run(args, "", false);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("Usage: dlq-archive"), std::string::npos) << args << "\n" << r.out;
  }
  auto top = Run("help", "", false);
  EXPECT_NE(top.out.find("archive"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("--region"), std::string::npos) << top.out;
}

TEST_F(CliTest, UnknownRegionIsRejectedWithTheClosestSuggestion) {
  const std::string archive = "archive --queue q --to file:///tmp/dlq-cli-test";
  auto flag = Run("--region us-est-1 " + archive, "AWS_ACCESS_KEY_ID=AKIAEXAMPLE000000001 AWS_SECRET_ACCESS_KEY=x");
  EXPECT_EQ(flag.exit_code, 2) << flag.out;
  EXPECT_NE(flag.out.find("unknown region 'us-est-1' (from --region): did you mean 'us-east-1'?"), std::string::npos)
      << flag.out;
  auto env = Run(archive, "AWS_REGION=eu-wst-1");
  EXPECT_EQ(env.exit_code, 1) << env.out;
  EXPECT_NE(env.out.find("did you mean 'eu-west-1'?"), std::string::npos) << env.out;
}

TEST_F(CliTest, UnknownHttpClientIsAUsageErrorForArchiveAndTheDaemon) {
  const std::string creds = "AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=AKIAEXAMPLE000000001 AWS_SECRET_ACCESS_KEY=x ";
  auto archive = Run("archive --queue q --to file:///tmp/dlq-cli-test", creds + "DLQ_HTTP_CLIENT=socket");
  EXPECT_EQ(archive.exit_code, 2) << archive.out;
  EXPECT_NE(archive.out.find("DLQ_HTTP_CLIENT='socket' is not an HTTP client: use curl or builtin"), std::string::npos)
      << archive.out;
  WriteFile("monitor.yaml", "groups:\n  - name: g\n    queues: [q]\n    destination: file:///tmp/dlq-cli-test\n");
  auto daemon = Run("run --config " + home_ + "/monitor.yaml", creds + "DLQ_HTTP_CLIENT=Curl");
  EXPECT_EQ(daemon.exit_code, 2) << daemon.out;
  EXPECT_NE(daemon.out.find("DLQ_HTTP_CLIENT='Curl' is not an HTTP client"), std::string::npos) << daemon.out;
}

TEST_F(CliTest, DoctorWithoutARegionPrintsEveryCheck) {
  auto r = Run("doctor", "AWS_ACCESS_KEY_ID=AKIAEXAMPLE000000001 AWS_SECRET_ACCESS_KEY=never-printed");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  for (const char* check :
       {"config", "profile", "region", "endpoints", "credentials", "identity", "sqs", "queue", "bucket"}) {
    EXPECT_NE(r.out.find(std::string("] ") + check + " "), std::string::npos) << check << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("[FAIL] region       no region"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[ OK ] credentials  AKIA"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("never-printed"), std::string::npos) << r.out;

  auto j = Run("doctor --output json", "", /*merge_stderr=*/false);
  EXPECT_EQ(j.exit_code, 1) << j.out;
  EXPECT_EQ(j.out.rfind("{\"ok\":false,\"checks\":[", 0), 0u) << j.out;
  EXPECT_NE(j.out.find("{\"name\":\"region\",\"status\":\"fail\",\"detail\":\"no region"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("{\"name\":\"bucket\",\"status\":\"skip\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"error\":{\"code\":\"InvalidArgument\",\"exit_code\":1"), std::string::npos) << j.out;
}

TEST_F(CliTest, DoctorWithAMisspeltProfileSuggestsTheClosestOne) {
  WriteFile(".aws/config", "[default]\nregion = us-east-1\n[profile prod-eu]\nregion = eu-west-1\n[profile dev]\n");
  WriteFile(".aws/credentials", "[prod-eu]\naws_access_key_id = AKIAEXAMPLE000000001\naws_secret_access_key = s\n");
  auto r = Run("--profile prod-ue doctor");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("[FAIL] profile      profile 'prod-ue' not found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean 'prod-eu'?"), std::string::npos) << r.out;
  for (const char* check : {"config", "region", "endpoints", "credentials", "identity", "sqs", "queue", "bucket"}) {
    EXPECT_NE(r.out.find(std::string("] ") + check + " "), std::string::npos) << check << "\n" << r.out;
  }

  auto j = Run("doctor --output json", "AWS_PROFILE=prod-ue", /*merge_stderr=*/false);
  EXPECT_EQ(j.exit_code, 1) << j.out;
  EXPECT_NE(j.out.find("{\"name\":\"profile\",\"status\":\"fail\",\"detail\":\"profile 'prod-ue' not found"),
            std::string::npos)
      << j.out;
  EXPECT_NE(j.out.find("\"code\":\"NotFound\""), std::string::npos) << j.out;
}

TEST_F(CliTest, DoctorUsageErrorWithJsonOutputPrintsAJsonDocument) {
  auto r = Run("doctor --output json --bogus", "", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out,
            "{\"ok\":false,\"error\":{\"code\":\"InvalidArgument\",\"exit_code\":2,\"message\":\"doctor: unknown "
            "option --bogus\"}}\n");
}

// doc/iam-policy.json is what users paste into IAM: well-formed, every
// statement complete, and it grants the calls the commands make.
TEST(IamPolicyTest, IsWellFormedAndCoversTheCommands) {
  std::string policy = RepoRoot() + "/doc/iam-policy.json";
  auto r = RunShell(
      "jq -e '.Version == \"2012-10-17\" and (.Statement | length > 0) and "
      "all(.Statement[]; has(\"Sid\") and .Effect == \"Allow\" and has(\"Action\") and "
      "has(\"Resource\"))' " +
      policy);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto actions = RunShell("jq -r '[.Statement[].Action] | flatten | unique | .[]' " + policy);
  ASSERT_EQ(actions.exit_code, 0) << actions.out;
  for (const char* a :
       {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility", "sqs:ListQueues", "sqs:ListDeadLetterSourceQueues", "s3:PutObject",
        "s3:ListBucket", "kms:GenerateDataKey", "cloudwatch:GetMetricData", "sts:AssumeRole",
        // Causes from the consumer's logs (optional).
        "logs:FilterLogEvents", "logs:DescribeLogGroups", "lambda:ListEventSourceMappings",
        "lambda:GetFunctionConfiguration",
        // replay --to-origin (optional).
        "lambda:ListFunctions", "lambda:InvokeFunction", "sns:ListSubscriptions", "sns:GetSubscriptionAttributes",
        "sns:Publish", "events:PutEvents", "lambda:GetFunctionEventInvokeConfig", "s3:GetObject"}) {
    EXPECT_NE(actions.out.find(std::string(a) + "\n"), std::string::npos) << a;
  }
}

TEST(CliStandInTest, BatchMaxBytesAcceptsUnits) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("cli-units-dlq");
  auto url = svc->sqs().CreateQueue(q, {});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  for (int i = 0; i < 3; ++i) {
    SendEntry e;
    e.body = "m" + std::to_string(i);
    ASSERT_TRUE(svc->sqs().SendMessage(*url, e).ok());
  }
  std::string dir = "/tmp/" + q;
  std::filesystem::create_directories(dir);
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " archive --queue " + q + " --to file://" + dir +
                    " --batch-max-bytes 8MiB --dry-run --progress never --log-level warn");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace dlq::it
