// Writes the bench/search archive with the library's own record writer and
// gzip: N records of ~1 KiB JSON bodies with 3 message attributes, as
// OBJECTS default-layout `.json.gz` objects under DIR (file:// layout).
// Deterministic (fixed seed), so every run searches the same bytes.
// Usage: gen_archive DIR [records=200000] [objects=20] [gzip_level=1]
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/crypto.h"
#include "common/time_util.h"

namespace {

constexpr const char* kErrors[] = {"Timeout",        "PaymentDeclined", "InventoryMissing", "ValidationError",
                                   "Throttled",      "ConnectionReset", "SchemaMismatch",   "DuplicateOrder",
                                   "AddressInvalid", "FraudSuspected"};
constexpr const char* kWords[] = {"alpha",  "bravo",  "charlie", "delta", "echo",    "foxtrot",  "golf",    "hotel",
                                  "india",  "juliet", "kilo",    "lima",  "mike",    "november", "oscar",   "papa",
                                  "quebec", "romeo",  "sierra",  "tango", "uniform", "victor",   "whiskey", "xray"};

std::string Body(std::mt19937_64& rng, int i, const char* error) {
  std::string b = fmt::format(
      R"({{"order_id":"ord-{:08}","customer":{{"id":"cust-{:06}","tier":"{}"}},"error":{{"type":"{}","message":"order {} failed: {}","retryable":{}}},"items":[)",
      i, rng() % 500000, rng() % 3 == 0 ? "gold" : "standard", error, i, error, rng() % 2 == 0 ? "true" : "false");
  for (int k = 0; k < 4; ++k) {
    if (k > 0) b += ',';
    b += fmt::format(R"({{"sku":"SKU-{:05}","qty":{},"price":{}.{:02}}})", rng() % 20000, 1 + rng() % 9,
                     1 + rng() % 500, rng() % 100);
  }
  b += R"(],"note":")";
  // Mostly repeated phrasing with some variety, like real failure payloads.
  const size_t phrase = rng() % 6;
  while (b.size() < 850) {
    b += kWords[(phrase * 3 + b.size() / 7 + (rng() % 8 == 0 ? rng() % 24 : 0)) % std::size(kWords)];
    b += ' ';
  }
  b += fmt::format(R"(","trace":"{:016x}"}})", rng());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gen_archive DIR [records] [objects] [gzip_level]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int records = argc > 2 ? std::stoi(argv[2]) : 200000;
  const int objects = argc > 3 ? std::stoi(argv[3]) : 20;
  const int level = argc > 4 ? std::stoi(argv[4]) : 1;
  std::mt19937_64 rng(42);
  dlq::ArchiveContext ctx;
  ctx.queue = "bench-dlq";
  ctx.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/bench-dlq";
  ctx.region = "us-east-1";
  ctx.account_id = "123456789012";
  ctx.archiver_version = "0.1.0";
  ctx.host = "bench";
  const dlq::SystemTime base = *dlq::ParseIso8601("2026-11-20T08:00:00Z");
  const dlq::KeyTemplate tmpl = dlq::KeyTemplate::Default();
  uint64_t raw = 0, compressed = 0;
  const int per_object = records / objects;
  for (int o = 0; o < objects; ++o) {
    std::string lines;
    const dlq::SystemTime t = base + std::chrono::minutes(o);
    for (int j = 0; j < per_object; ++j) {
      const int i = o * per_object + j;
      const char* error = kErrors[rng() % std::size(kErrors)];
      dlq::Message m;
      m.message_id = fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", rng() & 0xffffffff, rng() & 0xffff,
                                 rng() & 0xfff, rng() & 0xfff, rng() & 0xffffffffffff);
      m.body = Body(rng, i, error);
      m.md5_of_body = dlq::Md5Hex(m.body);
      const int64_t sent = dlq::ToUnixMillis(t) - static_cast<int64_t>(rng() % 86400000);
      m.attributes = {{"SentTimestamp", std::to_string(sent)},
                      {"ApproximateReceiveCount", std::to_string(1 + rng() % 5)}};
      m.message_attributes["tenant"] = {"String", fmt::format("tenant-{:03}", rng() % 100), ""};
      m.message_attributes["attempt"] = {"Number", std::to_string(1 + rng() % 5), ""};
      m.message_attributes["source"] = {"String", rng() % 2 == 0 ? "checkout-service" : "billing-service", ""};
      m.md5_of_message_attributes = "00000000000000000000000000000000";
      dlq::AppendRecordJson(m, ctx, t + std::chrono::milliseconds(j), lines);
    }
    std::string gz = dlq::GzipCompress(lines, level).value();
    raw += lines.size();
    compressed += gz.size();
    std::string key =
        tmpl.Render({"dlq-archive", ctx.queue, ctx.region, ctx.account_id, t, fmt::format("{:016x}", o + 1)});
    std::filesystem::path path = std::filesystem::path(dir) / key;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size()));
  }
  std::printf("%d records in %d objects: %.1f MB uncompressed, %.1f MB compressed\n", per_object * objects, objects,
              raw / 1e6, compressed / 1e6);
  return 0;
}
