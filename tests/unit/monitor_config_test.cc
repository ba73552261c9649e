#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "aws/environment.h"
#include "monitor/config.h"

namespace dlq {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

const char* kExamplePath = DLQ_TESTDATA_DIR "/../../examples/dlq-archive.yaml";

// A minimal valid config with one extra block spliced in at the top level and
// one into the group.
std::string Config(const std::string& top = "", const std::string& group = "") {
  return "defaults:\n"
         "  destination: s3://bucket/pfx\n" +
         top +
         "groups:\n"
         "  - name: g1\n"
         "    queues: [orders-dlq]\n" +
         group;
}

std::string ErrorsOf(const std::string& text, const Environment& env = MapEnvironment()) {
  auto r = ParseMonitorConfig(text, "dlq-archive.yaml", env);
  EXPECT_FALSE(r.ok()) << "expected errors for:\n" << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  return r.status().message();
}

TEST(MonitorConfigTest, UnknownGroupRegionIsReportedAtItsLineEvenWithAnEndpoint) {
  const std::string text = Config("", "    endpoint_url: http://127.0.0.1:5000\n    region: us-est-1\n");
  EXPECT_EQ(ErrorsOf(text),
            "dlq-archive.yaml:7:13: groups[0].region: unknown region 'us-est-1': did you mean "
            "'us-east-1'? (a region not in dlq-archive's table needs "
            "DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1)");
  EXPECT_TRUE(
      ParseMonitorConfig(text, "dlq-archive.yaml", MapEnvironment{{"DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION", "1"}}).ok());
  EXPECT_TRUE(ParseMonitorConfig(Config("", "    region: eu-west-1\n"), "dlq-archive.yaml", MapEnvironment()).ok());
}

TEST(MonitorConfigTest, GroupPriorityIsParsedAndBounded) {
  auto r = ParseMonitorConfig(Config("", "    priority: 10\n"), "dlq-archive.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->groups[0].priority, 10);
  EXPECT_THAT(ErrorsOf(Config("", "    priority: 5000\n")), HasSubstr("groups[0].priority"));
}

TEST(MonitorConfigTest, ParsesTheShippedExample) {
  MapEnvironment env{{"WEBHOOK_TOKEN", "s3cret"}};
  auto r = LoadMonitorConfig(kExamplePath, env);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MonitorConfig& c = *r;
  EXPECT_EQ(c.listen_host, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 9464);
  EXPECT_EQ(c.collection_interval, seconds(60));
  EXPECT_EQ(c.sweep_interval, seconds(300));
  EXPECT_EQ(c.discovery_interval, seconds(600));
  EXPECT_EQ(c.concurrency_global, 8);
  EXPECT_EQ(c.concurrency_per_queue, 2);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  ASSERT_EQ(c.webhooks.size(), 1u);
  EXPECT_EQ(c.webhooks[0].url, "http://127.0.0.1:9000/hook");
  EXPECT_EQ(c.webhooks[0].headers.at("Authorization"), "Bearer s3cret");
  EXPECT_EQ(c.webhooks[0].timeout, seconds(5));
  ASSERT_EQ(c.groups.size(), 3u);

  const GroupConfig& us = c.groups[0];
  EXPECT_EQ(us.name, "prod-us");
  EXPECT_EQ(us.region, "us-east-1");
  EXPECT_EQ(us.profile, "prod");
  EXPECT_EQ(us.queues,
            (std::vector<std::string>{"orders-dlq", "https://sqs.us-east-1.amazonaws.com/123456789012/payments-dlq"}));
  EXPECT_EQ(us.prefixes, std::vector<std::string>{"prod-"});
  EXPECT_EQ(us.regex, "-dlq$");
  EXPECT_TRUE(us.discover);
  EXPECT_EQ(us.exclude, std::vector<std::string>{"legacy-dlq"});
  EXPECT_EQ(us.destination, "s3://my-archive/dlq-archive");
  EXPECT_EQ(us.put.sse, "aws:kms");
  EXPECT_EQ(us.put.sse_kms_key_id, "alias/dlq-archive");
  EXPECT_EQ(us.put.storage_class, "STANDARD_IA");
  EXPECT_EQ(us.batch.max_messages, 10000u);
  EXPECT_EQ(us.batch.max_bytes, 8u << 20);
  EXPECT_EQ(us.batch.max_age, std::chrono::milliseconds(30000));
  EXPECT_EQ(us.batch.gzip_level, 1);
  EXPECT_EQ(us.visibility_timeout, seconds(120));
  EXPECT_EQ(us.receivers, 4);
  EXPECT_TRUE(us.policy_by_alarm);  // select: auto
  EXPECT_EQ(us.alarms.expiry.action, AlarmSettings::Action::kArchive);
  EXPECT_EQ(us.alarms.depth.action, AlarmSettings::Action::kNotify);
  EXPECT_FALSE(us.cloudwatch_age);
  EXPECT_TRUE(us.alarms.expiry.threshold_auto);
  EXPECT_EQ(us.alarms.expiry.safety_margin, seconds(3600));
  EXPECT_EQ(us.alarms.depth.period, seconds(300));
  EXPECT_EQ(us.alarms.depth.datapoints_to_alarm, 3);
  EXPECT_EQ(us.alarms.depth.treat_missing_data, AlarmSettings::MissingData::kNotBreaching);

  const GroupConfig& eu = c.groups[1];
  EXPECT_EQ(eu.role_arn, "arn:aws:iam::210987654321:role/dlq-archive");
  EXPECT_EQ(eu.external_id, "dlq-archive-prod");
  EXPECT_EQ(eu.destination, "s3://partner-archive/dlq");
  EXPECT_EQ(eu.DestinationPrefix(), "dlq");
  EXPECT_EQ(eu.put.storage_class, "GLACIER_IR");
  EXPECT_EQ(eu.policy.kind, SelectionKind::kAll);
  EXPECT_FALSE(eu.policy_by_alarm);  // the reference design's behaviour
  EXPECT_TRUE(eu.cloudwatch_age);
  EXPECT_EQ(eu.alarms.expiry.safety_margin, seconds(6 * 3600));  // overridden
  EXPECT_EQ(eu.alarms.expiry.period, seconds(60));               // inherited from defaults
  EXPECT_EQ(eu.put.sse, "aws:kms");                              // inherited

  const GroupConfig& local = c.groups[2];
  EXPECT_EQ(local.endpoint_url, "http://127.0.0.1:9324");
  EXPECT_EQ(local.destination, "file:///var/lib/dlq-archive");
  EXPECT_EQ(local.put.sse, "");
  EXPECT_TRUE(local.allow_empty);
}

TEST(MonitorConfigTest, BuiltInDefaultsApplyWhenNothingIsSet) {
  auto r = ParseMonitorConfig(Config(), "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GroupConfig& g = r->groups[0];
  EXPECT_EQ(r->listen_port, 9464);
  EXPECT_EQ(g.key_template_text, "default");
  EXPECT_EQ(g.batch.max_bytes, DrainOptions::DefaultBatchLimits().max_bytes);
  EXPECT_TRUE(g.policy_by_alarm);
  EXPECT_TRUE(g.alarms.expiry.enabled);
  // doc/configuration.md and doc/alarms.md give these same defaults.
  EXPECT_EQ(g.alarms.expiry.period, seconds(60));
  EXPECT_EQ(g.alarms.expiry.evaluation_periods, 1);
  EXPECT_EQ(g.alarms.expiry.treat_missing_data, AlarmSettings::MissingData::kMissing);
  EXPECT_EQ(g.alarms.expiry.action, AlarmSettings::Action::kArchive);
  EXPECT_EQ(g.alarms.depth.period, seconds(300));
  EXPECT_EQ(g.alarms.depth.treat_missing_data, AlarmSettings::MissingData::kNotBreaching);
  EXPECT_EQ(g.alarms.depth.action, AlarmSettings::Action::kNotify);
  EXPECT_FALSE(g.allow_empty);
  EXPECT_TRUE(g.alarms.expiry.threshold_auto);
  EXPECT_EQ(g.alarms.depth.threshold, 1);
  EXPECT_EQ(g.alarms.depth.evaluation_periods, 3);
  EXPECT_TRUE(g.put.create_only);
}

TEST(MonitorConfigTest, GroupOverridesOneNestedFieldAndInheritsTheRest) {
  auto r = ParseMonitorConfig(Config("  batch: { max_messages: 500, max_bytes: 512KiB }\n"
                                     "  key_template: hive\n",
                                     "    batch: { max_bytes: 2MiB }\n"
                                     "    receivers: 8\n"),
                              "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GroupConfig& g = r->groups[0];
  EXPECT_EQ(g.batch.max_messages, 500u);   // from defaults
  EXPECT_EQ(g.batch.max_bytes, 2u << 20);  // overridden
  EXPECT_EQ(g.receivers, 8);
  EXPECT_EQ(g.key_template.text(), kHiveKeyTemplate);
  EXPECT_EQ(r->defaults.batch.max_bytes, 512u << 10);
  DrainOptions o = g.ToDrainOptions();
  EXPECT_EQ(o.prefix, "pfx");
  EXPECT_EQ(o.batch.max_bytes, 2u << 20);
  EXPECT_EQ(o.receivers, 8);
  EXPECT_TRUE(o.adaptive_receivers);  // as many of the 8 as raise the rate
  EXPECT_TRUE(o.Validate().ok()) << o.Validate().message();
}

TEST(MonitorConfigTest, FixedReceiversReceiveWithAllOfThem) {
  auto r = ParseMonitorConfig(Config("  fixed_receivers: true\n", "    receivers: 6\n"), "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  DrainOptions o = r->groups[0].ToDrainOptions();
  EXPECT_EQ(o.receivers, 6);
  EXPECT_FALSE(o.adaptive_receivers);
  EXPECT_EQ(ErrorsOf(Config("", "    fixed_receivers: sometimes\n")),
            "dlq-archive.yaml:6:22: groups[0].fixed_receivers: \"sometimes\" is not a boolean (true or false)");
}

TEST(MonitorConfigTest, BadDurationNamesFileLineColumnAndField) {
  std::string text = Config("", "    alarms:\n      expiry: { period: 5x }\n");
  EXPECT_EQ(ErrorsOf(text),
            "dlq-archive.yaml:7:25: groups[0].alarms.expiry.period: \"5x\" is not a duration (e.g. 60s, 5m)");
}

TEST(MonitorConfigTest, UnknownFieldSuggestsTheClosestName) {
  std::string errors = ErrorsOf(Config("", "    alarms:\n      depth:\n        evalution_periods: 3\n"));
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:8:9: groups[0].alarms.depth: unknown field 'evalution_periods' "
                                "(did you mean 'evaluation_periods'?)"));
  EXPECT_THAT(ErrorsOf("listn: 1.2.3.4:1\n" + Config()),
              HasSubstr("dlq-archive.yaml:1:1: unknown field 'listn' (did you mean 'listen'?)"));
  EXPECT_THAT(ErrorsOf(Config("  role_arn: arn:aws:iam::123456789012:role/x\n")),
              HasSubstr("defaults: field 'role_arn' can only be set in a group"));
}

TEST(MonitorConfigTest, ReportsEveryErrorTogetherInLineOrder) {
  std::string text =
      "listen: nowhere\n"
      "collection_interval: soon\n"
      "log: { level: loud }\n"
      "defaults:\n"
      "  destination: ftp://x\n"
      "  sse: rot13\n"
      "groups:\n"
      "  - name: a\n"
      "    regex: \"([\"\n"
      "  - name: a\n"
      "    queues: [ok]\n";
  std::string errors = ErrorsOf(text);
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= errors.size();) {
    size_t nl = errors.find('\n', pos);
    if (nl == std::string::npos) nl = errors.size();
    lines.push_back(errors.substr(pos, nl - pos));
    pos = nl + 1;
  }
  ASSERT_GE(lines.size(), 7u) << errors;
  EXPECT_THAT(lines[0], HasSubstr("dlq-archive.yaml:1:9: listen:"));
  EXPECT_THAT(lines[1], HasSubstr("dlq-archive.yaml:2:22: collection_interval: \"soon\" is not a duration"));
  EXPECT_THAT(lines[2], HasSubstr("dlq-archive.yaml:3:15: log.level: \"loud\" is not one of"));
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:5:16: defaults.destination: destination 'ftp://x' must be"));
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:6:8: defaults.sse: \"rot13\" is not one of"));
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:9:12: groups[0].regex: \"([\": not a valid regular expression"));
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:10:11: groups[1].name: duplicate group name 'a'"));
  EXPECT_THAT(errors, HasSubstr("groups[0]: destination is required"));
}

TEST(MonitorConfigTest, RejectsEachBadValue) {
  struct Case {
    std::string top, group, expected;
  };
  const Case cases[] = {
      {"", "    receivers: many\n", "groups[0].receivers: \"many\" is not a whole number"},
      {"", "    receivers: 100\n", "groups[0].receivers: 100 is out of range [1, 64]"},
      {"", "    batch: { max_bytes: 8XB }\n", "groups[0].batch.max_bytes: \"8XB\" is not a size"},
      {"", "    batch: [1]\n", "groups[0].batch: expected a mapping"},
      {"", "    discover: maybe\n", "groups[0].discover: \"maybe\" is not a boolean"},
      {"", "    policy: { select: newest }\n", "groups[0].policy.select: \"newest\" is not one of auto, all"},
      {"", "    policy: { select: older-than }\n", "groups[0].policy.window: a positive window is required"},
      {"", "    key_template: \"{prefix}/{queue}.gz\"\n", "groups[0].key_template:"},
      {"", "    storage_class: COLD\n", "groups[0].storage_class: \"COLD\" is not an S3 storage class"},
      {"", "    sse: AES256\n    sse_kms_key_id: alias/k\n", "groups[0].sse_kms_key_id: needs sse: aws:kms"},
      {"", "    role_arn: arn:aws:iam::12:user/x\n",
       "groups[0].role_arn: \"arn:aws:iam::12:user/x\" is not an IAM role"},
      {"", "    external_id: abc\n", "groups[0].external_id: needs role_arn"},
      {"", "    endpoint_url: localhost:9324\n", "groups[0].endpoint_url: \"localhost:9324\" is not an http"},
      {"", "    prefixes: [\"bad name!\"]\n", "groups[0].prefixes[0]: \"bad name!\" is not a queue name prefix"},
      {"", "    exclude: [\"https://\"]\n", "groups[0].exclude[0]: \"https://\" is not a queue name or URL"},
      {"", "    alarms: { depth: { evaluation_periods: 2, datapoints_to_alarm: 3 } }\n",
       "groups[0].alarms.depth.datapoints_to_alarm: 3 is more than evaluation_periods (2)"},
      {"", "    alarms: { depth: { period: 30s } }\n",
       "groups[0].alarms.depth.period: 30s is shorter than collection_interval (1m)"},
      {"", "    cloudwatch_age: true\n    alarms: { expiry: { period: 90s } }\n",
       "groups[0].alarms.expiry.period: 1m30s is not a multiple of 60s (CloudWatch"},
      {"", "    alarms: { depth: { threshold: auto } }\n", "auto is only for the expiry alarm"},
      {"", "    alarms: { depth: { safety_margin: 1h } }\n",
       "groups[0].alarms.depth: field 'safety_margin' can only be set on the expiry alarm"},
      {"", "    alarms: { expiry: { treat_missing_data: zero } }\n", "\"zero\" is not one of missing, breaching"},
      {"listen: \"127.0.0.1:99999\"\n", "", "listen: \"127.0.0.1:99999\" is not HOST:PORT with a port in 0..65535"},
      {"concurrency: { global: 2, per_queue: 4 }\n", "",
       "concurrency.per_queue: 4 is more than concurrency.global (2)"},
      {"notify: { webhooks: [ { url: ftp://x } ] }\n", "", "notify.webhooks[0].url: \"ftp://x\" is not an http"},
      {"", "    region: US_EAST\n", "groups[0].region: \"US_EAST\" is not a region name"},
      {"", "    regex: '(a)\\1'\n",
       "groups[0].regex: \"(a)\\1\": backreferences (\\1) are not supported; patterns use RE2 syntax"},
      {"", "    regex: '^orders-(?!test)'\n", "groups[0].regex: \"^orders-(?!test)\": lookahead assertions ((?!)"},
  };
  for (const Case& c : cases) {
    // `top` keys are top-level: put them before defaults.
    std::string text = c.top + Config("", c.group);
    EXPECT_THAT(ErrorsOf(text), HasSubstr(c.expected)) << text;
  }
}

TEST(MonitorConfigTest, InheritedInconsistencyIsReportedOnceAtDefaults) {
  std::string text =
      "defaults:\n"
      "  destination: file:///tmp/x\n"
      "  alarms: { depth: { evaluation_periods: 1 } }\n"
      "groups:\n"
      "  - { name: a, discover: true }\n"
      "  - { name: b, discover: true }\n";
  std::string errors = ErrorsOf(text);
  EXPECT_EQ(errors,
            "dlq-archive.yaml:3:42: defaults.alarms.depth.datapoints_to_alarm: 3 is more than evaluation_periods (1)");
}

TEST(MonitorConfigTest, GroupErrorOnInheritedValuePointsAtDefaults) {
  std::string text =
      "defaults:\n"
      "  destination: file:///tmp/x\n"
      "  alarms: { depth: { datapoints_to_alarm: 2 } }\n"
      "groups:\n"
      "  - { name: a, discover: true, alarms: { depth: { evaluation_periods: 1 } } }\n";
  EXPECT_EQ(ErrorsOf(text),
            "dlq-archive.yaml:3:43: groups[0].alarms.depth.datapoints_to_alarm: 2 is more than evaluation_periods "
            "(1) (value from defaults.alarms.depth.datapoints_to_alarm)");
}

TEST(MonitorConfigTest, GroupSelectingNothingIsAnError) {
  EXPECT_THAT(ErrorsOf("defaults: { destination: s3://b }\ngroups:\n  - name: empty\n    discover: false\n"),
              HasSubstr("dlq-archive.yaml:3:5: groups[0]: selects no queues: set queues, prefixes, regex or "
                        "discover: true"));
  EXPECT_THAT(ErrorsOf("defaults: { destination: s3://b }\ngroups: []\n"),
              HasSubstr("groups: at least one group is required"));
  EXPECT_THAT(ErrorsOf(""), HasSubstr("dlq-archive.yaml:1:1: the file is empty"));
}

TEST(MonitorConfigTest, ExpandsEnvironmentVariables) {
  MapEnvironment env{{"BUCKET", "arch"}, {"TOKEN", "t0p"}};
  auto r = ParseMonitorConfig(
      "notify: { webhooks: [ { url: 'http://h/x', headers: { X-Token: '${TOKEN}', X-Lit: 'a$${B}' } } ] }\n"
      "defaults: { destination: 's3://${BUCKET}/p' }\n"
      "groups: [ { name: g, discover: true } ]\n",
      "c.yaml", env);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->groups[0].destination, "s3://arch/p");
  EXPECT_EQ(r->webhooks[0].headers.at("X-Token"), "t0p");
  EXPECT_EQ(r->webhooks[0].headers.at("X-Lit"), "a${B}");
}

TEST(MonitorConfigTest, WebhookNotifyOnStartupIsOffUnlessSet) {
  auto r = ParseMonitorConfig(Config("notify: { webhooks: [ { url: 'http://h/a' },\n"
                                     "                      { url: 'http://h/b', notify_on_startup: true } ] }\n"),
                              "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->webhooks.size(), 2u);
  EXPECT_FALSE(r->webhooks[0].notify_on_startup);
  EXPECT_TRUE(r->webhooks[1].notify_on_startup);
  EXPECT_THAT(ErrorsOf(Config("notify: { webhooks: [ { url: 'http://h/a', notify_on_startup: maybe } ] }\n")),
              HasSubstr("dlq-archive.yaml:3:63: notify.webhooks[0].notify_on_startup: \"maybe\" is not a boolean"));
}

TEST(MonitorConfigTest, MissingVariableIsNamedAndSecretsNeverAppear) {
  MapEnvironment env{{"TOKEN", "hunter2"}};
  std::string errors = ErrorsOf(
      "notify:\n"
      "  webhooks:\n"
      "    - url: http://h/x\n"
      "      headers: { Authorization: 'Bearer ${MISSING_TOKEN}', X-A: 'hunter2 ${', X-B: [hunter2] }\n" +
          Config(),
      env);
  EXPECT_THAT(errors, HasSubstr("dlq-archive.yaml:4:33: notify.webhooks[0].headers.Authorization: environment "
                                "variable MISSING_TOKEN is not set"));
  EXPECT_THAT(errors, HasSubstr("notify.webhooks[0].headers.X-A: unterminated ${"));
  EXPECT_THAT(errors, HasSubstr("notify.webhooks[0].headers.X-B: expected a string"));
  EXPECT_THAT(errors, Not(HasSubstr("hunter2")));
  EXPECT_THAT(errors, Not(HasSubstr("Bearer")));
}

TEST(MonitorConfigTest, SyntaxErrorNamesTheLine) {
  EXPECT_THAT(ErrorsOf("groups:\n  - name: a\n   bad: [\n"), HasSubstr("dlq-archive.yaml:"));
  EXPECT_THAT(ErrorsOf("groups: [\n"), HasSubstr("YAML syntax error"));
}

TEST(MonitorConfigTest, DuplicateKeysAreErrors) {
  EXPECT_THAT(ErrorsOf(Config("", "    receivers: 2\n    receivers: 3\n")),
              HasSubstr("groups[0]: field 'receivers' is given twice"));
}

TEST(MonitorConfigTest, RejectsDeeplyNestedDocumentsBeforeParsing) {
  std::string deep = "listen: " + std::string(100000, '[') + "\n";
  EXPECT_THAT(ErrorsOf(deep), HasSubstr("nested deeper than 64 levels"));
  std::string dashes;
  for (int i = 0; i < 200; ++i) dashes += "- ";
  EXPECT_THAT(ErrorsOf(dashes + "x\n"), HasSubstr("nested deeper than 64 levels"));
  std::string indented;
  for (int i = 0; i < 100; ++i) indented += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  EXPECT_THAT(ErrorsOf(indented), HasSubstr("nested deeper than 64 levels"));
}

TEST(MonitorConfigTest, ListenAcceptsIpv6AndAnyHost) {
  auto r = ParseMonitorConfig("listen: '[::1]:0'\n" + Config(), "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->listen_host, "::1");
  EXPECT_EQ(r->listen_port, 0);
  r = ParseMonitorConfig("listen: ':8080'\n" + Config(), "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->listen_host, "0.0.0.0");
  EXPECT_EQ(r->listen_port, 8080);
}

TEST(MonitorConfigTest, LoadReportsAMissingFile) {
  auto r = LoadMonitorConfig("/nonexistent/dlq-archive.yaml", MapEnvironment());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("/nonexistent/dlq-archive.yaml"));
}

TEST(MonitorConfigTest, ParsesAlarmActionsAndAllowEmpty) {
  auto r = ParseMonitorConfig(Config("  alarms: { expiry: { action: copy }, depth: { action: archive } }\n",
                                     "    allow_empty: true\n    alarms: { depth: { action: notify } }\n"),
                              "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->defaults.alarms.expiry.action, AlarmSettings::Action::kCopy);
  EXPECT_EQ(r->defaults.alarms.depth.action, AlarmSettings::Action::kArchive);
  EXPECT_EQ(r->groups[0].alarms.expiry.action, AlarmSettings::Action::kCopy);   // inherited
  EXPECT_EQ(r->groups[0].alarms.depth.action, AlarmSettings::Action::kNotify);  // overridden
  EXPECT_TRUE(r->groups[0].allow_empty);
  EXPECT_EQ(AlarmActionName(AlarmSettings::Action::kCopy), "copy");
  EXPECT_THAT(ErrorsOf(Config("  alarms: { depth: { action: delete } }\n")),
              HasSubstr("defaults.alarms.depth.action: \"delete\" is not one of notify, copy, archive"));
  EXPECT_THAT(ErrorsOf(Config("", "    allow_empty: maybe\n")), HasSubstr("groups[0].allow_empty"));
}

TEST(MonitorConfigTest, PolicySelectAutoIsTheDefaultAndTakesNoWindow) {
  auto all = ParseMonitorConfig(Config("  policy: { select: all }\n"), "c.yaml", MapEnvironment());
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_FALSE(all->groups[0].policy_by_alarm);
  auto back = ParseMonitorConfig(Config("  policy: { select: all }\n", "    policy: { select: auto }\n"), "c.yaml",
                                 MapEnvironment());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->groups[0].policy_by_alarm);
  EXPECT_THAT(ErrorsOf(Config("  policy: { window: 12h }\n")),
              HasSubstr("defaults.policy.window: is only used with select: older-than or expiring-within"));
  EXPECT_THAT(ErrorsOf(Config("  policy: { select: newest }\n")),
              HasSubstr("is not one of auto, all, older-than, expiring-within"));
}

TEST(MonitorConfigTest, EditDistanceCountsEdits) {
  EXPECT_EQ(EditDistance("evalution_periods", "evaluation_periods"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(MonitorConfigTest, DashboardFingerprintFieldsAreAListOfNames) {
  auto r =
      ParseMonitorConfig(Config("dashboard:\n  fingerprint_fields: [type, error.code]\n"), "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dashboard_fingerprint_fields, (std::vector<std::string>{"type", "error.code"}));
  auto defaults = ParseMonitorConfig(Config(), "c.yaml", MapEnvironment());
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->dashboard_fingerprint_fields.empty());  // the dashboard then uses the defaults
  EXPECT_NE(ErrorsOf(Config("dashboard:\n  fingerprint_fields: [type, \"\"]\n")).find("fingerprint_fields"),
            std::string::npos);
}

}  // namespace
}  // namespace dlq

namespace dlq {
namespace {

// A list of `uses` queue names that are all one anchored `bytes`-byte name.
std::string AliasedQueues(size_t bytes, int uses) {
  std::string text =
      "defaults:\n"
      "  destination: s3://bucket/pfx\n"
      "groups:\n"
      "  - name: g1\n"
      "    queues:\n"
      "      - &big " +
      std::string(bytes, 'q') + "\n";
  for (int i = 1; i < uses; ++i) text += "      - *big\n";
  return text;
}

TEST(MonitorConfigTest, AnAnchorUsedOverAndOverIsRefusedAtTheAnchorOnceItExpandsPastTheLimit) {
  // 1 MiB used 100 times: 100 MiB expanded from a file of about 1 MiB.
  const std::string errors = ErrorsOf(AliasedQueues(size_t{1} << 20, 100));
  EXPECT_EQ(errors.rfind(fmt::format("dlq-archive.yaml:6:"), 0), 0u) << errors.substr(0, 200);
  EXPECT_THAT(errors, HasSubstr(fmt::format("the config expands to more than {} bytes here (YAML aliases and ${{VAR}} "
                                            "references count each time they are used): refused",
                                            kMaxExpandedConfigBytes)));
  EXPECT_LT(errors.size(), 1000u);
}

TEST(MonitorConfigTest, AVariableRepeatedOverAndOverIsRefusedAtItsLineOnceItExpandsPastTheLimit) {
  MapEnvironment env{{"H", std::string(100 * 1024, 'h')}};
  std::string refs;
  for (int i = 0; i < 1000; ++i) refs += "${H}";
  const std::string errors = ErrorsOf("defaults:\n  destination: s3://bucket/pfx\n  key_template: '" + refs +
                                          "'\ngroups:\n  - name: g1\n    queues: [q]\n",
                                      env);
  EXPECT_EQ(errors.rfind("dlq-archive.yaml:3:"), 0u) << errors.substr(0, 200);
  EXPECT_THAT(errors, HasSubstr("the config expands to more than"));
}

TEST(MonitorConfigTest, AnchorsAndVariablesWithinTheLimitStillWork) {
  MapEnvironment env{{"BUCKET", "bucket"}};
  auto r = ParseMonitorConfig(
      "defaults:\n  destination: &d s3://${BUCKET}/pfx\ngroups:\n  - name: g1\n    queues: [a, b]\n"
      "  - name: g2\n    queues: [c]\n    destination: *d\n",
      "c.yaml", env);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->groups[1].destination, "s3://bucket/pfx");
}

TEST(MonitorConfigTest, AHugeUnknownFieldNameIsShownCutAndGetsNoSuggestion) {
  // An explicit key ("? "): YAML limits implicit keys to 1024 characters.
  const std::string errors = ErrorsOf(Config("  ? " + std::string(100 * 1024, 'k') + "\n  : 1\n"));
  EXPECT_THAT(errors, HasSubstr("unknown field '" + std::string(64, 'k') + "...'"));
  EXPECT_LT(errors.size(), 1000u);
}

}  // namespace
}  // namespace dlq

namespace dlq {
namespace {

// consumer_logs: GROUP for every queue, QUEUE=GROUP for one; a bad name is
// refused with the entry named.
TEST(CauseConfigTest, ConsumerLogsNameGroupsForEveryQueueOrForOne) {
  auto config = ParseMonitorConfig(
      "groups:\n"
      "  - name: orders\n"
      "    prefixes: [orders-]\n"
      "    destination: file:///tmp/x\n"
      "    causes: on\n"
      "    cause_samples: 5\n"
      "    consumer_logs: [/ecs/orders, orders-b-dlq=/eks/b]\n",
      "causes.yaml", MapEnvironment());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const GroupConfig& g = config->groups.at(0);
  EXPECT_EQ(g.causes, GroupSettings::Causes::kOn);
  EXPECT_EQ(g.cause_samples, 5);
  EXPECT_EQ(g.ConsumerLogsFor("orders-a-dlq"), (std::vector<std::string>{"/ecs/orders"}));
  EXPECT_EQ(g.ConsumerLogsFor("orders-b-dlq"), (std::vector<std::string>{"/ecs/orders", "/eks/b"}));
  EXPECT_EQ(config->groups.at(0).ConsumerLogsFor("orders-b"), (std::vector<std::string>{"/ecs/orders"}));

  auto bad = ParseMonitorConfig(
      "groups:\n  - name: orders\n    prefixes: [orders-]\n    destination: file:///tmp/x\n"
      "    consumer_logs: [\"bad group!\"]\n",
      "bad.yaml", MapEnvironment());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("consumer_logs"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("bad group!"), std::string::npos) << bad.status().message();

  auto defaults = ParseMonitorConfig("groups:\n  - name: o\n    prefixes: [o-]\n    destination: file:///tmp/x\n", "d",
                                     MapEnvironment());
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->groups.at(0).causes, GroupSettings::Causes::kAuto);
  EXPECT_EQ(defaults->groups.at(0).cause_samples, 3);
}

}  // namespace
}  // namespace dlq
