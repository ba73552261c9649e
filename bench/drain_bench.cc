// The whole per-message drain path in one process, without a network: a
// QueueDrainer over the real SqsClient and S3ObjectStore (JSON requests,
// SigV4 signing, ReceiveMessage parsing and MD5 checks, record encoding,
// gzip, Content-MD5, DeleteMessageBatch) whose HttpTransport is an in-memory
// SQS + S3 that answers at once. What it measures is the compute cost per
// message, next to bench/drain's end-to-end figure (which adds curl, the
// kernel and waiting on the server).
//
// Counters: cpu_us_per_msg (user + sys of the whole process over Run(), all
// threads, from getrusage; the fake server's own work is included and
// small: copying canned replies), requests_per_msg, objects, peak_rss_mib
// (the process's ru_maxrss so far, with dlq-archive's malloc settings; run
// one benchmark per process for a clean figure). Messages match bench/drain/fill.py's shape: 1 KiB of
// printable ASCII with '"' and '\', attributes s (String), n (Number),
// b (Binary, 16 bytes).
//
//   build/dlq_bench --benchmark_filter=BM_DrainPath/100000
//   build/dlq_bench --benchmark_filter=BM_DrainPath/1000000   # the RSS bound
//   build/dlq_bench --benchmark_filter=BM_DrainPathHttps/100000  # AWS's signing (no body SHA-256)
//   build/dlq_bench --benchmark_filter=BM_DrainRecordsGzip        # gzip's share of it, per record
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "archiver/drainer.h"
#include "aws/aws_client.h"
#include "aws/credentials.h"
#include "aws/http.h"
#include "common/allocator.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/time_util.h"
#include "s3/s3_client.h"
#include "s3/s3_object_store.h"
#include "sqs/json_codec.h"
#include "sqs/md5.h"
#include "sqs/sqs_client.h"

namespace dlq {
namespace {

constexpr int kDistinctReplies = 10;  // 100 distinct messages: more than gzip's 32 KiB window
constexpr int kPerReply = 10;
constexpr size_t kIdDigits = 12;

std::string RandomBody(std::mt19937_64& rng) {
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-_/\"\\{}[]()!?@#";
  std::string body(1024, ' ');
  for (char& c : body) c = kChars[rng() % kChars.size()];
  return body;
}

// Canned ReceiveMessage replies; each message id ends in kIdDigits digits
// that Receive() overwrites with a running number.
struct Reply {
  std::string json;
  std::vector<size_t> id_digits_at;
};

std::vector<Reply> CannedReplies() {
  std::mt19937_64 rng(1);
  std::vector<Reply> replies;
  for (int r = 0; r < kDistinctReplies; ++r) {
    Reply reply;
    reply.json = R"({"Messages":[)";
    for (int i = 0; i < kPerReply; ++i) {
      std::string body = RandomBody(rng);
      std::string binary(16, '\0');
      for (char& c : binary) c = static_cast<char>(rng());
      MessageAttributes attrs = {{"s", {"String", fmt::format("value-{}", rng() % 100000), ""}},
                                 {"n", {"Number", std::to_string(rng() % 1000), ""}},
                                 {"b", {"Binary", "", binary}}};
      if (i > 0) reply.json += ',';
      reply.json += R"({"MessageId":"00000000-0000-4000-8000-)";
      reply.id_digits_at.push_back(reply.json.size());
      reply.json += std::string(kIdDigits, '0');
      reply.json += fmt::format(R"(","ReceiptHandle":"AQEB{}","MD5OfBody":"{}","Body":)",
                                std::string(180, static_cast<char>('a' + i)), Md5OfBody(body));
      AppendJsonString(reply.json, body);
      reply.json += fmt::format(
          R"(,"Attributes":{{"SentTimestamp":"1757500000000","ApproximateReceiveCount":"4","SenderId":"AIDAEXAMPLE",)"
          R"("ApproximateFirstReceiveTimestamp":"1757500001000"}},"MD5OfMessageAttributes":"{}","MessageAttributes":{{)"
          R"("s":{{"DataType":"String","StringValue":"{}"}},"n":{{"DataType":"Number","StringValue":"{}"}},)"
          R"("b":{{"DataType":"Binary","BinaryValue":"{}"}}}}}})",
          Md5OfMessageAttributes(attrs), attrs["s"].string_value, attrs["n"].string_value, Base64Encode(binary));
    }
    reply.json += "]}";
    replies.push_back(std::move(reply));
  }
  return replies;
}

HttpResponse Ok(std::string body, HttpHeaders headers = {}) {
  HttpResponse r;
  r.status = 200;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// {"Successful":[{"Id":...},...]} naming every entry Id of a batch request.
std::string AllSucceeded(std::string_view request) {
  std::string out = R"({"Successful":[)";
  bool first = true;
  for (size_t at = request.find(R"("Id":")"); at != std::string_view::npos; at = request.find(R"("Id":")", at)) {
    at += 6;
    size_t end = request.find('"', at);
    if (!first) out += ',';
    first = false;
    out += R"({"Id":")";
    out += request.substr(at, end - at);
    out += R"("})";
  }
  out += "],\"Failed\":[]}";
  return out;
}

// SQS (JSON 1.0, by X-Amz-Target) and S3 PutObject, in memory, answering at
// once, or after `pause` (the calling thread sleeps, as it would waiting for
// a server). Holds `total` messages; every receive takes the next 10.
class InstantAws final : public HttpTransport {
 public:
  explicit InstantAws(int64_t total, std::chrono::microseconds pause = {})
      : total_(total), pause_(pause), replies_(CannedReplies()) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    if (pause_.count() > 0) std::this_thread::sleep_for(pause_);
    ++requests_;
    if (request.method == "PUT") {
      // S3 answers with the MD5 it checked (Content-MD5) as the ETag.
      const std::string* md5 = FindHeader(request.headers, "Content-MD5");
      std::optional<std::string> raw = md5 ? Base64Decode(*md5) : std::nullopt;
      if (!raw) return Ok("", {});
      return Ok("", {{"ETag", "\"" + HexEncode(*raw) + "\""}});
    }
    const std::string* target = FindHeader(request.headers, "X-Amz-Target");
    std::string_view op = target ? std::string_view(*target) : std::string_view();
    if (op == "AmazonSQS.ReceiveMessage") return Ok(Receive());
    std::string_view body = request.Body();
    if (op == "AmazonSQS.DeleteMessageBatch") {
      int64_t n = 0;
      for (size_t at = body.find("\"Id\""); at != std::string_view::npos; at = body.find("\"Id\"", at + 1)) ++n;
      deleted_ += n;
      return Ok(AllSucceeded(body));
    }
    if (op == "AmazonSQS.ChangeMessageVisibilityBatch") return Ok(AllSucceeded(body));
    if (op == "AmazonSQS.GetQueueAttributes") {
      int64_t served = std::min(served_.load(), total_);
      return Ok(fmt::format(
          R"({{"Attributes":{{"ApproximateNumberOfMessages":"{}","ApproximateNumberOfMessagesNotVisible":"{}"}}}})",
          total_ - served, served - deleted_.load()));
    }
    return Internal(fmt::format("InstantAws: unexpected {} {}", request.method, op));
  }

  int64_t requests() const { return requests_.load(); }
  int64_t deleted() const { return deleted_.load(); }

 private:
  std::string Receive() {
    int64_t first = served_.fetch_add(kPerReply);
    if (first >= total_) return "{}";
    const Reply& canned = replies_[static_cast<size_t>(first / kPerReply % kDistinctReplies)];
    std::string json = canned.json;
    int64_t n = std::min<int64_t>(kPerReply, total_ - first);
    for (int64_t i = 0; i < n; ++i) {
      std::string digits = fmt::format("{:012d}", first + i);
      std::memcpy(json.data() + canned.id_digits_at[static_cast<size_t>(i)], digits.data(), kIdDigits);
    }
    if (n < kPerReply) {
      // Cut the reply after message n: ids are followed by the rest of their object.
      size_t cut = canned.id_digits_at[static_cast<size_t>(n)] -
                   std::string_view(R"(,{"MessageId":"00000000-0000-4000-8000-)").size();
      json.resize(cut);
      json += "]}";
    }
    return json;
  }

  const int64_t total_;
  const std::chrono::microseconds pause_;
  const std::vector<Reply> replies_;
  std::atomic<int64_t> served_{0}, deleted_{0}, requests_{0};
};

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// The drained queue, its URL on `scheme`.
QueueInfo BenchQueue(std::string_view scheme) {
  return {.name = "bench-dlq",
          .url = fmt::format("{}://sqs.local/000000000000/bench-dlq", scheme),
          .arn = "arn:aws:sqs:us-east-1:000000000000:bench-dlq",
          .region = "us-east-1",
          .account_id = "000000000000"};
}

// `scheme`: "http" (the stand-ins' and bench/drain's) or "https" (AWS's:
// uploads then sign UNSIGNED-PAYLOAD instead of hashing the body; the cost
// of TLS itself is not in this figure).
void DrainPath(benchmark::State& state, std::string_view scheme, std::chrono::microseconds pause = {}) {
  const int64_t total = state.range(0);
  TuneAllocatorForBatches();  // as dlq-archive's main does
  SetLogger(std::make_unique<StreamLogger>(stderr, LogFormat::kText, LogLevel::kWarn));
  RealClock clock;
  double cpu = 0;
  int64_t messages = 0, requests = 0, objects = 0;
  for (auto _ : state) {
    InstantAws transport(total, pause);
    StaticCredentialsProvider credentials(Credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""});
    AwsClient sqs_aws({"sqs", "us-east-1", fmt::format("{}://sqs.local", scheme), false}, transport, credentials,
                      clock);
    AwsClient s3_aws({"s3", "us-east-1", fmt::format("{}://s3.local", scheme), true}, transport, credentials, clock);
    SqsClient sqs(sqs_aws);
    S3ClientOptions s3_options;
    s3_options.path_style = true;
    S3Client s3(s3_aws, s3_options);
    S3ObjectStore store(s3, "bench-bucket");
    const QueueInfo queue = BenchQueue(scheme);
    DrainOptions options;
    options.receivers = 8;  // bench/drain's --concurrency
    QueueDrainer drainer(sqs, store, clock, queue, options, MakeArchiveContext(queue, "bench-host"));
    double before = CpuSeconds();
    DrainResult result = drainer.Run();
    cpu += CpuSeconds() - before;
    if (!result.drained || result.stats.archived != static_cast<uint64_t>(total) || transport.deleted() != total) {
      state.SkipWithError(fmt::format("not drained: archived {} of {}, deleted {}: {}", result.stats.archived, total,
                                      transport.deleted(), result.status.ToString())
                              .c_str());
      return;
    }
    messages += total;
    requests += transport.requests();
    objects += static_cast<int64_t>(result.stats.objects);
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto per = [&](double v) { return messages > 0 ? v / static_cast<double>(messages) : 0.0; };
  state.counters["cpu_us_per_msg"] = per(cpu * 1e6);
  state.counters["requests_per_msg"] = per(static_cast<double>(requests));
  state.counters["objects"] = static_cast<double>(objects) / static_cast<double>(state.iterations());
  state.counters["peak_rss_mib"] = static_cast<double>(u.ru_maxrss) / 1024.0;
  state.counters["msgs_per_s"] = benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
}
void BM_DrainPath(benchmark::State& state) {
  DrainPath(state, "http");
}
void BM_DrainPathHttps(benchmark::State& state) {
  DrainPath(state, "https");
}
// The fake server takes state.range(1) µs per request, so every request costs
// the waiting thread a sleep and a wake-up, as against a real server; the
// difference from BM_DrainPath is what that wait costs on this machine.
void BM_DrainPathServerPause(benchmark::State& state) {
  DrainPath(state, "http", std::chrono::microseconds(state.range(1)));
}
BENCHMARK(BM_DrainPath)->Arg(100000)->Arg(1000000)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DrainPathServerPause)
    ->ArgNames({"messages", "server_pause_us"})
    ->Args({100000, 300})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// One stage of the path above on its own: gzip (level 1, bench/drain's
// --gzip-level, igzip) of an 8 MiB object of this benchmark's records, as
// the drainer seals a batch. ns_per_record is the floor this stage sets on
// cpu_us_per_msg for these random printable bodies.
void BM_DrainRecordsGzip(benchmark::State& state) {
  const ArchiveContext ctx = MakeArchiveContext(BenchQueue("http"), "bench-host");
  std::vector<Message> messages;
  for (const Reply& reply : CannedReplies()) {
    Result<std::vector<Message>> parsed = sqs::ParseReceiveMessageResponse(reply.json);
    if (!parsed.ok()) {
      state.SkipWithError(parsed.status().ToString().c_str());
      return;
    }
    for (Message& m : *parsed) messages.push_back(std::move(m));
  }
  std::string object;
  int64_t records = 0;
  for (size_t i = 0; object.size() < (size_t{8} << 20); ++i, ++records) {
    AppendRecordJson(messages[i % messages.size()], ctx, FromUnixMillis(1757600000000), object);
  }
  std::string gz;
  for (auto _ : state) {
    if (Status st = GzipCompressInto(object, 1, gz); !st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(gz.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(object.size()));
  state.counters["ns_per_record"] = benchmark::Counter(static_cast<double>(records * state.iterations()),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_record"] = static_cast<double>(object.size()) / static_cast<double>(records);
  state.counters["ratio"] = static_cast<double>(gz.size()) / static_cast<double>(object.size());
}
BENCHMARK(BM_DrainRecordsGzip)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DrainPathHttps)->Arg(100000)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dlq
