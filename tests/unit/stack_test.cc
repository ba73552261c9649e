// `dlq-archive stack`: the template model (src/deploy/stack.h), its YAML and
// JSON renderings (src/deploy/template_value.h) and the command
// (src/app/stack_command.h) with discovery over a FakeQueueClient.
#include "deploy/stack.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "app/stack_command.h"
#include "archiver/selection_spec.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "deploy/template_value.h"
#include "lambda/lambda_config.h"
#include "monitor/alarm_plan.h"
#include "query/athena_ddl.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr seconds kDay{86400};

// --- TemplateValue rendering -------------------------------------------------

// Compares a yaml-cpp node with the value it was rendered from: the YAML must
// read back as exactly the value (quoted strings stay strings, numbers and
// booleans stay plain).
void ExpectSame(const YAML::Node& n, const TemplateValue& v, const std::string& path) {
  switch (v.kind()) {
    case TemplateValue::Kind::kMap: {
      ASSERT_TRUE(n.IsMap()) << path;
      ASSERT_EQ(n.size(), v.entries().size()) << path;
      for (const auto& [k, child] : v.entries()) {
        ASSERT_TRUE(n[k].IsDefined()) << path << "/" << k;
        ExpectSame(n[k], child, path + "/" + k);
      }
      break;
    }
    case TemplateValue::Kind::kList:
      ASSERT_TRUE(n.IsSequence()) << path;
      ASSERT_EQ(n.size(), v.items().size()) << path;
      for (size_t i = 0; i < v.items().size(); ++i) ExpectSame(n[i], v.items()[i], path + "/" + std::to_string(i));
      break;
    case TemplateValue::Kind::kString:
      ASSERT_TRUE(n.IsScalar()) << path;
      EXPECT_EQ(n.Scalar(), v.AsString()) << path;
      // Plain scalars that look like something else would resolve to it.
      if (n.Tag() == "?") {
        EXPECT_THROW(n.as<double>(), YAML::Exception) << path << " reads as a number: " << n.Scalar();
        EXPECT_THROW(n.as<bool>(), YAML::Exception) << path << " reads as a boolean: " << n.Scalar();
      }
      break;
    case TemplateValue::Kind::kInt: EXPECT_EQ(n.as<int64_t>(), v.AsInt()) << path; break;
    case TemplateValue::Kind::kDouble: EXPECT_EQ(n.as<double>(), v.AsDouble()) << path; break;
    case TemplateValue::Kind::kBool:
      EXPECT_EQ(n.Tag(), "?") << path;
      EXPECT_EQ(n.as<bool>(), v.AsBool()) << path;
      break;
    case TemplateValue::Kind::kNull: EXPECT_TRUE(n.IsNull()) << path; break;
  }
}

TEST(TemplateValueTest, YamlQuotesEveryStringYamlWouldReadAsSomethingElse) {
  TemplateValue v = TemplateValue::Map();
  const std::vector<std::string> tricky = {"",
                                           "true",
                                           "False",
                                           "yes",
                                           "No",
                                           "on",
                                           "off",
                                           "null",
                                           "~",
                                           "123",
                                           "0x1F",
                                           "1e5",
                                           ".inf",
                                           "-",
                                           "- item",
                                           "a: b",
                                           "a #b",
                                           "#comment",
                                           "{flow}",
                                           "[list]",
                                           "*alias",
                                           "&anchor",
                                           "!tag",
                                           "%directive",
                                           "@at",
                                           "`tick`",
                                           "'single'",
                                           "\"double\"",
                                           "back\\slash",
                                           "line1\nline2",
                                           "tab\there",
                                           "bell\a",
                                           "ünïcødé",
                                           "${AWS::Region}",
                                           "arn:aws:sqs:us-east-1:123456789012:q",
                                           " leading",
                                           "trailing ",
                                           "|",
                                           ">",
                                           "?",
                                           "2025-01-01",
                                           "12:30",
                                           "y",
                                           "n",
                                           "Off"};
  TemplateValue list = TemplateValue::List();
  for (const std::string& s : tricky) list.Add(s);
  v.Set("strings", list);
  v.Set("plain", TemplateValue::List({"ReceiveMessage", "/aws/lambda/fn", "provided.al2023", "x86_64"}));
  v.Set("numbers", TemplateValue::List({0, int64_t{-7}, 858160.0, 0.5}));
  v.Set("flags", TemplateValue::List({true, false}));
  v.Set("empty_list", TemplateValue::List());
  v.Set("empty_map", TemplateValue::Map());
  v.Set("nested", TemplateValue::List({TemplateValue::List({"a", TemplateValue::Map().Set("k", "v")}),
                                       TemplateValue::Map().Set("x", TemplateValue::List({1, 2})).Set("y: z", "w")}));
  v.Set("Fn::Sub", Sub("arn:${AWS::Partition}:s3:::${ArchiveBucket}/p/*"));
  std::string yaml = ToYaml(v);
  YAML::Node n = YAML::Load(yaml);
  ExpectSame(n, v, "");
  // Plain where nothing needs quoting, so the template stays readable.
  EXPECT_THAT(yaml, HasSubstr("- ReceiveMessage\n"));
  EXPECT_THAT(yaml, HasSubstr("- /aws/lambda/fn\n"));
  EXPECT_THAT(yaml, HasSubstr("empty_list: []\n"));
}

TEST(TemplateValueTest, JsonIsTheSameValue) {
  TemplateValue v = TemplateValue::Map()
                        .Set("s", "a\"b\n")
                        .Set("n", 3)
                        .Set("d", 1.5)
                        .Set("b", true)
                        .Set("l", TemplateValue::List({Ref("X"), GetAtt("Fn", "Arn")}));
  EXPECT_EQ(ToJson(v),
            "{\"s\":\"a\\\"b\\n\",\"n\":3,\"d\":1.5,\"b\":true,\"l\":[{\"Ref\":\"X\"},{\"Fn::GetAtt\":[\"Fn\","
            "\"Arn\"]}]}\n");
  // JSON is YAML: yaml-cpp reads it back as the same value.
  ExpectSame(YAML::Load(ToJson(v)), v, "");
}

TEST(TemplateValueTest, SetReplacesAndSubLiteralEscapes) {
  TemplateValue m = TemplateValue::Map().Set("a", 1).Set("b", 2).Set("a", 3);
  ASSERT_EQ(m.entries().size(), 2u);
  EXPECT_EQ(m.entries()[0].first, "a");
  EXPECT_EQ(m.Find("a")->AsInt(), 3);
  EXPECT_EQ(SubLiteral("s3://b/queue=${dlq}/dt=${dt}/$x"), "s3://b/queue=${!dlq}/dt=${!dt}/$x");
}

// --- The generator ---------------------------------------------------------

MonitorConfig Config(const std::string& yaml) {
  auto c = ParseMonitorConfig(yaml, "dlq-archive.yaml", MapEnvironment());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : MonitorConfig{};
}

StackQueue Queue(std::string name, seconds retention, seconds source_retention, std::string group = "main") {
  StackQueue q;
  q.group = std::move(group);
  q.name = std::move(name);
  q.fifo = EndsWith(q.name, ".fifo");
  q.retention = retention;
  q.source_retention = source_retention;
  q.discovered = true;
  return q;
}

StackOptions Options() {
  StackOptions o;
  o.lambda_code = "s3://code-bucket/dlq-archive-lambda-x86_64.zip";
  return o;
}

const char* kOneGroup = R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [orders-dlq]
)";

GeneratedStack Generate(const MonitorConfig& c, const std::vector<StackQueue>& qs, const StackOptions& o) {
  auto s = GenerateStack(c, qs, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : GeneratedStack{};
}

const TemplateValue& Resource(const GeneratedStack& s, const std::string& id) {
  static const TemplateValue kNone;
  const TemplateValue* r = s.tmpl.FindPath({"Resources", id});
  EXPECT_NE(r, nullptr) << "no resource " << id;
  return r ? *r : kNone;
}

std::vector<std::pair<std::string, const TemplateValue*>> ResourcesOfType(const GeneratedStack& s,
                                                                          std::string_view type) {
  std::vector<std::pair<std::string, const TemplateValue*>> out;
  for (const auto& [id, r] : s.tmpl.Find("Resources")->entries()) {
    if (r.Find("Type")->AsString() == type) out.emplace_back(id, &r);
  }
  return out;
}

// The alarms on the queues' AWS/SQS metrics (not the function's own).
std::vector<std::pair<std::string, const TemplateValue*>> SqsAlarms(const GeneratedStack& s) {
  auto alarms = ResourcesOfType(s, "AWS::CloudWatch::Alarm");
  std::erase_if(alarms, [](const auto& a) {
    return a.second->FindPath({"Properties", "Namespace"})->AsString() != "AWS/SQS";
  });
  return alarms;
}

// The role's statements by Sid.
std::map<std::string, const TemplateValue*> Statements(const GeneratedStack& s) {
  std::map<std::string, const TemplateValue*> out;
  const TemplateValue* policies = Resource(s, "ArchiverRole").FindPath({"Properties", "Policies"});
  for (const TemplateValue& p : policies->items()) {
    for (const TemplateValue& st : p.FindPath({"PolicyDocument", "Statement"})->items()) {
      out[st.Find("Sid")->AsString()] = &st;
    }
  }
  return out;
}

// A statement's resources as text (Fn::Sub strings as their template).
std::vector<std::string> ResourceTexts(const TemplateValue& statement) {
  std::vector<std::string> out;
  for (const TemplateValue& r : statement.Find("Resource")->items()) {
    out.push_back(r.kind() == TemplateValue::Kind::kString ? r.AsString() : r.Find("Fn::Sub")->AsString());
  }
  return out;
}

std::vector<std::string> Actions(const TemplateValue& statement) {
  std::vector<std::string> out;
  for (const TemplateValue& a : statement.Find("Action")->items()) out.push_back(a.AsString());
  return out;
}

// Resolves Fn::Sub / Ref the way CloudFormation would, for the given values.
std::string Resolve(const TemplateValue& v, const std::map<std::string, std::string>& values) {
  if (v.kind() == TemplateValue::Kind::kString) return v.AsString();
  if (const TemplateValue* ref = v.Find("Ref")) return values.at(ref->AsString());
  std::string text = v.Find("Fn::Sub")->AsString(), out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "${!") == 0) {
      out += "${";
      i += 2;
    } else if (text.compare(i, 2, "${") == 0) {
      size_t end = text.find('}', i);
      out += values.at(text.substr(i + 2, end - i - 2));
      i = end;
    } else {
      out += text[i];
    }
  }
  return out;
}

const std::map<std::string, std::string> kPseudo = {{"AWS::Partition", "aws"},
                                                    {"AWS::Region", "us-east-1"},
                                                    {"AWS::AccountId", "123456789012"},
                                                    {"AWS::URLSuffix", "amazonaws.com"},
                                                    {"ArchiveBucket", "archive-bucket"}};

TEST(StackTest, ExpiryThresholdIsCheckSafetyAnalysisOnCloudWatchAge) {
  MonitorConfig c = Config(kOneGroup);
  // A standard DLQ kept 14 days, fed by a source kept 4: a message can arrive
  // with 10 days left, and CloudWatch's age starts at the arrival.
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, Options());
  ASSERT_EQ(s.queues.size(), 1u);
  // detection = 1 period (60 s) + CloudWatch's lag (60 s + 120 s); drain =
  // 10000 assumed messages at 5/s; margin 1 h: (14d - 4d) - 240 - 2000 - 3600.
  EXPECT_EQ(s.queues[0].expiry_threshold_s, 864000.0 - 240 - 2000 - 3600);
  // The same number `check` derives for a group that uses CloudWatch's age.
  GroupConfig g = c.groups[0];
  g.cloudwatch_age = true;
  g.alarms.depth.action = AlarmSettings::Action::kArchive;
  DiscoveredQueue dq;
  dq.name = "orders-dlq";
  dq.retention = 14 * kDay;
  dq.redrive_sources.push_back({"", "src", 4 * kDay, 3});
  AlarmPlanOptions po;
  po.max_messages_per_run = 0;
  MonitorConfig pc = c;
  pc.sweep_interval = seconds(300);
  EXPECT_EQ(PlanAlarms(pc, g, dq, po).expiry->threshold, s.queues[0].expiry_threshold_s);
  EXPECT_TRUE(s.queues[0].alarm_path_safe) << s.queues[0].alarm_report;

  const TemplateValue& alarm = Resource(s, "ExpiryAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8));
  const TemplateValue& p = *alarm.Find("Properties");
  EXPECT_EQ(p.Find("AlarmName")->AsString(), "dlq-archive-orders-dlq-expiry");
  EXPECT_EQ(p.Find("MetricName")->AsString(), "ApproximateAgeOfOldestMessage");
  EXPECT_EQ(p.Find("Namespace")->AsString(), "AWS/SQS");
  EXPECT_EQ(p.Find("Threshold")->AsDouble(), s.queues[0].expiry_threshold_s);
  EXPECT_EQ(p.Find("ComparisonOperator")->AsString(), "GreaterThanOrEqualToThreshold");
  EXPECT_EQ(p.Find("Period")->AsInt(), 60);
  EXPECT_EQ(*p.Find("Dimensions"),
            TemplateValue::List({TemplateValue::Map().Set("Name", "QueueName").Set("Value", "orders-dlq")}));
  // The function archives; people hear of it through the alert topic.
  EXPECT_EQ(*p.Find("AlarmActions"), TemplateValue::List({GetAtt("ArchiverFunction", "Arn"), Ref("AlertTopic")}));
  const std::string& d = p.Find("AlarmDescription")->AsString();
  EXPECT_LE(d.size(), 1024u);
  EXPECT_THAT(d, HasSubstr("restarts at the move to the DLQ"));
  EXPECT_THAT(d, HasSubstr("The real safety net is the schedule: rate(5 minutes)"));
  EXPECT_THAT(d, HasSubstr("858160"));

  const TemplateValue& depth = Resource(s, "DepthAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8));
  EXPECT_EQ(depth.FindPath({"Properties", "MetricName"})->AsString(), "ApproximateNumberOfMessagesVisible");
  EXPECT_EQ(depth.FindPath({"Properties", "EvaluationPeriods"})->AsInt(), 3);
  EXPECT_EQ(depth.FindPath({"Properties", "TreatMissingData"})->AsString(), "notBreaching");
}

TEST(StackTest, FifoThresholdCountsFromTheMoveAndStandardWithoutSafeThresholdSaysSo) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [jobs-dlq.fifo, legacy-dlq]
)");
  GeneratedStack s =
      Generate(c, {Queue("jobs-dlq.fifo", 4 * kDay, seconds(0)), Queue("legacy-dlq", 4 * kDay, 4 * kDay)}, Options());
  ASSERT_EQ(s.queues.size(), 2u);
  // FIFO: the age restarts at the move, as the expiry clock does: 4d - window.
  EXPECT_EQ(s.queues[0].expiry_threshold_s, 345600.0 - 240 - 2000 - 3600);
  EXPECT_TRUE(s.queues[0].alarm_path_safe);
  // Standard with DLQ retention = source retention: no age threshold can be
  // safe; the alarm fires at 1 s and the description says why.
  EXPECT_EQ(s.queues[1].expiry_threshold_s, 1.0);
  EXPECT_FALSE(s.queues[1].alarm_path_safe);
  EXPECT_THAT(s.queues[1].threshold_source, HasSubstr("no safe threshold"));
  const TemplateValue& alarm = Resource(s, "ExpiryAlarmLegacyDlq" + Sha256Hex("legacy-dlq").substr(0, 8));
  EXPECT_THAT(alarm.FindPath({"Properties", "AlarmDescription"})->AsString(), HasSubstr("no safe threshold"));
  // Unsafe on every path: warned, with the analysis.
  bool warned = false;
  for (const std::string& w : s.warnings) warned = warned || (StartsWith(w, "queue legacy-dlq: UNSAFE"));
  EXPECT_TRUE(warned);
}

TEST(StackTest, DescriptionCountsTheQueuesInWords) {
  MonitorConfig c = Config(kOneGroup);
  GeneratedStack one = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, Options());
  EXPECT_THAT(one.tmpl.Find("Description")->AsString(), HasSubstr("archives 1 SQS dead-letter queue to s3://"));
  MonitorConfig c2 = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [orders-dlq, billing-dlq]
)");
  GeneratedStack two =
      Generate(c2, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("billing-dlq", 14 * kDay, 4 * kDay)}, Options());
  EXPECT_THAT(two.tmpl.Find("Description")->AsString(), HasSubstr("archives 2 SQS dead-letter queues to s3://"));
}

// Two DLQs of one group, archived under a prefix deeper than one level.
const char* kTwoQueuesUnderAPrefix = R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq/prod
    queues: [orders-dlq, payments-dlq]
)";

TEST(StackTest, RoleIsScopedToExactArnsAndItsOnlyWildcardIsListEventSourceMappings) {
  MonitorConfig c = Config(kTwoQueuesUnderAPrefix);
  GeneratedStack s =
      Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("payments-dlq", 14 * kDay, 4 * kDay)}, Options());
  auto st = Statements(s);
  // SQS, S3, logs, failed invocations to SNS, self-invoke, and (causes: auto
  // by default) the six cause lookup statements: no KMS, STS or VPC here.
  ASSERT_EQ(st.size(), 12u);
  EXPECT_THAT(Actions(*st["ArchiveDeadLetterQueues"]),
              ElementsAre("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
                          "sqs:GetQueueAttributes", "sqs:GetQueueUrl"));
  EXPECT_THAT(ResourceTexts(*st["ArchiveDeadLetterQueues"]),
              ElementsAre("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:orders-dlq",
                          "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:payments-dlq"));
  EXPECT_THAT(Actions(*st["WriteArchiveObjects"]), ElementsAre("s3:PutObject"));
  EXPECT_THAT(ResourceTexts(*st["WriteArchiveObjects"]),
              ElementsAre("arn:${AWS::Partition}:s3:::${ArchiveBucket}/dlq/prod/*"));
  EXPECT_THAT(ResourceTexts(*st["WriteOwnLogs"]),
              ElementsAre("arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/"
                          "dlq-archive:*"));
  EXPECT_THAT(Actions(*st["PublishFailedInvocations"]), ElementsAre("sns:Publish"));
  EXPECT_THAT(ResourceTexts(*st["PublishFailedInvocations"]), ElementsAre("${AlertTopic}"));
  EXPECT_THAT(ResourceTexts(*st["FollowUpInvoke"]),
              ElementsAre("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:dlq-archive"));
  for (const auto& [sid, statement] : st) {
    EXPECT_EQ(statement->Find("Effect")->AsString(), "Allow");
    // The one "*": ListEventSourceMappings, which IAM authorizes on no
    // narrower resource, alone in its statement.
    if (sid == "LookUpCausesListMappings") {
      EXPECT_THAT(Actions(*statement), ElementsAre("lambda:ListEventSourceMappings"));
      EXPECT_THAT(ResourceTexts(*statement), ElementsAre("*"));
      continue;
    }
    for (const std::string& r : ResourceTexts(*statement)) EXPECT_NE(r, "*") << sid;
  }
  // The log group the statement names is the stack's own.
  EXPECT_EQ(Resource(s, "ArchiverLogGroup").FindPath({"Properties", "LogGroupName"})->AsString(),
            "/aws/lambda/dlq-archive");
}

TEST(StackTest, AReplayPolicyOnRequestIsScopedToTheArchiveTheQueuesAndTheAccount) {
  MonitorConfig c = Config(kTwoQueuesUnderAPrefix);
  const std::vector<StackQueue> queues = {Queue("orders-dlq", 14 * kDay, 4 * kDay),
                                          Queue("payments-dlq", 14 * kDay, 4 * kDay)};
  GeneratedStack without = Generate(c, queues, Options());
  EXPECT_EQ(without.tmpl.FindPath({"Resources", "ReplayPolicy"}), nullptr) << "only when asked for";
  EXPECT_EQ(without.tmpl.FindPath({"Outputs", "ReplayPolicyArn"}), nullptr);

  StackOptions o = Options();
  o.replay_policy = true;
  GeneratedStack s = Generate(c, queues, o);
  const TemplateValue& policy = Resource(s, "ReplayPolicy");
  EXPECT_EQ(policy.Find("Type")->AsString(), "AWS::IAM::ManagedPolicy");
  EXPECT_EQ(s.tmpl.FindPath({"Outputs", "ReplayPolicyArn", "Value", "Ref"})->AsString(), "ReplayPolicy");
  std::map<std::string, const TemplateValue*> st;
  for (const TemplateValue& x : policy.FindPath({"Properties", "PolicyDocument", "Statement"})->items()) {
    st[x.Find("Sid")->AsString()] = &x;
  }
  ASSERT_EQ(st.size(), 9u);
  EXPECT_THAT(ResourceTexts(*st["ReplayReadArchive"]),
              ElementsAre("arn:${AWS::Partition}:s3:::${ArchiveBucket}/dlq/prod/*"));
  EXPECT_THAT(ResourceTexts(*st["ReplayWriteAudit"]),
              ElementsAre("arn:${AWS::Partition}:s3:::${ArchiveBucket}/dlq/prod/_audit/*"));
  EXPECT_THAT(Actions(*st["ReplayWriteAudit"]), ElementsAre("s3:PutObject"));
  EXPECT_THAT(ResourceTexts(*st["ReplayFromDeadLetterQueues"]),
              ElementsAre("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:orders-dlq",
                          "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:payments-dlq"));
  EXPECT_THAT(
      Actions(*st["ReplayToOriginFunctions"]),
      ElementsAre("lambda:GetFunctionConfiguration", "lambda:GetFunctionEventInvokeConfig", "lambda:InvokeFunction"));
  EXPECT_THAT(ResourceTexts(*st["ReplayToOriginFunctions"]),
              ElementsAre("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"));
  EXPECT_THAT(ResourceTexts(*st["ReplayToOriginBuses"]),
              ElementsAre("arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/*"));
  for (const auto& [sid, statement] : st) {
    // The one "*": the listings IAM authorizes on no narrower resource, alone in their statement.
    if (sid == "ReplayFindOrigins") {
      EXPECT_THAT(Actions(*statement), ElementsAre("lambda:ListFunctions", "sns:ListSubscriptions"));
      EXPECT_THAT(ResourceTexts(*statement), ElementsAre("*"));
      continue;
    }
    for (const std::string& r : ResourceTexts(*statement)) EXPECT_NE(r, "*") << sid;
  }
  // Every action the replay's documented policy lists is granted here too.
  std::set<std::string> granted;
  for (const auto& [sid, statement] : st) {
    for (const std::string& a : Actions(*statement)) granted.insert(a);
  }
  for (const char* a : {"lambda:InvokeFunction", "lambda:ListFunctions", "lambda:GetFunctionEventInvokeConfig",
                        "sns:Publish", "sns:ListSubscriptions", "sns:GetSubscriptionAttributes", "events:PutEvents",
                        "sqs:SendMessage", "sqs:ReceiveMessage", "s3:GetObject", "s3:ListBucket"}) {
    EXPECT_TRUE(granted.contains(a)) << a;
  }
}

TEST(StackTest, CauseLookupsGetTheirStatementsAndEnvironmentUnlessCausesAreOff) {
  for (const char* mode : {"auto", "on", "off"}) {
    SCOPED_TRACE(mode);
    MonitorConfig c = Config(fmt::format(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq/prod
    queues: [orders-dlq, payments-dlq]
    causes: {}
    cause_samples: 5
    consumer_logs: [/ecs/orders, payments-dlq=/ecs/payments, /aws/lambda/billing]
)",
                                         mode));
    GeneratedStack s =
        Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("payments-dlq", 14 * kDay, 4 * kDay)}, Options());
    auto st = Statements(s);
    const TemplateValue* env = Resource(s, "ArchiverFunction").FindPath({"Properties", "Environment", "Variables"});
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(env->Find("DLQ_ARCHIVE_CAUSES")->AsString(), mode);
    const std::vector<std::string> sids = {"LookUpCausesReadArchive",      "LookUpCausesListKeptCauses",
                                           "LookUpCausesFindSourceQueues", "LookUpCausesReadLogs",
                                           "LookUpCausesFindConsumers",    "LookUpCausesListMappings",
                                           "LookUpCausesLogRetention"};
    if (std::string_view(mode) == "off") {
      for (const std::string& sid : sids) EXPECT_FALSE(st.contains(sid)) << sid;
      EXPECT_EQ(env->Find("DLQ_ARCHIVE_CAUSE_SAMPLES"), nullptr);
      EXPECT_EQ(env->Find("DLQ_ARCHIVE_CONSUMER_LOGS"), nullptr);
      EXPECT_EQ(st.size(), 5u);
      continue;
    }
    for (const std::string& sid : sids) ASSERT_TRUE(st.contains(sid)) << sid;
    EXPECT_EQ(env->Find("DLQ_ARCHIVE_CAUSE_SAMPLES")->AsString(), "5");
    EXPECT_EQ(env->Find("DLQ_ARCHIVE_CONSUMER_LOGS")->AsString(),
              "/ecs/orders,payments-dlq=/ecs/payments,/aws/lambda/billing");
    const std::string logs = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:";
    EXPECT_THAT(Actions(*st["LookUpCausesReadLogs"]), ElementsAre("logs:FilterLogEvents"));
    EXPECT_THAT(Actions(*st["LookUpCausesLogRetention"]), ElementsAre("logs:DescribeLogGroups"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesLogRetention"]), ElementsAre(logs + "*"));
    // Lambda consumers' groups, then each named one (a named /aws/lambda/ group is already covered).
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesReadLogs"]),
                ElementsAre(logs + "/aws/lambda/*:*", logs + "/ecs/orders:*", logs + "/ecs/payments:*"));
    EXPECT_THAT(Actions(*st["LookUpCausesFindConsumers"]), ElementsAre("lambda:GetFunctionConfiguration"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesFindConsumers"]),
                ElementsAre("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"));
    EXPECT_THAT(Actions(*st["LookUpCausesListMappings"]), ElementsAre("lambda:ListEventSourceMappings"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesListMappings"]), ElementsAre("*"));
    EXPECT_THAT(Actions(*st["LookUpCausesFindSourceQueues"]),
                ElementsAre("sqs:ListDeadLetterSourceQueues", "sqs:GetQueueAttributes"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesFindSourceQueues"]),
                ElementsAre("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:*"));
    EXPECT_THAT(Actions(*st["LookUpCausesReadArchive"]), ElementsAre("s3:GetObject"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesReadArchive"]),
                ElementsAre("arn:${AWS::Partition}:s3:::${ArchiveBucket}/dlq/prod/*"));
    EXPECT_THAT(ResourceTexts(*st["LookUpCausesListKeptCauses"]),
                ElementsAre("arn:${AWS::Partition}:s3:::${ArchiveBucket}"));
    EXPECT_EQ(st["LookUpCausesListKeptCauses"]->FindPath({"Condition", "StringLike", "s3:prefix"})->AsString(),
              "dlq/prod/_causes/*");
  }
}

TEST(StackTest, GroupsThatDifferInCausesNeedStacksOfTheirOwn) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [orders-dlq]
  - name: quiet
    destination: s3://archive-bucket/dlq
    queues: [billing-dlq]
    causes: off
)");
  auto s = GenerateStack(
      c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("billing-dlq", 14 * kDay, 4 * kDay, "quiet")}, Options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("differ in causes ('auto' vs 'off')"), std::string::npos) << s.status().message();
}

TEST(StackTest, EveryAlarmInvokesTheFunctionThroughAPermissionScopedToItsArn) {
  MonitorConfig c = Config(kOneGroup);
  GeneratedStack s =
      Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("billing-dlq", 14 * kDay, 4 * kDay)}, Options());
  auto alarms = SqsAlarms(s);  // the function's own alarms are for people only
  ASSERT_EQ(alarms.size(), 4u);
  std::set<std::string> alarm_arns;
  for (const auto& [id, a] : alarms) {
    alarm_arns.insert("arn:aws:cloudwatch:us-east-1:123456789012:alarm:" +
                      a->FindPath({"Properties", "AlarmName"})->AsString());
  }
  std::set<std::string> permitted;
  int schedule_permissions = 0;
  for (const auto& [id, p] : ResourcesOfType(s, "AWS::Lambda::Permission")) {
    const TemplateValue& props = *p->Find("Properties");
    EXPECT_EQ(props.Find("Action")->AsString(), "lambda:InvokeFunction");
    EXPECT_EQ(*props.Find("FunctionName"), GetAtt("ArchiverFunction", "Arn"));
    if (props.Find("Principal")->AsString() == "events.amazonaws.com") {
      ++schedule_permissions;
      EXPECT_EQ(*props.Find("SourceArn"), GetAtt("SweepSchedule", "Arn"));
      continue;
    }
    EXPECT_EQ(props.Find("Principal")->AsString(), "lambda.alarms.cloudwatch.amazonaws.com");
    EXPECT_EQ(*props.Find("SourceAccount"), Ref("AWS::AccountId"));
    permitted.insert(Resolve(*props.Find("SourceArn"), kPseudo));
  }
  EXPECT_EQ(permitted, alarm_arns);  // one permission per alarm, each for that alarm only
  std::set<std::string> listed;
  for (std::string_view n : Split(s.tmpl.FindPath({"Outputs", "AlarmNames", "Value"})->AsString(), ',')) {
    listed.insert("arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + std::string(n));
  }
  EXPECT_EQ(listed, alarm_arns);
  EXPECT_EQ(s.tmpl.FindPath({"Outputs", "AlarmNamePrefix", "Value"})->AsString(), "dlq-archive-");
  EXPECT_EQ(schedule_permissions, 1);
  const TemplateValue& rule = Resource(s, "SweepSchedule");
  EXPECT_EQ(*rule.FindPath({"Properties", "ScheduleExpression"}), Ref("ScheduleExpression"));
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "ScheduleExpression", "Default"})->AsString(), "rate(5 minutes)");
}

TEST(StackTest, AlarmPeriodsOnSqsMetricsAreWholeMinutes) {
  // The daemon may alarm every 10 s (it reads SQS itself); SQS publishes to
  // CloudWatch once a minute, so the stack's alarms round up, and say so.
  MonitorConfig c = Config(R"(
collection_interval: 10s
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [orders-dlq]
    alarms:
      expiry: { period: 90s }
      depth: { period: 10s, evaluation_periods: 3, datapoints_to_alarm: 3 }
)");
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, Options());
  auto alarms = SqsAlarms(s);
  ASSERT_EQ(alarms.size(), 2u);
  for (const auto& [id, a] : alarms) {
    EXPECT_EQ(a->FindPath({"Properties", "Period"})->AsInt() % 60, 0) << id;
  }
  EXPECT_EQ(Resource(s, "ExpiryAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8))
                .FindPath({"Properties", "Period"})
                ->AsInt(),
            120);
  EXPECT_EQ(Resource(s, "DepthAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8))
                .FindPath({"Properties", "Period"})
                ->AsInt(),
            60);
  std::string warnings;
  for (const std::string& w : s.warnings) warnings += w + "\n";
  EXPECT_THAT(warnings, HasSubstr("group main: alarms.expiry.period 1m30s is not a whole number of minutes"));
  EXPECT_THAT(warnings, HasSubstr("group main: alarms.depth.period 10s is not a whole number of minutes"));
  EXPECT_THAT(warnings, HasSubstr("use 1m"));

  // Whole minutes stay as they are, without a warning.
  GeneratedStack plain = Generate(Config(kOneGroup), {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, Options());
  EXPECT_EQ(Resource(plain, "DepthAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8))
                .FindPath({"Properties", "Period"})
                ->AsInt(),
            300);
  for (const std::string& w : plain.warnings) EXPECT_THAT(w, Not(HasSubstr("whole number of minutes")));
}

TEST(StackTest, PeopleHearOfAlarmsErrorsThrottlesAndFailedInvocations) {
  GeneratedStack s = Generate(Config(kOneGroup), {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, Options());
  EXPECT_EQ(Resource(s, "AlertTopic").Find("Type")->AsString(), "AWS::SNS::Topic");
  EXPECT_EQ(Resource(s, "AlertTopic").FindPath({"Properties", "TopicName"})->AsString(), "dlq-archive-alerts");
  EXPECT_EQ(s.tmpl.FindPath({"Outputs", "AlertTopicArn", "Value"})->Find("Ref")->AsString(), "AlertTopic");
  // Optional subscriptions: made only when their parameter is not empty.
  for (const auto& [id, parameter, condition, protocol] :
       {std::tuple{"AlertEmailSubscription", "AlertEmail", "HasAlertEmail", "email"},
        std::tuple{"AlertHttpsSubscription", "AlertHttpsEndpoint", "HasAlertHttpsEndpoint", "https"}}) {
    const TemplateValue& sub = Resource(s, id);
    EXPECT_EQ(sub.Find("Condition")->AsString(), condition);
    EXPECT_EQ(sub.FindPath({"Properties", "Protocol"})->AsString(), protocol);
    EXPECT_EQ(*sub.FindPath({"Properties", "Endpoint"}), Ref(parameter));
    EXPECT_EQ(*sub.FindPath({"Properties", "TopicArn"}), Ref("AlertTopic"));
    EXPECT_EQ(s.tmpl.FindPath({"Parameters", parameter, "Default"})->AsString(), "");
    const TemplateValue* equals = s.tmpl.FindPath({"Conditions", condition, "Fn::Not"});
    ASSERT_NE(equals, nullptr) << condition;
    EXPECT_EQ(*equals->items().at(0).Find("Fn::Equals"), TemplateValue::List({Ref(parameter), ""}));
  }
  // Every alarm notifies the topic; the function's errors and throttles have alarms of their own.
  for (const auto& [id, a] : ResourcesOfType(s, "AWS::CloudWatch::Alarm")) {
    const TemplateValue& actions = *a->FindPath({"Properties", "AlarmActions"});
    EXPECT_NE(std::find(actions.items().begin(), actions.items().end(), Ref("AlertTopic")), actions.items().end())
        << id;
  }
  for (const auto& [id, metric] :
       {std::pair{"FunctionErrorsAlarm", "Errors"}, {"FunctionThrottlesAlarm", "Throttles"}}) {
    const TemplateValue& p = *Resource(s, id).Find("Properties");
    EXPECT_EQ(p.Find("Namespace")->AsString(), "AWS/Lambda") << id;
    EXPECT_EQ(p.Find("MetricName")->AsString(), metric);
    EXPECT_EQ(
        *p.Find("Dimensions"),
        TemplateValue::List({TemplateValue::Map().Set("Name", "FunctionName").Set("Value", Ref("ArchiverFunction"))}));
    EXPECT_EQ(p.Find("Statistic")->AsString(), "Sum");
    EXPECT_EQ(p.Find("Period")->AsInt() % 60, 0);
    EXPECT_EQ(p.Find("ComparisonOperator")->AsString(), "GreaterThanOrEqualToThreshold");
    EXPECT_EQ(*p.Find("AlarmActions"), TemplateValue::List({Ref("AlertTopic")}));
  }
  // An asynchronous invocation that fails (after Lambda's retries) lands on the topic.
  const TemplateValue& invoke = Resource(s, "ArchiverEventInvokeConfig");
  EXPECT_EQ(invoke.Find("Type")->AsString(), "AWS::Lambda::EventInvokeConfig");
  EXPECT_EQ(*invoke.FindPath({"Properties", "FunctionName"}), Ref("ArchiverFunction"));
  EXPECT_EQ(invoke.FindPath({"Properties", "Qualifier"})->AsString(), "$LATEST");
  EXPECT_EQ(*invoke.FindPath({"Properties", "DestinationConfig", "OnFailure", "Destination"}), Ref("AlertTopic"));
}

TEST(StackTest, DefaultPolicyArchivesWhatNearsExpiryLikeTheDaemon) {
  // The daemon's default (policy.select: auto) archives, when the expiry
  // alarm fires, the messages expiring within the alarm's lead window; the
  // stack's default does the same on every invocation instead of emptying
  // the DLQ.
  MonitorConfig c = Config(kOneGroup);
  const StackQueue q = Queue("orders-dlq", 14 * kDay, 4 * kDay);
  GeneratedStack s = Generate(c, {q}, Options());
  ASSERT_EQ(Options().policy, "auto");
  GroupConfig g = c.groups[0];
  g.cloudwatch_age = true;
  MonitorConfig pc = c;
  pc.sweep_interval = seconds(300);
  AlarmPlanOptions po;
  po.max_messages_per_run = 0;
  DiscoveredQueue dq;
  dq.name = q.name;
  dq.retention = q.retention;
  dq.redrive_sources.push_back({"", "", q.source_retention, 0});
  const Selection daemon = PlanAlarms(pc, g, dq, po).expiry_selection;
  ASSERT_EQ(daemon.kind, SelectionKind::kExpiringWithin);
  const std::string policy = Resource(s, "ArchiverFunction")
                                 .FindPath({"Properties", "Environment", "Variables", "DLQ_ARCHIVE_POLICY"})
                                 ->AsString();
  EXPECT_EQ(policy, fmt::format("expiring_within:{}s", daemon.window.count()));
  auto parsed = ParseSelectionSpec(policy);  // what the runtime reads
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->window, daemon.window);
  EXPECT_LT(daemon.window, q.retention);  // not the whole DLQ
  EXPECT_THAT(Resource(s, "SweepSchedule").FindPath({"Properties", "Description"})->AsString(),
              HasSubstr("expiring within"));
  EXPECT_TRUE(s.queues[0].schedule_path_safe) << s.queues[0].schedule_report;

  // `all` stays available.
  StackOptions all = Options();
  all.policy = "all";
  GeneratedStack a = Generate(c, {q}, all);
  EXPECT_EQ(Resource(a, "ArchiverFunction")
                .FindPath({"Properties", "Environment", "Variables", "DLQ_ARCHIVE_POLICY"})
                ->AsString(),
            "all");

  // Groups whose daemon policies cannot be one: --policy must say.
  MonitorConfig mixed = Config(R"(
defaults:
  destination: s3://archive-bucket/dlq
groups:
  - name: a
    queues: [qa]
    policy: { select: older-than, window: 1d }
  - name: b
    queues: [qb]
    policy: { select: expiring-within, window: 1d }
)");
  auto r =
      GenerateStack(mixed, {Queue("qa", 14 * kDay, 4 * kDay, "a"), Queue("qb", 14 * kDay, 4 * kDay, "b")}, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--policy auto: group b archives"));
}

TEST(StackTest, FunctionEnvironmentIsWhatTheRuntimeReads) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    key_template: hive
    sse: aws:kms
    sse_kms_key_id: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
    storage_class: STANDARD_IA
    batch: { max_messages: 5000, max_bytes: 4MiB, max_age: 20s }
    queues: [orders-dlq]
  - name: partner
    destination: s3://archive-bucket/dlq
    key_template: hive
    sse: aws:kms
    sse_kms_key_id: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
    storage_class: STANDARD_IA
    batch: { max_messages: 5000, max_bytes: 4MiB, max_age: 20s }
    role_arn: arn:aws:iam::210987654321:role/dlq-archive-reader
    queues: [partner-dlq]
)");
  StackQueue partner = Queue("partner-dlq", 14 * kDay, 4 * kDay, "partner");
  partner.role_arn = c.groups[1].role_arn;
  partner.account_id = "210987654321";
  partner.region = "eu-west-1";
  StackOptions o = Options();
  o.policy = "expiring_within:2d";
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), partner}, o);
  const TemplateValue& fn = Resource(s, "ArchiverFunction");
  const TemplateValue* vars = fn.FindPath({"Properties", "Environment", "Variables"});
  ASSERT_NE(vars, nullptr);

  // Every variable is one src/lambda/lambda_config.cc reads.
  std::ifstream src(std::string(DLQ_TESTDATA_DIR) + "/../../src/lambda/lambda_config.cc");
  std::stringstream code;
  code << src.rdbuf();
  ASSERT_THAT(code.str(), HasSubstr("DLQ_ARCHIVE_DESTINATION"));
  MapEnvironment env;
  env.Set("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
  for (const auto& [k, v] : vars->entries()) {
    EXPECT_THAT(code.str(), HasSubstr("\"" + k + "\"")) << k << " is not read by the runtime";
    env.Set(k, Resolve(v, kPseudo));
  }
  // And the runtime accepts them, configured as the config says.
  auto settings = LambdaSettingsFromEnv(env);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->destination.bucket, "archive-bucket");
  EXPECT_EQ(settings->destination.prefix, "dlq");
  EXPECT_THAT(settings->config.queues,
              ElementsAre("orders-dlq", "https://sqs.eu-west-1.amazonaws.com/210987654321/partner-dlq"));
  EXPECT_EQ(settings->config.drain.key_template.text(), kHiveKeyTemplate);
  EXPECT_EQ(settings->config.drain.put.sse, "aws:kms");
  EXPECT_EQ(settings->config.drain.put.sse_kms_key_id, c.groups[0].put.sse_kms_key_id);
  EXPECT_EQ(settings->config.drain.put.storage_class, "STANDARD_IA");
  EXPECT_EQ(settings->config.drain.batch.max_messages, 5000u);
  EXPECT_EQ(settings->config.drain.batch.max_bytes, 4u << 20);
  EXPECT_EQ(settings->config.drain.batch.max_age, std::chrono::milliseconds(20000));
  EXPECT_EQ(settings->config.drain.selection.kind, SelectionKind::kExpiringWithin);
  EXPECT_EQ(settings->config.drain.selection.window, 2 * kDay);
  EXPECT_EQ(settings->role_arns.at("210987654321"), "arn:aws:iam::210987654321:role/dlq-archive-reader");

  // Cross-account: assumed, not granted directly; no alarms (alarm actions
  // cannot cross accounts), and the stack says so.
  auto st = Statements(s);
  EXPECT_THAT(ResourceTexts(*st["AssumeQueueAccountRoles"]),
              ElementsAre("arn:aws:iam::210987654321:role/dlq-archive-reader"));
  EXPECT_THAT(Actions(*st["AssumeQueueAccountRoles"]), ElementsAre("sts:AssumeRole"));
  EXPECT_THAT(ResourceTexts(*st["ArchiveDeadLetterQueues"]),
              ElementsAre("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:orders-dlq"));
  EXPECT_THAT(ResourceTexts(*st["EncryptArchiveObjects"]), ElementsAre(c.groups[0].put.sse_kms_key_id));
  EXPECT_THAT(Actions(*st["EncryptArchiveObjects"]), ElementsAre("kms:GenerateDataKey"));
  EXPECT_EQ(SqsAlarms(s).size(), 2u);  // orders-dlq's two
  EXPECT_EQ(s.queues[1].expiry_alarm, "");
  bool warned = false;
  for (const std::string& w : s.warnings)
    warned = warned || StartsWith(w, "queue partner-dlq (account 210987654321): no alarms");
  EXPECT_TRUE(warned);
  // Function settings from the parameters, whose defaults are the options.
  const TemplateValue& props = *fn.Find("Properties");
  EXPECT_EQ(props.Find("Runtime")->AsString(), "provided.al2023");
  EXPECT_EQ(props.Find("Handler")->AsString(), "bootstrap");
  EXPECT_EQ(*props.Find("Architectures"), TemplateValue::List({Ref("Architecture")}));
  EXPECT_EQ(*props.Find("ReservedConcurrentExecutions"), Ref("ReservedConcurrency"));
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "CodeBucket", "Default"})->AsString(), "code-bucket");
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "CodeKey", "Default"})->AsString(), "dlq-archive-lambda-x86_64.zip");
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "FunctionTimeout", "Default"})->AsInt(), 900);
  for (const auto& [name, p] : s.tmpl.Find("Parameters")->entries()) {
    EXPECT_NE(p.Find("Default"), nullptr) << name << " has no default: create-stack would need it";
  }
}

TEST(StackTest, CreatedBucketIsEncryptedPrivateTlsOnlyWithLifecycle) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    sse: aws:kms
    sse_kms_key_id: 1234abcd-12ab-34cd-56ef-1234567890ab
    queues: [orders-dlq]
)");
  StackOptions o = Options();
  o.create_bucket = true;
  o.transition_storage_class = "DEEP_ARCHIVE";
  o.transition_days = 90;
  o.expiration_days = 2555;
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, o);
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "ArchiveBucket"}), nullptr);  // a resource now
  const TemplateValue& b = Resource(s, "ArchiveBucket");
  EXPECT_EQ(b.Find("DeletionPolicy")->AsString(), "Retain");
  const TemplateValue& p = *b.Find("Properties");
  EXPECT_EQ(p.Find("BucketName")->AsString(), "archive-bucket");
  const TemplateValue& enc = p.FindPath({"BucketEncryption", "ServerSideEncryptionConfiguration"})->items().at(0);
  EXPECT_EQ(enc.FindPath({"ServerSideEncryptionByDefault", "SSEAlgorithm"})->AsString(), "aws:kms");
  EXPECT_EQ(Resolve(*enc.FindPath({"ServerSideEncryptionByDefault", "KMSMasterKeyID"}), kPseudo),
            "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab");
  EXPECT_TRUE(enc.Find("BucketKeyEnabled")->AsBool());
  for (const char* k : {"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"}) {
    EXPECT_TRUE(p.FindPath({"PublicAccessBlockConfiguration", k})->AsBool()) << k;
  }
  EXPECT_EQ(p.FindPath({"OwnershipControls", "Rules"})->items().at(0).Find("ObjectOwnership")->AsString(),
            "BucketOwnerEnforced");
  const TemplateValue& rule = p.FindPath({"LifecycleConfiguration", "Rules"})->items().at(0);
  EXPECT_EQ(rule.Find("Prefix")->AsString(), "dlq/");
  EXPECT_EQ(rule.Find("Transitions")->items().at(0).Find("StorageClass")->AsString(), "DEEP_ARCHIVE");
  EXPECT_EQ(rule.Find("Transitions")->items().at(0).Find("TransitionInDays")->AsInt(), 90);
  EXPECT_EQ(rule.Find("ExpirationInDays")->AsInt(), 2555);
  EXPECT_EQ(rule.FindPath({"AbortIncompleteMultipartUpload", "DaysAfterInitiation"})->AsInt(), 7);
  // Versioned: a mistaken delete or overwrite keeps the old version for NoncurrentVersionDays (30 by default).
  EXPECT_EQ(p.FindPath({"VersioningConfiguration", "Status"})->AsString(), "Enabled");
  EXPECT_EQ(rule.FindPath({"NoncurrentVersionExpiration", "NoncurrentDays", "Ref"})->AsString(),
            "NoncurrentVersionDays");
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "NoncurrentVersionDays", "Default"})->AsInt(), 30);
  const TemplateValue& deny =
      Resource(s, "ArchiveBucketPolicy").FindPath({"Properties", "PolicyDocument", "Statement"})->items().at(0);
  EXPECT_EQ(deny.Find("Effect")->AsString(), "Deny");
  EXPECT_EQ(deny.FindPath({"Condition", "Bool", "aws:SecureTransport"})->AsString(), "false");
  // The key id became the key's ARN in the role too.
  EXPECT_THAT(ResourceTexts(*Statements(s)["EncryptArchiveObjects"]),
              ElementsAre("arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/"
                          "1234abcd-12ab-34cd-56ef-1234567890ab"));

  // SSE-S3 without KMS: AES256, no bucket key, no KMS statement.
  MonitorConfig plain = Config(kOneGroup);
  GeneratedStack s3 = Generate(plain, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, o);
  const TemplateValue& enc3 = Resource(s3, "ArchiveBucket")
                                  .FindPath({"Properties", "BucketEncryption", "ServerSideEncryptionConfiguration"})
                                  ->items()
                                  .at(0);
  EXPECT_EQ(enc3.FindPath({"ServerSideEncryptionByDefault", "SSEAlgorithm"})->AsString(), "AES256");
  EXPECT_EQ(Statements(s3).count("EncryptArchiveObjects"), 0u);
}

TEST(StackTest, VpcGetsEndpointsAndItsOnlyWildcardsAreNetworkInterfacesAndListMappings) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    queues: [orders-dlq]
  - name: partner
    destination: s3://archive-bucket/dlq
    role_arn: arn:aws:iam::210987654321:role/reader
    queues: [partner-dlq]
)");
  StackOptions o = Options();
  o.vpc_subnets = {"subnet-0a", "subnet-0b"};
  o.vpc_security_groups = {"sg-01"};
  o.vpc_id = "vpc-01";
  o.vpc_route_tables = {"rtb-01"};
  StackQueue partner = Queue("partner-dlq", 14 * kDay, 4 * kDay, "partner");
  partner.role_arn = c.groups[1].role_arn;
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), partner}, o);
  EXPECT_EQ(*Resource(s, "ArchiverFunction").FindPath({"Properties", "VpcConfig", "SubnetIds"}), Ref("SubnetIds"));
  EXPECT_EQ(s.tmpl.FindPath({"Parameters", "SubnetIds", "Default"})->AsString(), "subnet-0a,subnet-0b");
  EXPECT_EQ(Resource(s, "S3GatewayEndpoint").FindPath({"Properties", "VpcEndpointType"})->AsString(), "Gateway");
  for (const char* id : {"SqsEndpoint", "LambdaEndpoint", "StsEndpoint", "LogsEndpoint"}) {
    EXPECT_EQ(Resource(s, id).FindPath({"Properties", "VpcEndpointType"})->AsString(), "Interface") << id;
  }
  std::set<std::string> wildcards;
  for (const auto& [sid, st] : Statements(s)) {
    for (const std::string& r : ResourceTexts(*st)) {
      if (r.find('*') != std::string::npos && !EndsWith(r, "/*") && !EndsWith(r, ":*")) {
        EXPECT_EQ(r, "*") << sid;
        wildcards.insert(sid);
      }
    }
  }
  // The VPC's network interfaces and (causes: auto) ListEventSourceMappings: both have no narrower resource.
  EXPECT_THAT(wildcards, ElementsAre("LookUpCausesListMappings", "VpcNetworkInterfaces"));
  // The queue of the other account is reached by its canonical URL.
  EXPECT_EQ(
      Resolve(
          *Resource(s, "ArchiverFunction").FindPath({"Properties", "Environment", "Variables", "DLQ_ARCHIVE_QUEUES"}),
          kPseudo),
      "orders-dlq,https://sqs.us-east-1.amazonaws.com/210987654321/partner-dlq");

  StackOptions no_sts = o;
  GeneratedStack one = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, no_sts);
  EXPECT_EQ(one.tmpl.FindPath({"Resources", "StsEndpoint"}), nullptr);  // no role: no STS endpoint
}

TEST(StackTest, GlueTableIsTheDdlCommandsDefinition) {
  for (const char* layout : {"default", "hive"}) {
    SCOPED_TRACE(layout);
    MonitorConfig c = Config(fmt::format(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    key_template: {}
    queues: [orders-dlq, jobs.fifo]
)",
                                         layout));
    GeneratedStack s =
        Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay), Queue("jobs.fifo", 4 * kDay, seconds(0))}, Options());
    AthenaDdlOptions ddl_options;
    ddl_options.from = "s3://archive-bucket/dlq";
    ddl_options.layout = std::string(layout) == "hive" ? ArchiveLayout::kHive : ArchiveLayout::kDefault;
    ddl_options.database = "dlq_archive";
    ddl_options.queues = {"orders-dlq", "jobs.fifo"};
    auto table = BuildAthenaTable(ddl_options);
    auto ddl = GenerateAthenaDdl(ddl_options);
    ASSERT_TRUE(table.ok() && ddl.ok());

    const TemplateValue& input = *Resource(s, "GlueTable").FindPath({"Properties", "TableInput"});
    const TemplateValue& columns = *input.FindPath({"StorageDescriptor", "Columns"});
    ASSERT_EQ(columns.items().size(), table->columns.size());
    for (size_t i = 0; i < table->columns.size(); ++i) {
      EXPECT_EQ(columns.items()[i].Find("Name")->AsString(), table->columns[i].name);
      EXPECT_EQ(columns.items()[i].Find("Type")->AsString(), table->columns[i].type);
      // ... which is what `ddl` prints.
      EXPECT_THAT(ddl->create_table, HasSubstr(fmt::format("`{}` {}", table->columns[i].name, table->columns[i].type)));
    }
    EXPECT_EQ(input.FindPath({"PartitionKeys"})->items().size(), 2u);
    const TemplateValue& params = *input.Find("Parameters");
    for (const auto& [k, v] : table->properties) {
      ASSERT_NE(params.Find(k), nullptr) << k;
      std::string resolved = Resolve(*params.Find(k), kPseudo);
      EXPECT_EQ(resolved, v) << k;  // with the default bucket, exactly the DDL's value
      EXPECT_THAT(ddl->create_table, HasSubstr(fmt::format("'{}' = '{}'", k, v)));
    }
    EXPECT_EQ(Resolve(*params.Find("storage.location.template"), kPseudo),
              std::string(layout) == "hive" ? "s3://archive-bucket/dlq/queue=${dlq}/dt=${dt}/"
                                            : "s3://archive-bucket/dlq/${dlq}/${dt}/");
    EXPECT_EQ(Resolve(*input.FindPath({"StorageDescriptor", "Location"}), kPseudo), "s3://archive-bucket/dlq/");
    // Another bucket given as the parameter moves the table with it.
    auto other = kPseudo;
    other["ArchiveBucket"] = "elsewhere";
    EXPECT_EQ(Resolve(*input.FindPath({"StorageDescriptor", "Location"}), other), "s3://elsewhere/dlq/");
  }
}

TEST(StackTest, BadInputIsAClearError) {
  MonitorConfig two = Config(R"(
groups:
  - name: a
    destination: s3://bucket-a/dlq
    queues: [qa]
  - name: b
    destination: s3://bucket-b/dlq
    queues: [qb]
)");
  auto mixed =
      GenerateStack(two, {Queue("qa", 14 * kDay, 4 * kDay, "a"), Queue("qb", 14 * kDay, 4 * kDay, "b")}, Options());
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(mixed.status().message(), HasSubstr("groups a and b differ in destination"));
  EXPECT_THAT(mixed.status().message(), HasSubstr("--group NAME"));

  MonitorConfig c = Config(kOneGroup);
  std::vector<StackQueue> q = {Queue("orders-dlq", 14 * kDay, 4 * kDay)};
  auto expect_error = [&](StackOptions o, const std::string& what) {
    auto r = GenerateStack(c, q, o);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(what));
  };
  StackOptions o = Options();
  o.lambda_code = "";
  expect_error(o, "--lambda-code");
  o = Options();
  o.schedule = "every 5 minutes";
  expect_error(o, "--schedule 'every 5 minutes'");
  o.schedule = "rate(1 minutes)";
  expect_error(o, "singular for 1");
  o = Options();
  o.policy = "newest";
  expect_error(o, "--policy 'newest'");
  o = Options();
  o.vpc_subnets = {"subnet-1"};
  expect_error(o, "--vpc-security-groups");
  o = Options();
  o.expiration_days = 10;
  o.transition_days = 30;
  expect_error(o, "--expiration-days 10 must be later");

  auto none = GenerateStack(c, {}, Options());
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no queue"));

  MonitorConfig local = Config(R"(
groups:
  - name: main
    destination: file:///var/lib/dlq-archive
    queues: [orders-dlq]
)");
  auto l = GenerateStack(local, q, Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("not s3://"));

  // 130 queues x (2 alarms + 2 permissions) is more than CloudFormation takes.
  std::vector<StackQueue> many;
  for (int i = 0; i < 130; ++i) many.push_back(Queue(fmt::format("q{}", i), 14 * kDay, 4 * kDay));
  auto big = GenerateStack(c, many, Options());
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("more than CloudFormation's 500"));
}

TEST(StackTest, AQueueOfNoConfigGroupIsAnErrorValue) {
  MonitorConfig c = Config(kOneGroup);
  for (const std::vector<StackQueue>& queues :
       {std::vector<StackQueue>{Queue("stray-dlq", 14 * kDay, 4 * kDay, "nope")},
        std::vector<StackQueue>{Queue("orders-dlq", 14 * kDay, 4 * kDay),
                                Queue("stray-dlq", 14 * kDay, 4 * kDay, "nope")}}) {
    auto r = GenerateStack(c, queues, Options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("queue stray-dlq: no group nope"));
  }
}

TEST(StackTest, ConfiguredQueuesWithoutDiscovery) {
  MonitorConfig c = Config(R"(
groups:
  - name: partner
    destination: s3://archive-bucket/dlq
    role_arn: arn:aws:iam::210987654321:role/reader
    queues: [jobs.fifo, https://sqs.eu-west-1.amazonaws.com/210987654321/orders-dlq, skipped-dlq]
    exclude: [skipped-dlq]
)");
  auto qs = StackQueuesFromConfig(c.groups[0], 14 * kDay, 4 * kDay);
  ASSERT_TRUE(qs.ok()) << qs.status().ToString();
  ASSERT_EQ(qs->size(), 2u);  // the excluded one is left out
  EXPECT_EQ((*qs)[0].name, "jobs.fifo");
  EXPECT_TRUE((*qs)[0].fifo);
  EXPECT_EQ((*qs)[0].account_id, "210987654321");  // the role's account
  EXPECT_EQ((*qs)[0].retention, 14 * kDay);
  EXPECT_FALSE((*qs)[0].discovered);
  EXPECT_EQ((*qs)[1].name, "orders-dlq");
  EXPECT_EQ((*qs)[1].url, "https://sqs.eu-west-1.amazonaws.com/210987654321/orders-dlq");
  EXPECT_FALSE((*qs)[1].SameAccount());

  GroupConfig bad = c.groups[0];
  bad.queues = {"https://sqs.eu-west-1.amazonaws.com/orders-dlq"};
  auto b = StackQueuesFromConfig(bad, 14 * kDay, 4 * kDay);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("does not end in /ACCOUNT/NAME"));
}

TEST(StackTest, ExternalIdIsRefusedBecauseTheRuntimeCannotPassIt) {
  MonitorConfig c = Config(R"(
groups:
  - name: partner
    destination: s3://archive-bucket/dlq
    role_arn: arn:aws:iam::210987654321:role/reader
    external_id: secret-ish
    queues: [orders-dlq]
)");
  StackQueue q = Queue("orders-dlq", 14 * kDay, 4 * kDay, "partner");
  q.role_arn = c.groups[0].role_arn;
  auto s = GenerateStack(c, {q}, Options());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("group partner uses external_id"));
  EXPECT_THAT(s.status().message(), Not(HasSubstr("secret-ish")));
}

TEST(StackTest, KmsAliasScopesTheStatementByTheAliasCondition) {
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    sse: aws:kms
    sse_kms_key_id: alias/dlq-archive
    queues: [orders-dlq]
)");
  StackOptions o = Options();
  o.create_bucket = true;
  GeneratedStack s = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, o);
  const TemplateValue& st = *Statements(s)["EncryptArchiveObjects"];
  // No ARN names an alias in IAM: the account's keys, only those carrying the alias.
  EXPECT_THAT(ResourceTexts(st), ElementsAre("arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*"));
  EXPECT_EQ(st.FindPath({"Condition", "ForAnyValue:StringEquals", "kms:ResourceAliases"})->AsString(),
            "alias/dlq-archive");
  const TemplateValue& enc = Resource(s, "ArchiveBucket")
                                 .FindPath({"Properties", "BucketEncryption", "ServerSideEncryptionConfiguration"})
                                 ->items()
                                 .at(0);
  EXPECT_EQ(Resolve(*enc.FindPath({"ServerSideEncryptionByDefault", "KMSMasterKeyID"}), kPseudo),
            "arn:aws:kms:us-east-1:123456789012:alias/dlq-archive");

  // The same for an alias ARN: its own account and region.
  c.groups[0].put.sse_kms_key_id = "arn:aws:kms:eu-west-1:111122223333:alias/archive";
  GeneratedStack a = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, o);
  EXPECT_THAT(ResourceTexts(*Statements(a)["EncryptArchiveObjects"]),
              ElementsAre("arn:aws:kms:eu-west-1:111122223333:key/*"));
  // With a key ARN there is nothing to condition on.
  c.groups[0].put.sse_kms_key_id = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab";
  GeneratedStack k = Generate(c, {Queue("orders-dlq", 14 * kDay, 4 * kDay)}, o);
  EXPECT_EQ(Statements(k)["EncryptArchiveObjects"]->Find("Condition"), nullptr);
}

// --- The command, with discovery over a fake SQS ---------------------------

TEST(StackCommandTest, DiscoveredRetentionsDecideTheThreshold) {
  FakeClock clock(FromUnixMillis(1757500000000));
  FakeQueueClient sqs(clock);
  ASSERT_TRUE(sqs.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "1209600"}}).ok());
  auto src = sqs.CreateQueue("orders", {{"MessageRetentionPeriod", "345600"}});
  ASSERT_TRUE(src.ok());
  ASSERT_TRUE(
      sqs.SetQueueAttributes(*src, {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:)"
                                                      R"(orders-dlq","maxReceiveCount":3})"}})
          .ok());
  MonitorConfig c = Config(R"(
groups:
  - name: main
    destination: s3://archive-bucket/dlq
    discover: true
)");
  int factory_calls = 0;
  GroupClientsFactory factory = [&](const GroupConfig&) -> Result<GroupClients> {
    ++factory_calls;
    GroupClients g;
    g.sqs = &sqs;
    return g;
  };
  StackCommandOptions o;
  o.stack = Options();
  std::string out, err;
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_EQ(factory_calls, 1);
  YAML::Node t = YAML::Load(out);
  const std::string id = "ExpiryAlarmOrdersDlq" + Sha256Hex("orders-dlq").substr(0, 8);
  ASSERT_TRUE(t["Resources"][id].IsDefined()) << out;
  EXPECT_EQ(t["Resources"][id]["Properties"]["Threshold"].as<double>(), 864000.0 - 240 - 2000 - 3600);
  EXPECT_THAT(t["Resources"][id]["Properties"]["AlarmDescription"].as<std::string>(), HasSubstr("read from SQS"));

  // --no-discovery: no SQS call; the named queue with the assumed retentions.
  MonitorConfig named = Config(kOneGroup);
  o.no_discovery = true;
  o.assumed_retention = "14d";
  o.assumed_source_retention = "4d";
  o.output = "json";
  out.clear();
  err.clear();
  ASSERT_EQ(RunStack(o, named, factory, out, err), 0) << err;
  EXPECT_EQ(factory_calls, 1);
  YAML::Node j = YAML::Load(out);  // JSON is YAML
  EXPECT_EQ(j["Resources"][id]["Properties"]["Threshold"].as<double>(), 864000.0 - 240 - 2000 - 3600);
  EXPECT_THAT(j["Resources"][id]["Properties"]["AlarmDescription"].as<std::string>(), HasSubstr("assumed"));

  // Prefix/discover groups with --no-discovery are named in a warning.
  out.clear();
  err.clear();
  EXPECT_EQ(RunStack(o, c, factory, out, err), 2);
  EXPECT_THAT(err, HasSubstr("group main: prefixes, regex and discover are not evaluated"));
  EXPECT_THAT(err, HasSubstr("no queue"));
}

// The bucket is checked (HeadBucket) against --create-bucket: a missing bucket
// without it, or an existing one with it, would deploy something broken.
TEST(StackCommandTest, BucketMissingOrAlreadyThereIsNamedBeforeDeploying) {
  FakeClock clock(FromUnixMillis(1757500000000));
  FakeQueueClient sqs(clock);
  ASSERT_TRUE(sqs.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "1209600"}}).ok());
  FakeObjectStore store("fake://archive-bucket", &clock);
  MonitorConfig c = Config(kOneGroup);
  GroupClientsFactory factory = [&](const GroupConfig&) -> Result<GroupClients> {
    GroupClients g;
    g.sqs = &sqs;
    g.store = &store;
    return g;
  };
  StackOptions so = Options();
  StackCommandOptions o;
  o.stack = so;
  std::string out, err;

  // Exists, and the stack uses it: nothing to say.
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_THAT(err, Not(HasSubstr("bucket")));

  // Missing, and the stack does not create it.
  store.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket): check the name"));
  out.clear();
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_THAT(err, HasSubstr("warning: group main: bucket s3://archive-bucket does not exist"));
  EXPECT_THAT(err, HasSubstr("deploy with --create-bucket, or create the bucket first"));
  EXPECT_FALSE(out.empty()) << "the template is still printed";

  // Missing, and the stack creates it: as it should be.
  o.stack.create_bucket = true;
  store.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket): check the name"));
  err.clear();
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_THAT(err, Not(HasSubstr("bucket")));

  // Exists, and the stack would create it again.
  err.clear();
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_THAT(err, HasSubstr("already exists, and --create-bucket makes the stack create it"));

  // The check itself failing is said, not taken for either answer.
  store.FailNextCheck(Unavailable("HeadBucket archive-bucket: connection refused"));
  err.clear();
  ASSERT_EQ(RunStack(o, c, factory, out, err), 0) << err;
  EXPECT_THAT(err, HasSubstr("could not be checked: "));
  EXPECT_THAT(err, HasSubstr("connection refused"));
}

TEST(StackCommandTest, FailuresExitWithTheirCodes) {
  MonitorConfig c = Config(kOneGroup);
  GroupClientsFactory failing = [](const GroupConfig&) -> Result<GroupClients> {
    return Unavailable("GetQueueUrl orders-dlq: connection refused");
  };
  StackCommandOptions o;
  o.stack = Options();
  std::string out, err;
  EXPECT_EQ(RunStack(o, c, failing, out, err), 1);
  EXPECT_THAT(err, HasSubstr("connection refused"));
  EXPECT_TRUE(out.empty());

  o.groups = {"nope"};
  err.clear();
  EXPECT_EQ(RunStack(o, c, failing, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--group nope"));

  o.groups.clear();
  o.no_discovery = true;
  o.stack.lambda_code = "https://example.com/zip";
  err.clear();
  EXPECT_EQ(RunStack(o, c, failing, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--lambda-code"));
  EXPECT_TRUE(out.empty());
}

TEST(StackCommandTest, OnlyTheVariablesTheStackUsesMustBeSet) {
  const std::string path = ::testing::TempDir() + "/stack-env-" + std::to_string(::getpid()) + ".yaml";
  auto load = [&](const std::string& yaml, const MapEnvironment& env) {
    { std::ofstream(path) << yaml; }
    return LoadStackConfig(path, env);
  };
  // Webhook secrets and dashboard tokens: the template uses neither.
  const std::string secrets = R"(
dashboard: { write_token: "${DLQ_DASHBOARD_TOKEN}", read_token: "${DLQ_READ_TOKEN}" }
notify:
  webhooks:
    - url: "${WEBHOOK_URL}"
      headers: { Authorization: "Bearer ${WEBHOOK_TOKEN}" }
groups:
  - name: main
    destination: s3://${BUCKET}/dlq
    role_arn: "arn:aws:iam::${ACCOUNT}:role/reader"
    queues: [orders-dlq]
)";
  auto c = load(secrets, MapEnvironment{{"BUCKET", "archive-bucket"}, {"ACCOUNT", "210987654321"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->groups[0].destination, "s3://archive-bucket/dlq");
  EXPECT_EQ(c->groups[0].role_arn, "arn:aws:iam::210987654321:role/reader");
  // The daemon still needs them.
  EXPECT_FALSE(LoadMonitorConfig(path, MapEnvironment{{"BUCKET", "archive-bucket"}, {"ACCOUNT", "210987654321"}}).ok());

  // A variable the stack uses must be set, and the error says where it is used.
  auto missing = load(secrets, MapEnvironment{{"ACCOUNT", "210987654321"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("environment variable BUCKET is not set"));
  missing = load(secrets, MapEnvironment{{"BUCKET", "archive-bucket"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("environment variable ACCOUNT is not set"));
  // A bad config is reported as the daemon reports it.
  auto bad = load("groups: []\n", MapEnvironment());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("at least one group is required"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dlq
