// dlq_test_consumer: a queue consumer for the redrive tests and benchmarks
// (tests/integration/redrive_test.cc, bench/replay/redrive.sh). It polls one
// queue and "processes" each message: a message whose body matches --fail is
// a failure and is left alone (no delete: its visibility lapses and the
// queue's RedrivePolicy moves it to the DLQ after maxReceiveCount receives);
// any other message succeeds and is deleted.
//
//   dlq_test_consumer --queue-url URL [--endpoint-url URL] [--region R]
//                     [--fail REGEX] [--rate N/s|max] [--rate-file FILE]
//                     [--count-file FILE] [--wait-seconds S]
//
// Credentials, region and endpoint come from the environment as for
// dlq-archive (the stand-ins' env files). --rate caps messages processed per
// second ("max": no cap; "0": receive nothing, a stopped consumer). The rate
// can change while it runs: --rate-file is reread before every receive, and
// its first line, when it parses, replaces the rate. One JSON line per
// message processed goes to stdout and to --count-file (flushed at once):
//   {"t_ms":..,"message_id":"..","body":"..","outcome":"ok|failed|delete-failed","receive_count":N}
// SIGTERM or SIGINT stops it (a receive in flight is abandoned); exit 0.
// Exit 2 on bad flags, 1 when a receive fails with a non-retryable error.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "app/services.h"
#include "aws/environment.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "common/regex.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int /*signal*/) {
  g_stop.store(true);
}

// "N/s", "N" (per second), "max" (no cap: infinity) or "0" (stopped).
std::optional<double> ParseRate(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  if (text == "max") return HUGE_VAL;
  if (text.size() > 2 && text.ends_with("/s")) text.resize(text.size() - 2);
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used != text.size() || v < 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The first line of `path` as a rate, or nullopt when absent or unparsable.
std::optional<double> ReadRateFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return ParseRate(line);
}

// A token bucket in messages: capacity one second's worth, 1..10.
class Bucket {
 public:
  Bucket(dlq::Clock& clock, double rate) : clock_(clock), rate_(rate), last_(clock.SteadyNow()) {}

  void SetRate(double rate) {
    Refill();
    rate_ = rate;
    tokens_ = std::min(tokens_, Capacity());
  }
  // How many messages may be received now (0..10).
  int Available() {
    if (std::isinf(rate_)) return 10;
    Refill();
    return static_cast<int>(std::floor(tokens_));
  }
  void Take(int n) {
    if (!std::isinf(rate_)) tokens_ -= n;
  }

 private:
  double Capacity() const { return std::clamp(rate_, 1.0, 10.0); }
  void Refill() {
    dlq::SteadyTime now = clock_.SteadyNow();
    double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    if (!std::isinf(rate_)) tokens_ = std::min(Capacity(), tokens_ + seconds * rate_);
  }

  dlq::Clock& clock_;
  double rate_;
  double tokens_ = 1;
  dlq::SteadyTime last_;
};

struct Flags {
  std::string queue_url, endpoint_url, region, fail, rate = "max", rate_file, count_file;
  int wait_seconds = 1;
};

class Consumer {
 public:
  Consumer(const Flags& flags, dlq::QueueClient& sqs, std::optional<dlq::Regex> fail, double rate, FILE* count_file)
      : flags_(flags), sqs_(sqs), fail_(std::move(fail)), bucket_(dlq::DefaultClock(), rate), count_file_(count_file) {}

  int Run() {
    while (!g_stop.load()) {
      if (!flags_.rate_file.empty()) {
        if (auto r = ReadRateFile(flags_.rate_file)) bucket_.SetRate(*r);
      }
      int n = bucket_.Available();
      if (n == 0) {
        dlq::DefaultClock().SleepFor(std::chrono::milliseconds(20));
        continue;
      }
      dlq::ReceiveOptions o;
      o.max_messages = std::min(n, 10);
      o.wait_time_seconds = flags_.wait_seconds;
      o.message_attribute_names = {};
      o.cancel = &g_stop;
      auto got = sqs_.ReceiveMessages(flags_.queue_url, o);
      if (!got.ok()) {
        if (g_stop.load()) break;
        std::fprintf(stderr, "dlq_test_consumer: %s\n", got.status().ToString().c_str());
        if (!got.status().retryable()) return 1;
        dlq::DefaultClock().SleepFor(std::chrono::milliseconds(200));
        continue;
      }
      bucket_.Take(static_cast<int>(got->size()));
      Process(*got);
    }
    return 0;
  }

 private:
  void Process(const std::vector<dlq::Message>& messages) {
    std::vector<dlq::DeleteEntry> deletes;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (fail_ && fail_->Search(messages[i].body)) continue;
      deletes.push_back({"d" + std::to_string(i), messages[i].receipt_handle});
    }
    std::vector<std::string> delete_failed;
    if (!deletes.empty()) {
      auto r = sqs_.DeleteMessageBatch(flags_.queue_url, deletes);
      if (!r.ok()) {
        for (const auto& d : deletes) delete_failed.push_back(d.id);
      } else {
        for (const auto& f : r->failed) delete_failed.push_back(f.id);
      }
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      std::string id = "d" + std::to_string(i);
      bool deleted = std::any_of(deletes.begin(), deletes.end(), [&](const auto& d) { return d.id == id; });
      const char* outcome = !deleted ? "failed"
                            : std::find(delete_failed.begin(), delete_failed.end(), id) != delete_failed.end()
                                ? "delete-failed"
                                : "ok";
      Report(messages[i], outcome);
    }
  }

  void Report(const dlq::Message& m, const char* outcome) {
    auto count = m.attributes.find("ApproximateReceiveCount");
    dlq::JsonWriter w;
    w.BeginObject()
        .Key("t_ms")
        .Int(
            std::chrono::duration_cast<std::chrono::milliseconds>(dlq::DefaultClock().Now().time_since_epoch()).count())
        .Key("message_id")
        .String(m.message_id)
        .Key("body")
        .String(m.body)
        .Key("outcome")
        .String(outcome)
        .Key("receive_count")
        .Int(count == m.attributes.end() ? 0 : std::atoll(count->second.c_str()))
        .EndObject();
    std::string line = w.Take() + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
    if (count_file_) {
      std::fwrite(line.data(), 1, line.size(), count_file_);
      std::fflush(count_file_);
    }
  }

  const Flags& flags_;
  dlq::QueueClient& sqs_;
  std::optional<dlq::Regex> fail_;
  Bucket bucket_;
  FILE* count_file_;
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Consumes a queue for the redrive tests: fails bodies matching --fail, deletes the rest"};
  app.add_option("--queue-url", flags.queue_url, "queue to consume")->required();
  app.add_option("--endpoint-url", flags.endpoint_url, "SQS endpoint (default: the environment's)");
  app.add_option("--region", flags.region, "region (default: the environment's)");
  app.add_option("--fail", flags.fail, "RE2 pattern: matching bodies fail (not deleted)");
  app.add_option("--rate", flags.rate, "messages per second: N/s, max (no cap) or 0 (stopped)");
  app.add_option("--rate-file", flags.rate_file, "reread before each receive; its first line replaces --rate");
  app.add_option("--count-file", flags.count_file, "append one JSON line per message processed");
  app.add_option("--wait-seconds", flags.wait_seconds, "long-poll wait of each receive (0..20)")
      ->check(CLI::Range(0, 20));
  CLI11_PARSE(app, argc, argv);

  std::optional<double> rate = ParseRate(flags.rate);
  if (!rate) {
    std::fprintf(stderr, "dlq_test_consumer: --rate %s: expected N/s, max or 0\n", flags.rate.c_str());
    return 2;
  }
  std::optional<dlq::Regex> fail;
  if (!flags.fail.empty()) {
    auto re = dlq::Regex::Compile(flags.fail);
    if (!re.ok()) {
      std::fprintf(stderr, "dlq_test_consumer: --fail: %s\n", re.status().ToString().c_str());
      return 2;
    }
    fail = std::move(*re);
  }
  dlq::ServicesOptions options;
  if (!flags.endpoint_url.empty()) options.client.endpoint_url = flags.endpoint_url;
  if (!flags.region.empty()) options.client.region = flags.region;
  auto services = dlq::AwsServices::Create(options, dlq::DefaultEnvironment(), dlq::DefaultClock());
  if (!services.ok()) {
    std::fprintf(stderr, "dlq_test_consumer: %s\n", services.status().ToString().c_str());
    return 2;
  }
  FILE* count_file = nullptr;
  if (!flags.count_file.empty()) {
    count_file = std::fopen(flags.count_file.c_str(), "a");
    if (!count_file) {
      std::fprintf(stderr, "dlq_test_consumer: cannot open %s\n", flags.count_file.c_str());
      return 2;
    }
  }
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  Consumer consumer(flags, (*services)->sqs(), std::move(fail), *rate, count_file);
  int rc = consumer.Run();
  if (count_file) std::fclose(count_file);
  return rc;
}
