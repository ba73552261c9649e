// The cause lookup on a generated corpus (issue 40; bench/causes/README.md):
// GROUPS failure groups (20) of PER_GROUP messages (500) in one DLQ whose
// source is consumed by one Lambda function; each group fails with its own
// true cause, logged in one of the supported formats (Python and Node.js
// plain text, Lambda's JSON log format, Powertools JSON with a partial batch
// failure, a timeout) into the function's log group on FakeLogsClient, three
// groups by a service in a log group named as --logs would, and one group by
// a consumer that never logs the message id (its truth: no cause). Then:
//  1. sampled: ExplainFailures with 3 samples per group, as `stats --causes`;
//  2. every message: ExplainFailures with every message of every group
//     looked up (10,000 archived messages enriched).
// For each: per group, the answers found, whether they carry the true type
// and one key, and the FilterLogEvents calls; the wall time of the run (our
// CPU on the fake: no network).
// Usage: dlq_causes_bench [GROUPS] [PER_GROUP]
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "causes/cause.h"
#include "causes/explain.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_queue.h"

namespace {

using dlq::CauseRecord;
using dlq::CauseStatus;

constexpr char kFunctionGroup[] = "/aws/lambda/orders-worker";
constexpr char kServiceGroup[] = "/ecs/orders-service";

struct Truth {
  std::string format;
  std::string type;  // "" when no cause can be found (the consumer logs no id)
};

// The lines of one invocation that handled `id` and failed as group `g` does.
void WriteInvocation(dlq::FakeLogsClient& logs, int g, int i, const std::string& id, int64_t t, Truth& truth) {
  const std::string rid = fmt::format("{:08x}-0000-4000-8000-{:012x}", g, i);
  const std::string stream = fmt::format("2026/01/05/[$LATEST]{:032x}", (g * 7 + i) % 50);
  auto add = [&](int64_t dt, const std::string& text) { logs.AddEvent(kFunctionGroup, stream, t + dt, text); };
  auto start = [&] { add(0, fmt::format("START RequestId: {} Version: $LATEST\n", rid)); };
  auto end = [&](int64_t dt) {
    add(dt, fmt::format("END RequestId: {}\n", rid));
    add(dt + 1, fmt::format("REPORT RequestId: {}\tDuration: {}.00 ms\tBilled Duration: {} ms\tMemory Size: 256 "
                            "MB\tMax Memory Used: 91 MB\n",
                            rid, dt, dt + 1));
  };
  if (g == 19) {  // the consumer that never logs the message id
    truth = {"no message id logged", ""};
    start();
    add(5, fmt::format("[ERROR] ConnectionError: upstream {} refused\nTraceback (most recent call last):\n", g));
    end(9);
    return;
  }
  if (g >= 16) {  // a service on ECS, its own JSON logs
    truth = {"service JSON", fmt::format("Service{}Error", g)};
    logs.AddEvent(
        kServiceGroup, fmt::format("orders/task/{}", i % 8), t,
        fmt::format(R"({{"level":"info","msg":"received","messageId":"{}","trace_id":"tr-{}-{}"}})", id, g, i));
    logs.AddEvent(
        kServiceGroup, fmt::format("orders/task/{}", i % 8), t + 4,
        fmt::format(R"({{"level":"error","msg":"failed","trace_id":"tr-{}-{}","error":{{"name":"Service{}Error",)"
                    R"("message":"order {} rejected by rule {}"}}}})",
                    g, i, g, 1000 + i, g));
    return;
  }
  switch (g % 5) {
    case 0:
      truth = {"Python text", fmt::format("Group{}Error", g)};
      start();
      add(2, fmt::format("[INFO]\t2026-01-05T10:00:00.002Z\t{}\tprocessing {}\n", rid, id));
      add(6, fmt::format("[ERROR] Group{}Error: sku {} not found in catalog {}\nTraceback (most recent call "
                         "last):\n  File \"/var/task/app.py\", line {}, in handler\n",
                         g, 1000 + i, g, 10 + g));
      end(9);
      break;
    case 1:
      truth = {"Node text", fmt::format("Group{}Error", g)};
      start();
      add(2, fmt::format("2026-01-05T10:00:00.002Z\t{}\tINFO\tprocessing {}\n", rid, id));
      add(6, fmt::format("2026-01-05T10:00:00.006Z\t{}\tERROR\tInvoke Error \t{{\"errorType\":\"Group{}Error\","
                         "\"errorMessage\":\"price {} is below {}\",\"stack\":[\"Group{}Error: price\",\"    at "
                         "handler (/var/task/index.mjs:{}:5)\"]}}\n",
                         rid, g, i, g, g, g));
      end(9);
      break;
    case 2:
      truth = {"Lambda JSON", fmt::format("Group{}Error", g)};
      add(0,
          fmt::format(R"({{"time":"2026-01-05T10:00:00.000Z","type":"platform.start","record":{{"requestId":"{}"}}}})",
                      rid));
      add(2,
          fmt::format(
              R"({{"timestamp":"2026-01-05T10:00:00.002Z","level":"INFO","requestId":"{}","message":"processing {}"}})",
              rid, id));
      add(6,
          fmt::format(
              R"({{"timestamp":"2026-01-05T10:00:00.006Z","level":"ERROR","requestId":"{}","errorType":"Group{}Error",)"
              R"("errorMessage":"quantity {} exceeds {}","stackTrace":["  File \"/var/task/app.py\", line 3"]}})",
              rid, g, i, g));
      break;
    case 3:
      truth = {"Powertools JSON", fmt::format("Group{}Error", g)};
      start();
      add(2, fmt::format(
                 R"({{"level":"INFO","message":"Processing record","function_request_id":"{}","sqs_message_id":"{}"}})",
                 rid, id));
      add(6, fmt::format(
                 R"({{"level":"ERROR","message":"Record failed","function_request_id":"{}","sqs_message_id":"{}",)"
                 R"("exception_name":"Group{}Error","exception":"Traceback (most recent call last):\nGroup{}Error: )"
                 R"(customer {} has no account {}"}})",
                 rid, id, g, g, i, g));
      end(9);
      break;
    default:
      truth = {"timeout", "Task timed out"};
      start();
      add(2, fmt::format("[INFO]\t2026-01-05T10:00:00.002Z\t{}\tprocessing {}\n", rid, id));
      add(30'000, fmt::format("2026-01-05T10:00:30.000Z {} Task timed out after 30.00 seconds\n", rid));
      end(30'001);
  }
}

struct GroupScore {
  int answered = 0, found = 0, true_type = 0, not_mentioned = 0;
  std::set<std::string> keys;
};

void Report(const char* title, const dlq::ExplainResult& r, const std::map<std::string, Truth>& truth_of_group,
            double seconds, int groups) {
  std::map<std::string, GroupScore> scores;
  for (const CauseRecord& c : r.records) {
    GroupScore& s = scores[c.group_key];
    ++s.answered;
    const Truth& t = truth_of_group.at(c.group_key);
    if (c.status == CauseStatus::kNotMentioned) ++s.not_mentioned;
    if (c.status != CauseStatus::kFound) continue;
    ++s.found;
    s.keys.insert(c.cause->key);
    if (c.cause->type == t.type) ++s.true_type;
  }
  fmt::print("\n== {} ==\n", title);
  fmt::print("{:<6} {:<32} {:>8} {:>6} {:>10} {:>5} {:>14}\n", "GROUP", "FORMAT", "ANSWERED", "FOUND", "TRUE TYPE",
             "KEYS", "NOT MENTIONED");
  int all_found = 0, all_true = 0, all_answered = 0;
  for (int g = 0; g < groups; ++g) {
    const std::string key = fmt::format("g{:02d}", g);
    const GroupScore& s = scores[key];
    fmt::print("{:<6} {:<32} {:>8} {:>6} {:>10} {:>5} {:>14}\n", key, truth_of_group.at(key).format, s.answered,
               s.found, s.true_type, s.keys.size(), s.not_mentioned);
    all_found += s.found;
    all_true += s.true_type;
    all_answered += s.answered;
  }
  fmt::print("answered {}, found {}, with the true type {}\n", all_answered, all_found, all_true);
  fmt::print("{}\n", dlq::DescribeExplainCalls(r));
  fmt::print("FilterLogEvents per group: {:.1f}; per message looked up: {:.2f}\n",
             static_cast<double>(r.calls.filter_log_events) / groups,
             r.records.empty() ? 0.0 : static_cast<double>(r.calls.filter_log_events) / r.records.size());
  fmt::print("wall time: {:.3f} s ({:.1f} us per message looked up)\n", seconds,
             r.records.empty() ? 0.0 : seconds * 1e6 / r.records.size());
}

}  // namespace

int main(int argc, char** argv) {
  const int groups = argc > 1 ? static_cast<int>(dlq::ParseInt64(argv[1]).value_or(20)) : 20;
  const int per_group = argc > 2 ? static_cast<int>(dlq::ParseInt64(argv[2]).value_or(500)) : 500;
  const int64_t t0 = 1'767'600'000'000;  // 2026-01-05
  dlq::FakeClock clock(dlq::FromUnixMillis(t0 + 30LL * 24 * 3600 * 1000));
  dlq::FakeQueueClient sqs(clock);
  dlq::FakeLambdaApi lambda;
  dlq::FakeLogsClient logs;

  const std::string dlq_url = *sqs.CreateQueue("orders-dlq", {});
  const std::string dlq_arn = sqs.GetQueueAttributes(dlq_url, {"QueueArn"})->at("QueueArn");
  const std::string source_url = *sqs.CreateQueue(
      "orders", {{"VisibilityTimeout", "60"},
                 {"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":3}})", dlq_arn)}});
  const std::string source_arn = sqs.GetQueueAttributes(source_url, {"QueueArn"})->at("QueueArn");
  dlq::FunctionConfiguration f;
  f.function_name = "orders-worker";
  f.timeout_seconds = 30;
  lambda.AddFunction(f);
  lambda.AddEventSourceMapping(
      {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn, "Enabled", {}, 10});
  logs.AddGroup(kFunctionGroup, 90);
  logs.AddGroup(kServiceGroup, 90);

  // One message a minute, the groups interleaved; each processed a minute after it was sent.
  std::vector<dlq::LookupMessage> messages;
  std::map<std::string, Truth> truth_of_group;
  for (int i = 0; i < per_group; ++i) {
    for (int g = 0; g < groups; ++g) {
      const int64_t sent = t0 + (static_cast<int64_t>(i) * groups + g) * 60'000;
      dlq::LookupMessage m;
      m.queue = "orders-dlq";
      m.message_id = fmt::format("{:08x}-{:04x}-4000-8000-000000000000", i, g);
      m.group_key = fmt::format("g{:02d}", g);
      m.source_queue_arn = source_arn;
      m.sent_ms = sent;
      m.first_receive_ms = sent + 60'000;
      m.archived_ms = sent + 10 * 60'000;
      WriteInvocation(logs, g, i, m.message_id, sent + 60'000, truth_of_group[m.group_key]);
      messages.push_back(std::move(m));
    }
  }
  fmt::print("corpus: {} groups x {} messages, one a minute; {} and {} (90-day retention)\n", groups, per_group,
             kFunctionGroup, kServiceGroup);

  dlq::ExplainRequest request;
  request.dlq = {"orders-dlq", dlq_url, dlq_arn, "us-east-1", "123456789012", false, {}};
  request.named_log_groups = {{kServiceGroup, "--logs"}};
  request.messages = messages;
  dlq::ExplainClients clients{sqs, lambda, logs, clock};

  for (auto [title, samples, cap] :
       {std::tuple<const char*, size_t, int>{"sampled: 3 per group (stats --causes)", 3, 200},
        {"every message enriched", static_cast<size_t>(per_group), 1'000'000}}) {
    request.samples_per_group = samples;
    request.lookup.max_filter_calls = cap;
    const auto started = std::chrono::steady_clock::now();
    dlq::ExplainResult r = dlq::ExplainFailures(request, clients);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    Report(title, r, truth_of_group, seconds, groups);
  }
  return 0;
}
