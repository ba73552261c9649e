// The daemon's SQS calls in steady state (issue 31 §2; bench/monitor/README.md):
// the real Daemon watching QUEUES DLQs (1,000) in the fake SQS, one collection
// cycle per collection_interval of a fake clock, with the default settings
// (collection 60 s, sweep 300 s, discovery 600 s, expiry threshold auto, depth
// alarm notify-only). Four cases: R > S and R = S, each with the DLQs unchanged
// or some of them growing. After WARMUP_HOURS (1) of simulated time the calls
// of the next HOURS (1) are counted by operation and printed per DLQ.
// Usage: dlq_watch_calls [QUEUES] [HOURS] [JSON_OUT] [WARMUP_HOURS]
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"
#include "monitor/daemon.h"
#include "monitor/daemon_metrics.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace {

using dlq::Result;
using dlq::Status;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr int64_t kDay = 86400;
// Every 20th DLQ holds 3 messages (5%); of those, every other one held them
// before the daemon started (the rest receive them after it saw them empty).
constexpr size_t kHeldEvery = 20;
constexpr int kHeldMessages = 3;
// Growing cases: every 10th DLQ (10%, none of the held ones) gets one message
// every kGrowthPeriod, from the start of the warm-up to the end.
constexpr size_t kGrowingEvery = 10;
constexpr minutes kGrowthPeriod{15};

// What is counted: each SQS operation, GetQueueAttributes split by purpose.
enum Counter : size_t {
  kCollect,   // GetQueueAttributes of the message counts (every collection cycle)
  kDiscover,  // GetQueueAttributes of everything else (discovery: the DLQ and its sources)
  kListQueues,
  kListSources,
  kReceive,
  kDelete,
  kChangeVisibility,
  kOther,
  kCounters,
};
constexpr std::array<const char*, kCounters> kCounterNames = {"GetQueueAttributes(collection)",
                                                              "GetQueueAttributes(discovery)",
                                                              "ListQueues",
                                                              "ListDeadLetterSourceQueues",
                                                              "ReceiveMessage",
                                                              "DeleteMessageBatch",
                                                              "ChangeMessageVisibilityBatch",
                                                              "other"};

// Forwards to the fake SQS and counts the daemon's calls. Thread-safe.
class CountingQueueClient final : public dlq::QueueClient {
 public:
  explicit CountingQueueClient(dlq::QueueClient& inner) : inner_(inner) {}
  std::array<uint64_t, kCounters> counts() const {
    std::array<uint64_t, kCounters> c{};
    for (size_t i = 0; i < kCounters; ++i) c[i] = counts_[i].load();
    return c;
  }

  Result<std::string> GetQueueUrl(const std::string& name, const std::string& owner) override {
    Count(kOther);
    return inner_.GetQueueUrl(name, owner);
  }
  Result<std::vector<std::string>> ListQueues(const std::string& prefix) override {
    Count(kListQueues);
    return inner_.ListQueues(prefix);
  }
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& url,
                                                                const std::vector<std::string>& names) override {
    bool counts_only = false;
    for (const auto& n : names) counts_only |= n == "ApproximateNumberOfMessages";
    Count(counts_only ? kCollect : kDiscover);
    return inner_.GetQueueAttributes(url, names);
  }
  Result<std::vector<std::string>> ListDeadLetterSourceQueues(const std::string& url) override {
    Count(kListSources);
    return inner_.ListDeadLetterSourceQueues(url);
  }
  Result<std::vector<dlq::Message>> ReceiveMessages(const std::string& url, const dlq::ReceiveOptions& o) override {
    Count(kReceive);
    return inner_.ReceiveMessages(url, o);
  }
  Result<dlq::BatchResult> DeleteMessageBatch(const std::string& url,
                                              const std::vector<dlq::DeleteEntry>& entries) override {
    Count(kDelete);
    return inner_.DeleteMessageBatch(url, entries);
  }
  Result<dlq::BatchResult> ChangeMessageVisibilityBatch(const std::string& url,
                                                        const std::vector<dlq::VisibilityEntry>& entries) override {
    Count(kChangeVisibility);
    return inner_.ChangeMessageVisibilityBatch(url, entries);
  }
  Result<dlq::SendBatchResult> SendMessageBatch(const std::string& url,
                                                const std::vector<dlq::SendEntry>& entries) override {
    Count(kOther);
    return inner_.SendMessageBatch(url, entries);
  }
  Result<dlq::SentMessage> SendMessage(const std::string& url, const dlq::SendEntry& entry) override {
    Count(kOther);
    return inner_.SendMessage(url, entry);
  }
  Result<std::string> CreateQueue(const std::string& name, const std::map<std::string, std::string>& a) override {
    Count(kOther);
    return inner_.CreateQueue(name, a);
  }
  Status DeleteQueue(const std::string& url) override {
    Count(kOther);
    return inner_.DeleteQueue(url);
  }
  Status SetQueueAttributes(const std::string& url, const std::map<std::string, std::string>& a) override {
    Count(kOther);
    return inner_.SetQueueAttributes(url, a);
  }

 private:
  void Count(Counter c) { ++counts_[c]; }

  dlq::QueueClient& inner_;
  std::array<std::atomic<uint64_t>, kCounters> counts_{};
};

struct Case {
  const char* name;
  int64_t dlq_retention_s;
  int64_t source_retention_s;
  bool growing;
};

struct Outcome {
  std::array<uint64_t, kCounters> calls{};
  double window_hours = 0;
  size_t queues = 0, growing_queues = 0, held_queues = 0;
  uint64_t arrivals = 0;          // messages put into DLQs during the window
  uint64_t message_receives = 0;  // rise of the DLQ messages' ApproximateReceiveCount in the window
  uint64_t learning_passes = 0, archive_runs = 0, archived = 0, notifications = 0;
  size_t expiry_unknown = 0;  // DLQs whose expiry is unknown at the end
};

// The fake SQS with its DLQs and their sources, and the messages put into them.
class Fleet {
 public:
  Fleet(const Case& c, size_t queues) : case_(c), fake_(clock_), sqs_(fake_), urls_(queues) {
    for (size_t q = 0; q < queues; ++q) {
      urls_[q] = *fake_.CreateQueue(Name("bench", q), {{"MessageRetentionPeriod", std::to_string(c.dlq_retention_s)}});
      const std::string arn = fake_.GetQueueAttributes(urls_[q], {"QueueArn"})->at("QueueArn");
      const std::string policy = "{\"deadLetterTargetArn\":\"" + arn + "\",\"maxReceiveCount\":\"3\"}";
      (void)*fake_.CreateQueue(Name("src", q), {{"MessageRetentionPeriod", std::to_string(c.source_retention_s)},
                                                {"RedrivePolicy", policy}});
    }
    next_growth_ = clock_.Now();
  }

  dlq::FakeClock& clock() { return clock_; }
  dlq::QueueClient& sqs() { return sqs_; }
  std::array<uint64_t, kCounters> counts() const { return sqs_.counts(); }
  size_t size() const { return urls_.size(); }

  // The held DLQs' messages: those of every other held DLQ, `before` the daemon starts or after.
  void Hold(bool before) {
    for (size_t q = 0; q < urls_.size(); q += kHeldEvery) {
      if (((q / kHeldEvery) % 2 == 0) != before) continue;
      for (int i = 0; i < kHeldMessages; ++i) Put(q, std::to_string(q * 100 + static_cast<size_t>(i)));
    }
  }
  // Growing cases: one message into each growing DLQ when kGrowthPeriod has passed; returns how many.
  uint64_t Grow() {
    if (!case_.growing || clock_.Now() < next_growth_) return 0;
    next_growth_ += kGrowthPeriod;
    uint64_t n = 0;
    for (size_t q = kGrowingEvery / 2; q < urls_.size(); q += kGrowingEvery, ++n) Put(q, std::to_string(++seq_));
    return n;
  }
  // The sum of every DLQ message's ApproximateReceiveCount.
  uint64_t ReceiveCountSum() const {
    uint64_t sum = 0;
    for (const auto& url : urls_) {
      for (const dlq::Message& m : fake_.Messages(url)) {
        auto it = m.attributes.find("ApproximateReceiveCount");
        if (it != m.attributes.end()) sum += static_cast<uint64_t>(dlq::ParseInt64(it->second).value_or(0));
      }
    }
    return sum;
  }

 private:
  static std::string Name(const char* kind, size_t q) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s-q%04zu%s", kind, q, std::string_view(kind) == "bench" ? "-dlq" : "");
    return buf;
  }
  void Put(size_t q, const std::string& id) {
    dlq::SendEntry e;
    e.id = id;
    e.body = "{\"order\":" + id + "}";
    (void)*fake_.InjectMessage(urls_[q], e, clock_.Now() - hours(1));  // failed an hour after it was sent
  }

  const Case case_;
  dlq::FakeClock clock_;
  dlq::FakeQueueClient fake_;
  CountingQueueClient sqs_;
  std::vector<std::string> urls_;
  dlq::SystemTime next_growth_;
  uint64_t seq_ = 0;
};

// The daemon's per-queue totals (learning passes, archive runs, archived).
std::array<uint64_t, 3> RunTotals(const dlq::Daemon& daemon) {
  std::array<uint64_t, 3> t{};
  for (const auto& s : daemon.views().Queues()) t[0] += s.learning_passes, t[1] += s.runs, t[2] += s.archived;
  return t;
}

// Runs the daemon over the fleet: the warm-up, then the counted window.
Outcome Measure(Fleet& fleet, dlq::Daemon& daemon, const dlq::FakeNotifier& notifier, std::chrono::seconds interval,
                hours warmup, hours window) {
  dlq::FakeClock& clock = fleet.clock();
  auto cycle = [&] {
    clock.Advance(interval);
    daemon.RunOnce();
    daemon.WaitIdle();
  };
  const dlq::SystemTime start = clock.Now();
  daemon.RunOnce();  // discovery; every queue seen for the first time
  daemon.WaitIdle();
  fleet.Hold(false);  // these arrive after the daemon saw their queues empty
  while (clock.Now() - start < warmup) {
    fleet.Grow();
    cycle();
  }
  Outcome out;
  const auto calls_before = fleet.counts();
  const uint64_t receives_before = fleet.ReceiveCountSum();
  const size_t notified_before = notifier.notifications().size();
  const auto totals_before = RunTotals(daemon);
  const dlq::SystemTime t0 = clock.Now();
  while (clock.Now() - t0 < window) {
    out.arrivals += fleet.Grow();
    cycle();
  }
  const auto calls_after = fleet.counts();
  const auto totals_after = RunTotals(daemon);
  out.window_hours = std::chrono::duration<double, std::ratio<3600>>(clock.Now() - t0).count();
  for (size_t i = 0; i < kCounters; ++i) out.calls[i] = calls_after[i] - calls_before[i];
  out.message_receives = fleet.ReceiveCountSum() - receives_before;
  out.notifications = notifier.notifications().size() - notified_before;
  out.learning_passes = totals_after[0] - totals_before[0];
  out.archive_runs = totals_after[1] - totals_before[1];
  out.archived = totals_after[2] - totals_before[2];
  for (const auto& s : daemon.views().Queues()) out.expiry_unknown += s.expiry_unknown.empty() ? 0 : 1;
  return out;
}

Outcome RunCase(const Case& c, size_t queues, hours warmup, hours window) {
  Fleet fleet(c, queues);
  fleet.Hold(true);
  dlq::FakeObjectStore store("fake://bench-archive", &fleet.clock());
  dlq::FakeNotifier notifier;
  dlq::metrics::Registry registry;
  dlq::DaemonMetrics metrics(registry, "bench");
  dlq::MonitorConfig config;  // the defaults: collection 60 s, sweep 300 s, discovery 600 s
  dlq::GroupConfig g;
  g.name = "bench";
  g.prefixes = {"bench-"};
  g.destination = "s3://bench-archive/dlq-archive";
  config.groups.push_back(g);
  dlq::DaemonOptions options;
  options.serve_http = false;
  dlq::Daemon daemon(
      config,
      [&](const dlq::GroupConfig&) -> Result<dlq::GroupClients> {
        return dlq::GroupClients{.sqs = &fleet.sqs(), .store = &store, .default_region = "us-east-1"};
      },
      notifier, fleet.clock(), registry, metrics, options);
  Outcome out = Measure(fleet, daemon, notifier, config.collection_interval, warmup, window);
  out.queues = queues;
  out.held_queues = (queues + kHeldEvery - 1) / kHeldEvery;
  out.growing_queues = c.growing ? (queues + kGrowingEvery / 2) / kGrowingEvery : 0;
  daemon.Stop();
  return out;
}

double PerDlqPerHour(uint64_t calls, const Outcome& o) {
  return static_cast<double>(calls) / static_cast<double>(o.queues) / o.window_hours;
}

// One case's table on stdout and its object in `w`.
void Report(const Case& c, const Outcome& o, double real_s, dlq::JsonWriter& w) {
  std::printf("\n%s (R %lld d, S %lld d; %zu DLQs hold %d messages%s): %.2f h simulated in %.1f s\n", c.name,
              static_cast<long long>(c.dlq_retention_s / kDay), static_cast<long long>(c.source_retention_s / kDay),
              o.held_queues, kHeldMessages,
              c.growing ? (", " + std::to_string(o.growing_queues) + " DLQs get 1 message every 15 min").c_str() : "",
              o.window_hours, real_s);
  w.BeginObject().Key("case").String(c.name).Key("dlq_retention_s").Int(c.dlq_retention_s);
  w.Key("source_retention_s").Int(c.source_retention_s).Key("growing_queues").Uint(o.growing_queues);
  w.Key("window_hours").Double(o.window_hours).Key("calls").BeginObject();
  uint64_t total = 0;
  for (size_t i = 0; i < kCounters; ++i) {
    total += o.calls[i];
    w.Key(kCounterNames[i]).Uint(o.calls[i]);
    std::printf("  %-32s %8llu  %8.3f per DLQ per hour  %7.4f per DLQ per minute\n", kCounterNames[i],
                static_cast<unsigned long long>(o.calls[i]), PerDlqPerHour(o.calls[i], o),
                PerDlqPerHour(o.calls[i], o) / 60);
  }
  w.EndObject();
  const double receive_per_growing =
      o.growing_queues ? static_cast<double>(o.calls[kReceive]) / static_cast<double>(o.growing_queues) / o.window_hours
                       : 0;
  std::printf("  all SQS calls %llu = %.2f per DLQ per hour; ReceiveMessage per growing DLQ per hour %.2f\n",
              static_cast<unsigned long long>(total), PerDlqPerHour(total, o), receive_per_growing);
  std::printf(
      "  arrivals %llu, message receives %llu, learning passes %llu, archive runs %llu (archived %llu), "
      "notifications %llu, DLQs with expiry unknown at the end %zu\n",
      static_cast<unsigned long long>(o.arrivals), static_cast<unsigned long long>(o.message_receives),
      static_cast<unsigned long long>(o.learning_passes), static_cast<unsigned long long>(o.archive_runs),
      static_cast<unsigned long long>(o.archived), static_cast<unsigned long long>(o.notifications), o.expiry_unknown);
  w.Key("all_calls").Uint(total).Key("all_calls_per_dlq_hour").Double(PerDlqPerHour(total, o));
  w.Key("receive_per_dlq_hour").Double(PerDlqPerHour(o.calls[kReceive], o));
  w.Key("receive_per_growing_dlq_hour").Double(receive_per_growing);
  w.Key("get_queue_attributes_per_dlq_minute").Double(PerDlqPerHour(o.calls[kCollect] + o.calls[kDiscover], o) / 60);
  w.Key("arrivals").Uint(o.arrivals).Key("message_receives").Uint(o.message_receives);
  w.Key("learning_passes").Uint(o.learning_passes).Key("archive_runs").Uint(o.archive_runs);
  w.Key("archived").Uint(o.archived).Key("notifications").Uint(o.notifications);
  w.Key("expiry_unknown_at_end").Uint(o.expiry_unknown).Key("real_seconds").Double(real_s).EndObject();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t queues = argc > 1 ? std::stoul(argv[1]) : 1000;
  const hours window(argc > 2 ? std::stol(argv[2]) : 1);
  const std::string json_out = argc > 3 ? argv[3] : "";
  const hours warmup(argc > 4 ? std::stol(argv[4]) : 1);
  dlq::SetLogger(std::make_unique<dlq::StreamLogger>(stderr, dlq::LogFormat::kJson, dlq::LogLevel::kError));

  const Case cases[] = {
      {"R>S unchanged", 14 * kDay, 4 * kDay, false},
      {"R>S growing", 14 * kDay, 4 * kDay, true},
      {"R=S unchanged", 4 * kDay, 4 * kDay, false},
      {"R=S growing", 4 * kDay, 4 * kDay, true},
  };
  dlq::JsonWriter w;
  w.BeginObject().Key("queues").Uint(queues).Key("warmup_hours").Int(warmup.count());
  w.Key("held_every").Uint(kHeldEvery).Key("held_messages").Int(kHeldMessages);
  w.Key("growing_every").Uint(kGrowingEvery).Key("growth_period_s").Int(seconds(kGrowthPeriod).count());
  w.Key("cases").BeginArray();
  std::printf("%zu DLQs, %lld h warm-up, then %lld h counted (simulated time, fake SQS)\n", queues,
              static_cast<long long>(warmup.count()), static_cast<long long>(window.count()));
  for (const Case& c : cases) {
    const auto t = std::chrono::steady_clock::now();
    const Outcome o = RunCase(c, queues, warmup, window);
    Report(c, o, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), w);
  }
  w.EndArray().EndObject();
  if (!json_out.empty()) {
    std::ofstream(json_out) << w.text() << "\n";
    std::printf("\nwrote %s\n", json_out.c_str());
  }
  return 0;
}
