// Archive format hot paths: record encoding, gzip at levels 1 and 6, and the
// read path (decompress + parse). Build with -DCMAKE_BUILD_TYPE=Release -DDLQ_BENCH=ON.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/crypto.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr int kRecords = 10000;

ArchiveContext BenchContext() {
  ArchiveContext c;
  c.queue = "orders-dlq";
  c.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  c.region = "us-east-1";
  c.account_id = "123456789012";
  c.archiver_version = "0.1.0";
  c.host = "bench-host";
  return c;
}

// ~1 KiB JSON-ish body (quotes to escape), 3 message attributes, the usual system attributes.
std::vector<Message> BenchMessages(bool json_body) {
  std::vector<Message> msgs;
  msgs.reserve(kRecords);
  for (int i = 0; i < kRecords; ++i) {
    Message m;
    m.message_id = fmt::format("{:08x}-87a3-44ab-83d2-{:012x}", i, i * 7919);
    std::string body = fmt::format("{{\"order_id\":{},\"customer\":\"c-{}\",\"items\":[", i, i % 977);
    for (int j = 0; body.size() < 1000; ++j) {
      body += fmt::format("{{\"sku\":\"SKU-{:06}\",\"qty\":{},\"note\":\"gift wrap, ship to Zürich\"}},", i * 31 + j,
                          j % 5 + 1);
    }
    body.back() = ']';
    body += "}";
    if (!json_body) {
      body.clear();
      while (body.size() < 1024)
        body += "Payment for order " + std::to_string(i) + " failed: card declined by issuer. ";
      body.resize(1024);
    }
    m.body = body;
    m.md5_of_body = Md5Hex(body);
    m.md5_of_message_attributes = "d25a6aea97eb8f585bfa92d314504a92";
    m.attributes = {{"SentTimestamp", std::to_string(1757507400123 + i)},
                    {"ApproximateReceiveCount", "5"},
                    {"ApproximateFirstReceiveTimestamp", std::to_string(1757507401000 + i)},
                    {"SenderId", "AIDAEXAMPLEEXAMPLE"},
                    {"DeadLetterQueueSourceArn", "arn:aws:sqs:us-east-1:123456789012:orders"}};
    m.message_attributes = {{"trace_id", {"String", fmt::format("trace-{:016x}", i * 104729), ""}},
                            {"attempt", {"Number", "3", ""}},
                            {"sig", {"Binary", "", std::string("\x00\x01\x02\x03\xfe\xff\x10\x20", 8)}}};
    msgs.push_back(std::move(m));
  }
  return msgs;
}

const std::vector<Message>& Messages(bool json_body = true) {
  static const std::vector<Message> json = BenchMessages(true);
  static const std::vector<Message> text = BenchMessages(false);
  return json_body ? json : text;
}

const std::string& Encoded() {
  static const std::string text = [] {
    std::string out;
    ArchiveContext ctx = BenchContext();
    for (const Message& m : Messages()) AppendRecordJson(m, ctx, FromUnixMillis(1757600000000), out);
    return out;
  }();
  return text;
}

void BM_EncodeRecords(benchmark::State& state) {
  const auto& msgs = Messages(state.range(0) == 1);
  ArchiveContext ctx = BenchContext();
  std::string out;
  for (auto _ : state) {
    out.clear();
    for (const Message& m : msgs) AppendRecordJson(m, ctx, FromUnixMillis(1757600000000), out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(out.size()));
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(kRecords) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_record"] = static_cast<double>(out.size()) / kRecords;
}
// Arg 1: JSON body (~1 KiB, many quotes to escape, some non-ASCII); arg 0: 1 KiB plain text.
BENCHMARK(BM_EncodeRecords)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_GzipCompress(benchmark::State& state) {
  const std::string& text = Encoded();
  size_t gz_size = 0;
  for (auto _ : state) {
    Result<std::string> gz = GzipCompress(text, static_cast<int>(state.range(0)));
    gz_size = gz->size();
    benchmark::DoNotOptimize(gz_size);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["ratio"] = static_cast<double>(text.size()) / static_cast<double>(gz_size);
  state.counters["input_MiB"] = static_cast<double>(text.size()) / (1 << 20);
}
BENCHMARK(BM_GzipCompress)->Arg(1)->Arg(6)->Unit(benchmark::kMillisecond);

// The second pass over a sealed body that its Content-MD5 costs.
void BM_Md5OfBody(benchmark::State& state) {
  const std::string gz = GzipCompress(Encoded(), 1).value();
  for (auto _ : state) {
    Md5Digest d = Md5(gz);
    benchmark::DoNotOptimize(d.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(gz.size()));
}
BENCHMARK(BM_Md5OfBody)->Unit(benchmark::kMillisecond);

void BM_DecompressAndParse(benchmark::State& state) {
  const std::string gz = GzipCompress(Encoded(), static_cast<int>(state.range(0))).value();
  for (auto _ : state) {
    std::string text = GzipDecompress(gz, size_t{1} << 30).value();
    std::string_view rest = text;
    size_t n = 0;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      Result<ArchiveRecord> r = ParseRecordJson(rest.substr(0, nl));
      n += r.ok();
      rest.remove_prefix(nl + 1);
    }
    if (n != kRecords) state.SkipWithError("parse failed");
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(kRecords) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecompressAndParse)->Arg(6)->Unit(benchmark::kMillisecond);

void BM_DecompressOnly(benchmark::State& state) {
  const std::string gz = GzipCompress(Encoded(), 6).value();
  for (auto _ : state) {
    std::string text = GzipDecompress(gz, size_t{1} << 30).value();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(Encoded().size()));
}
BENCHMARK(BM_DecompressOnly)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dlq
