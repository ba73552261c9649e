#include "server/metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "monitor/daemon_metrics.h"

namespace dlq {
namespace {

using metrics::Registry;

// Runs `promtool check metrics` on `text`; returns its exit code and output.
std::pair<int, std::string> Promtool(const std::string& text) {
  auto dir = std::filesystem::temp_directory_path();
  std::string input = (dir / ("dlq_metrics_" + std::to_string(::getpid()) + ".prom")).string();
  std::string output = input + ".out";
  std::ofstream(input, std::ios::binary) << text;
  std::string command = "/usr/bin/promtool check metrics < " + input + " > " + output + " 2>&1";
  int rc = std::system(command.c_str());
  std::ifstream in(output);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

TEST(MetricsTest, RendersExpositionFormatGolden) {
  Registry registry;
  auto& archived =
      registry.AddCounter("dlq_archive_messages_archived_total", "Messages archived.", {"queue", "region"});
  auto& depth = registry.AddGauge("dlq_archive_queue_messages", "Messages in the queue.", {"queue", "region", "state"});
  auto& up = registry.AddGauge("dlq_archive_up", "1 while running.");
  auto& latency = registry.AddHistogram("dlq_archive_aws_request_duration_seconds", "Call latency.", {"operation"},
                                        {0.1, 0.5, 2.5});
  archived.WithLabels({"orders-dlq", "us-east-1"}).Add(3);
  archived.WithLabels({"billing-dlq", "eu-west-1"}).Inc();
  depth.WithLabels({"orders-dlq", "us-east-1", "visible"}).Set(12);
  depth.WithLabels({"orders-dlq", "us-east-1", "delayed"}).Set(0.5);
  up.WithLabels({}).Set(1);
  auto& h = latency.WithLabels({"ReceiveMessage"});
  h.Observe(0.05);
  h.Observe(0.1);  // le is inclusive
  h.Observe(1);
  h.Observe(30);

  const std::string expected =
      "# HELP dlq_archive_aws_request_duration_seconds Call latency.\n"
      "# TYPE dlq_archive_aws_request_duration_seconds histogram\n"
      "dlq_archive_aws_request_duration_seconds_bucket{operation=\"ReceiveMessage\",le=\"0.1\"} 2\n"
      "dlq_archive_aws_request_duration_seconds_bucket{operation=\"ReceiveMessage\",le=\"0.5\"} 2\n"
      "dlq_archive_aws_request_duration_seconds_bucket{operation=\"ReceiveMessage\",le=\"2.5\"} 3\n"
      "dlq_archive_aws_request_duration_seconds_bucket{operation=\"ReceiveMessage\",le=\"+Inf\"} 4\n"
      "dlq_archive_aws_request_duration_seconds_sum{operation=\"ReceiveMessage\"} 31.15\n"
      "dlq_archive_aws_request_duration_seconds_count{operation=\"ReceiveMessage\"} 4\n"
      "# HELP dlq_archive_messages_archived_total Messages archived.\n"
      "# TYPE dlq_archive_messages_archived_total counter\n"
      "dlq_archive_messages_archived_total{queue=\"billing-dlq\",region=\"eu-west-1\"} 1\n"
      "dlq_archive_messages_archived_total{queue=\"orders-dlq\",region=\"us-east-1\"} 3\n"
      "# HELP dlq_archive_queue_messages Messages in the queue.\n"
      "# TYPE dlq_archive_queue_messages gauge\n"
      "dlq_archive_queue_messages{queue=\"orders-dlq\",region=\"us-east-1\",state=\"delayed\"} 0.5\n"
      "dlq_archive_queue_messages{queue=\"orders-dlq\",region=\"us-east-1\",state=\"visible\"} 12\n"
      "# HELP dlq_archive_up 1 while running.\n"
      "# TYPE dlq_archive_up gauge\n"
      "dlq_archive_up 1\n";
  EXPECT_EQ(registry.Render(), expected);
}

TEST(MetricsTest, OmitsFamiliesWithoutSeries) {
  Registry registry;
  registry.AddCounter("a_total", "A.", {"queue"});
  registry.AddGauge("b", "B.").WithLabels({}).Set(2);
  EXPECT_EQ(registry.Render(), "# HELP b B.\n# TYPE b gauge\nb 2\n");
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(metrics::EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(metrics::EscapeHelp("say \"hi\"\\\n"), "say \"hi\"\\\\\\n");
  Registry registry;
  registry.AddGauge("g", "Line one\nline \\two.", {"queue"}).WithLabels({"we\"ird\\q\nname"}).Set(1);
  EXPECT_EQ(registry.Render(),
            "# HELP g Line one\\nline \\\\two.\n# TYPE g gauge\ng{queue=\"we\\\"ird\\\\q\\nname\"} 1\n");
}

TEST(MetricsTest, FormatsSpecialValues) {
  EXPECT_EQ(metrics::FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(metrics::FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(metrics::FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(metrics::FormatValue(42), "42");
  EXPECT_EQ(metrics::FormatValue(0.25), "0.25");
  EXPECT_EQ(metrics::FormatValue(-3), "-3");
  EXPECT_EQ(metrics::FormatValue(1e21), "1e+21");
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  Registry registry;
  auto& h = registry.AddHistogram("h_seconds", "H.", {}, {1, 2, 3}).WithLabels({});
  for (double v : {0.5, 1.5, 1.7, 2.5, 2.6, 2.7, 9.0}) h.Observe(v);
  metrics::Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{1, 3, 6, 7}));
  EXPECT_EQ(s.count, 7u);
  EXPECT_DOUBLE_EQ(s.sum, 20.5);
}

TEST(MetricsTest, CounterIgnoresNegativeAndNanAmounts) {
  Registry registry;
  auto& c = registry.AddCounter("c_total", "C.").WithLabels({});
  c.Add(2.5);
  c.Add(-1);
  c.Add(std::nan(""));
  EXPECT_DOUBLE_EQ(c.Value(), 2.5);
}

TEST(MetricsTest, HandlesAreStableAndSameLabelsShareOneSeries) {
  Registry registry;
  auto& family = registry.AddCounter("x_total", "X.", {"queue"});
  metrics::Counter* first = &family.WithLabels({"a"});
  for (int i = 0; i < 1000; ++i) family.WithLabels({"q" + std::to_string(i)}).Inc();
  EXPECT_EQ(first, &family.WithLabels({"a"}));
  EXPECT_EQ(family.size(), 1001u);
  // Registering the same family again returns it.
  EXPECT_EQ(&family, &registry.AddCounter("x_total", "X.", {"queue"}));
}

TEST(MetricsTest, RemoveLabelsStopsExportingButKeepsHandleValid) {
  Registry registry;
  auto& family = registry.AddGauge("depth", "Depth.", {"queue", "region"});
  metrics::Gauge& gone = family.WithLabels({"old-dlq", "us-east-1"});
  family.WithLabels({"kept-dlq", "us-east-1"}).Set(4);
  gone.Set(7);
  EXPECT_TRUE(family.RemoveLabels({"old-dlq", "us-east-1"}));
  EXPECT_FALSE(family.RemoveLabels({"old-dlq", "us-east-1"}));
  gone.Set(8);  // still a valid object, just not rendered
  std::string text = registry.Render();
  EXPECT_EQ(text.find("old-dlq"), std::string::npos);
  EXPECT_NE(text.find("depth{queue=\"kept-dlq\",region=\"us-east-1\"} 4"), std::string::npos);
  // Asking again starts a fresh series.
  EXPECT_EQ(family.WithLabels({"old-dlq", "us-east-1"}).Value(), 0);
}

TEST(MetricsTest, RemoveMatchingDropsEverySeriesOfAQueue) {
  Registry registry;
  auto& family = registry.AddGauge("depth", "Depth.", {"queue", "region", "state"});
  family.WithLabels({"a", "r1", "visible"}).Set(1);
  family.WithLabels({"a", "r1", "delayed"}).Set(1);
  family.WithLabels({"a", "r2", "visible"}).Set(1);
  family.WithLabels({"b", "r1", "visible"}).Set(1);
  EXPECT_EQ(family.RemoveMatching({{"queue", "a"}, {"region", "r1"}}), 2u);
  EXPECT_EQ(family.RemoveMatching({{"nosuchlabel", "a"}}), 0u);
  EXPECT_EQ(family.size(), 2u);
}

TEST(MetricsTest, ConcurrentIncrementsAreExact) {
  Registry registry;
  auto& counters = registry.AddCounter("ops_total", "Ops.", {"queue"});
  auto& gauge = registry.AddGauge("level", "Level.").WithLabels({});
  auto& hist = registry.AddHistogram("lat_seconds", "Latency.", {}, {0.5}).WithLabels({});
  constexpr int kThreads = 8;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        counters.WithLabels({i % 2 == 0 ? "even" : "odd"}).Inc();
        gauge.Add(t % 2 == 0 ? 1 : -1);
        hist.Observe(i % 2 == 0 ? 0.25 : 1.0);
        if (i % 1000 == 0) {
          EXPECT_FALSE(registry.Render().empty());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counters.WithLabels({"even"}).Value(), kThreads * kIterations / 2);
  EXPECT_EQ(counters.WithLabels({"odd"}).Value(), kThreads * kIterations / 2);
  EXPECT_EQ(gauge.Value(), 0);
  metrics::Histogram::Snapshot s = hist.Read();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kIterations));
  EXPECT_EQ(s.cumulative[0], static_cast<uint64_t>(kThreads * kIterations / 2));
  EXPECT_DOUBLE_EQ(s.sum, kThreads * kIterations / 2 * 1.25);
}

TEST(MetricsDeathTest, RejectsMisuse) {
  Registry registry;
  EXPECT_DEATH(registry.AddCounter("no_suffix", "C."), "must be named \\*_total");
  EXPECT_DEATH(registry.AddGauge("bad-name", "G."), "invalid metric name");
  EXPECT_DEATH(registry.AddGauge("g", "G.", {"__reserved"}), "invalid label name");
  registry.AddGauge("g2", "G.", {"queue"});
  EXPECT_DEATH(registry.AddGauge("g2", "G.", {"region"}), "registered twice");
  EXPECT_DEATH(registry.AddGauge("g2", "G.", {"queue"}).WithLabels({"a", "b"}), "2 label values given, 1 expected");
}

DaemonMetrics PopulatedDaemonMetrics(Registry& registry) {
  DaemonMetrics m(registry, "0.1.0");
  m.queue_messages.WithLabels({"orders-dlq", "us-east-1", "visible"}).Set(120);
  m.queue_messages.WithLabels({"orders-dlq", "us-east-1", "not_visible"}).Set(3);
  m.queue_messages.WithLabels({"orders-dlq", "us-east-1", "delayed"}).Set(0);
  m.queue_oldest_age_seconds.WithLabels({"orders-dlq", "us-east-1", "cloudwatch"}).Set(86400);
  m.queue_oldest_age_seconds.WithLabels({"orders-dlq", "us-east-1", "observed"}).Set(90000);
  m.queue_seconds_to_expiry.WithLabels({"orders-dlq", "us-east-1"}).Set(255600);
  m.queue_retention_seconds.WithLabels({"orders-dlq", "us-east-1"}).Set(345600);
  m.SetAlarmState("orders-dlq", "us-east-1", "age", "ALARM");
  m.messages_archived_total.WithLabels({"orders-dlq", "us-east-1"}).Add(500);
  m.messages_deleted_total.WithLabels({"orders-dlq", "us-east-1"}).Add(500);
  m.messages_duplicates_total.WithLabels({"orders-dlq", "us-east-1"}).Add(2);
  m.messages_received_again_total.WithLabels({"orders-dlq", "us-east-1"}).Add(3);
  m.messages_failed_total.WithLabels({"orders-dlq", "us-east-1"}).Add(0);
  m.objects_total.WithLabels({"orders-dlq", "us-east-1"}).Add(5);
  m.bytes_uploaded_total.WithLabels({"orders-dlq", "us-east-1"}).Add(123456);
  m.archive_failures_total.WithLabels({"orders-dlq", "us-east-1", "NotFound"}).Inc();
  m.destination_up.WithLabels({"g1"}).Set(1);
  m.archive_runs_total.WithLabels({"orders-dlq", "us-east-1", "ok"}).Inc();
  m.collection_duration_seconds.WithLabels({}).Observe(0.7);
  m.queues_watched.WithLabels({}).Set(1);
  CallObserver observer = MakeAwsCallObserver(m);
  observer(CallRecord{.service = "sqs",
                      .operation = "ReceiveMessage",
                      .attempts = 1,
                      .http_status = 200,
                      .latency = std::chrono::milliseconds(20)});
  observer(CallRecord{.service = "s3",
                      .operation = "PutObject",
                      .attempts = 3,
                      .http_status = 403,
                      .latency = std::chrono::milliseconds(300),
                      .code = ErrorCode::kPermissionDenied,
                      .aws_error_code = "AccessDenied"});
  observer(CallRecord{.service = "sqs",
                      .operation = "DeleteMessageBatch",
                      .attempts = 6,
                      .http_status = 0,
                      .latency = std::chrono::seconds(3),
                      .code = ErrorCode::kUnavailable});
  return m;
}

TEST(DaemonMetricsTest, AwsCallObserverCountsByCodeRetriesAndLatency) {
  Registry registry;
  DaemonMetrics m = PopulatedDaemonMetrics(registry);
  EXPECT_EQ(m.aws_requests_total.WithLabels({"sqs", "ReceiveMessage", "OK"}).Value(), 1);
  EXPECT_EQ(m.aws_requests_total.WithLabels({"s3", "PutObject", "AccessDenied"}).Value(), 1);
  EXPECT_EQ(m.aws_requests_total.WithLabels({"sqs", "DeleteMessageBatch", "Unavailable"}).Value(), 1);
  EXPECT_EQ(m.aws_retries_total.WithLabels({"s3", "PutObject"}).Value(), 2);
  EXPECT_EQ(m.aws_retries_total.WithLabels({"sqs", "DeleteMessageBatch"}).Value(), 5);
  metrics::Histogram::Snapshot s = m.aws_request_duration_seconds.WithLabels({"s3", "PutObject"}).Read();
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.sum, 0.3);
}

TEST(DaemonMetricsTest, AlarmStateIsOneHot) {
  Registry registry;
  DaemonMetrics m(registry, "0.1.0");
  m.SetAlarmState("q", "r", "age", "ALARM");
  m.SetAlarmState("q", "r", "age", "OK");
  EXPECT_EQ(m.alarm_state.WithLabels({"q", "r", "age", "OK"}).Value(), 1);
  EXPECT_EQ(m.alarm_state.WithLabels({"q", "r", "age", "ALARM"}).Value(), 0);
  EXPECT_EQ(m.alarm_state.WithLabels({"q", "r", "age", "INSUFFICIENT_DATA"}).Value(), 0);
}

TEST(DaemonMetricsTest, RemoveQueueDropsOnlyThatQueue) {
  Registry registry;
  DaemonMetrics m = PopulatedDaemonMetrics(registry);
  m.queue_messages.WithLabels({"other-dlq", "us-east-1", "visible"}).Set(1);
  m.RemoveQueue("orders-dlq", "us-east-1");
  std::string text = registry.Render();
  EXPECT_EQ(text.find("orders-dlq"), std::string::npos);
  EXPECT_NE(text.find("other-dlq"), std::string::npos);
  EXPECT_NE(text.find("dlq_archive_aws_requests_total{service=\"sqs\""), std::string::npos);
}

TEST(DaemonMetricsTest, ExposesBuildInfoAndUp) {
  Registry registry;
  DaemonMetrics m(registry, "1.2.3");
  std::string text = registry.Render();
  EXPECT_NE(text.find("dlq_archive_build_info{version=\"1.2.3\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("dlq_archive_up 1\n"), std::string::npos);
  EXPECT_NE(text.find("dlq_archive_queues_watched 0\n"), std::string::npos);
}

TEST(DaemonMetricsTest, DocQuotesTheTestedAlertRulesVerbatim) {
  // tests/prometheus/ runs promtool's rule unit tests on examples/prometheus-rules.yaml;
  // doc/metrics.md must show exactly that file.
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::string rules = read(DLQ_TESTDATA_DIR "/../../examples/prometheus-rules.yaml");
  std::string doc = read(DLQ_TESTDATA_DIR "/../../doc/metrics.md");
  ASSERT_FALSE(rules.empty());
  EXPECT_NE(doc.find("```yaml\n" + rules + "```"), std::string::npos);
}

TEST(DaemonMetricsTest, EveryFamilyAppearsOnceWithHelpAndType) {
  Registry registry;
  PopulatedDaemonMetrics(registry);
  std::string text = registry.Render();
  for (std::string_view name : {"dlq_archive_queue_messages",
                                "dlq_archive_queue_oldest_age_seconds",
                                "dlq_archive_queue_seconds_to_expiry",
                                "dlq_archive_queue_retention_seconds",
                                "dlq_archive_alarm_state",
                                "dlq_archive_messages_archived_total",
                                "dlq_archive_messages_deleted_total",
                                "dlq_archive_messages_duplicates_total",
                                "dlq_archive_messages_received_again_total",
                                "dlq_archive_messages_failed_total",
                                "dlq_archive_objects_total",
                                "dlq_archive_bytes_uploaded_total",
                                "dlq_archive_archive_runs_total",
                                "dlq_archive_archive_failures_total",
                                "dlq_archive_destination_up",
                                "dlq_archive_aws_requests_total",
                                "dlq_archive_aws_retries_total",
                                "dlq_archive_aws_request_duration_seconds",
                                "dlq_archive_collection_duration_seconds",
                                "dlq_archive_queues_watched",
                                "dlq_archive_build_info",
                                "dlq_archive_up"}) {
    std::string type_line = "# TYPE " + std::string(name) + " ";
    size_t first = text.find(type_line);
    EXPECT_NE(first, std::string::npos) << name;
    EXPECT_EQ(text.find(type_line, first + 1), std::string::npos) << name;
    EXPECT_NE(text.find("# HELP " + std::string(name) + " "), std::string::npos) << name;
  }
}

TEST(PromtoolTest, DaemonMetricsPassPromtoolCheck) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  Registry registry;
  DaemonMetrics m = PopulatedDaemonMetrics(registry);
  m.queue_messages.WithLabels({"we\"ird\\dlq\n", "us-east-1", "visible"}).Set(1);
  auto [rc, output] = Promtool(registry.Render());
  EXPECT_EQ(rc, 0) << output << "\n--- input ---\n" << registry.Render();
}

TEST(PromtoolTest, PromtoolRejectsBrokenText) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  // Guards the harness: a broken exposition must fail, or the check above proves nothing.
  auto [rc, output] = Promtool("# TYPE x counter\nx{a=\"unterminated} 1\n");
  EXPECT_NE(rc, 0) << output;
}

}  // namespace
}  // namespace dlq
