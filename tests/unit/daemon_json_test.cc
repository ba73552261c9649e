// Pins the bytes of the daemon's JSON documents (/api/queues, the overview)
// for one fixed history on the fake clock, so a change to how they are built
// cannot change what readers get.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <string_view>

#include "monitor/daemon.h"
#include "testing/fake_notifier.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::hours;

// Group "blocked" matches no queue and its destination check fails; group
// "orders" watches orders-dlq, whose first archive run fails (NoSuchBucket)
// and whose next run, a sweep later, archives its 3 messages two at a time.
class DaemonJsonTest : public DaemonFixture {
 protected:
  std::unique_ptr<Daemon> HistoryDaemon() {
    GroupConfig blocked = AlarmingGroup("blocked", {});
    blocked.prefixes = {"nothing-matches-"};
    config_.groups.insert(config_.groups.begin(), blocked);
    store_.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket)")
                             .WithAws(AwsErrorInfo{"NoSuchBucket", 404, ""}));
    store_.FailNextPut(NotFound("put s3://archive-bucket/k: The specified bucket does not exist")
                           .WithAws(AwsErrorInfo{"NoSuchBucket", 404, "REQ1"}));
    Inject(3, clock_.Now() - hours(95));
    DaemonOptions o;
    o.plan.max_messages_per_run = 2;
    auto d = NewDaemon(notifier_, o);
    d->RunOnce();
    d->WaitIdle();  // the learning pass
    for (int i = 0; i < 8; ++i) Cycle(*d);
    return d;
  }

  FakeNotifier notifier_;
};

// The fake store names objects with a random suffix. A run's end (or error) time may
// carry the drainer's 50 ms end-of-queue pause on the fake clock or not,
// depending on which thread ran first: its milliseconds are not pinned.
std::string WithoutRandomKeys(std::string json) {
  static const std::regex kKey("-[0-9a-f]{16}\\.json\\.gz");
  static const std::regex kRunMillis("(\"last_(run|error)\":\\{\"time\":\"[0-9T:-]+)\\.[0-9]{3}Z");
  return std::regex_replace(std::regex_replace(json, kKey, "-<random>.json.gz"), kRunMillis, "$1.000Z");
}

constexpr std::string_view kQueuesJson =
    R"json({"queues":[{"group":"orders","queue":"orders-dlq","url":"https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq","region":"us-east-1","fifo":false,"retention_s":345600,"source_retention_s":0,"sources":[],"messages":{"visible":1,"not_visible":0,"delayed":0},"nearest_expiry":"2023-11-14T23:13:20.000Z","oldest_sent":null,"last_empty":null,"collect_error":"","archive":{"runs":3,"archived":3,"failed_runs":1,"consecutive_failures":0,"failing":false,"running":false,"more":false,"last_run":{"time":"2023-11-14T22:21:20.000Z","archived":1,"ok":true},"last_error":{"time":"2023-11-14T22:15:20.000Z","code":"NoSuchBucket","class":"NotFound","message":"NotFound: s3:PutObject failed with NoSuchBucket on fake://archive/dlq-archive/orders-dlq/20231114/orders-dlq-221520-<random>.json.gz: the bucket does not exist: check the name and the region (put s3://archive-bucket/k: The specified bucket does not exist) [aws error NoSuchBucket, HTTP 404, request id REQ1]"}},"alarms":[{"name":"orders-dlq-expiry","metric":"AgeOnExpiryClock","state":"ALARM","threshold":342000,"period_s":60,"evaluation_periods":1,"datapoints_to_alarm":1,"comparison":"GreaterThanOrEqualToThreshold","action":"archive","reason":"Threshold Crossed: 1 out of the last 1 datapoint [342420.0 (14/11/23 22:20:00)] was greater than or equal to the threshold (342000.0) (minimum 1 datapoint for ALARM; state kept).","history":[{"from":"INSUFFICIENT_DATA","to":"ALARM","time":"2023-11-14T22:15:20.000Z","reason":"Threshold Crossed: 1 out of the last 1 datapoint [342060.0 (14/11/23 22:14:00)] was greater than or equal to the threshold (342000.0) (minimum 1 datapoint for INSUFFICIENT_DATA -> ALARM transition)."}]}]}],"failing":[],"groups":[{"name":"blocked","error":"","queues":0,"other_shards":0,"warning":"the group's selectors match no queue","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":false,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"NoSuchBucket","error":"NotFound: bucket s3://archive-bucket does not exist (NoSuchBucket) [aws error NoSuchBucket, HTTP 404]","note":""}},{"name":"orders","error":"","queues":1,"other_shards":0,"warning":"","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":true,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"","error":"","note":""}}],"shard":{"index":0,"count":1}})json";

constexpr std::string_view kSmallQueuesJson =
    R"json({"queues":[{"group":"orders","queue":"orders-dlq","url":"https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq","region":"us-east-1","fifo":false,"retention_s":345600,"source_retention_s":0,"sources":[],"messages":{"visible":1,"not_visible":0,"delayed":0},"nearest_expiry":"2023-11-14T23:13:20.000Z","oldest_sent":null,"last_empty":null,"collect_error":"","archive":{"runs":3,"archived":3,"failed_runs":1,"consecutive_failures":0,"failing":false,"running":false,"more":false,"last_run":{"time":"2023-11-14T22:21:20.000Z","archived":1,"ok":true},"last_error":{"time":"2023-11-14T22:15:20.000Z","code":"NoSuchBucket","class":"NotFound","message":"NotFound: s3:PutObject failed with NoSuchBucket on fake://archive/dlq-archive/orders-dlq/20231114/orders-dlq-221520-<random>.json.gz: the bucket does not exist: check the name and the region (put s3://archive-bucket/k: The specified bucket does not exist) [aws error NoSuchBucket, HTTP 404, request id REQ1]"}},"alarms":[{"name":"orders-dlq-expiry","metric":"AgeOnExpiryClock","state":"ALARM","threshold":342000,"period_s":60,"evaluation_periods":1,"datapoints_to_alarm":1,"comparison":"GreaterThanOrEqualToThreshold","action":"archive","reason":"Threshold Crossed: 1 out of the last 1 datapoint [342420.0 (14/11/23 22:20:00)] was greater than or equal to the threshold (342000.0) (minimum 1 datapoint for ALARM; state kept)."}]}],"failing":[],"groups":[{"name":"blocked","error":"","queues":0,"other_shards":0,"warning":"the group's selectors match no queue","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":false,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"NoSuchBucket","error":"NotFound: bucket s3://archive-bucket does not exist (NoSuchBucket) [aws error NoSuchBucket, HTTP 404]","note":""}},{"name":"orders","error":"","queues":1,"other_shards":0,"warning":"","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":true,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"","error":"","note":""}}],"shard":{"index":0,"count":1}})json";

constexpr std::string_view kNoQueueJson =
    R"json({"queues":[],"failing":[],"groups":[{"name":"blocked","error":"","queues":0,"other_shards":0,"warning":"the group's selectors match no queue","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":false,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"NoSuchBucket","error":"NotFound: bucket s3://archive-bucket does not exist (NoSuchBucket) [aws error NoSuchBucket, HTTP 404]","note":""}},{"name":"orders","error":"","queues":1,"other_shards":0,"warning":"","destination":{"uri":"s3://archive-bucket/dlq-archive","checked":true,"ok":true,"confirmed":true,"checked_at":"2023-11-14T22:13:20.000Z","code":"","error":"","note":""}}],"shard":{"index":0,"count":1}})json";

constexpr std::string_view kOverviewJson =
    R"json({"queues":[{"group":"orders","queue":"orders-dlq","region":"us-east-1","fifo":false,"retention_s":345600,"source_retention_s":0,"visible":1,"not_visible":0,"delayed":0,"nearest_expiry":"2023-11-14T23:13:20.000Z","collect_error":false,"archived":3,"running":false,"failing":false,"error_code":"","last_run":{"time":"2023-11-14T22:21:20.000Z","archived":1,"ok":true},"alarms":[{"kind":"expiry","state":"ALARM"}]}],"groups":[{"name":"blocked","error":true,"problem":"NotFound: bucket s3://archive-bucket does not exist (NoSuchBucket) [aws error NoSuchBucket, HTTP 404]"},{"name":"orders","error":false,"problem":""}]})json";

TEST_F(DaemonJsonTest, ApiQueuesIsByteForByteTheDocumentOfThisHistory) {
  auto d = HistoryDaemon();
  EXPECT_EQ(WithoutRandomKeys(d->views().QueuesJson()), kQueuesJson);
}

TEST_F(DaemonJsonTest, ApiQueuesOfOneQueueWithoutHistoryIsByteForByteItsPart) {
  auto d = HistoryDaemon();
  EXPECT_EQ(WithoutRandomKeys(d->views().QueuesJson({.history = false, .queue = "orders-dlq"})), kSmallQueuesJson);
  EXPECT_EQ(d->views().QueuesJson({.history = true, .queue = "no-such-queue"}), kNoQueueJson);
}

TEST_F(DaemonJsonTest, OverviewIsByteForByteTheDocumentOfThisHistory) {
  auto d = HistoryDaemon();
  EXPECT_EQ(WithoutRandomKeys(d->views().OverviewJson()), kOverviewJson);
}

}  // namespace
}  // namespace dlq
