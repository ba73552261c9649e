// SQS wire-layer costs: attribute digests, ReceiveMessage parsing (with
// verification, as SqsClient does it), and SendMessageBatch body building.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "common/md5_lanes.h"
#include "sqs/json_codec.h"
#include "sqs/md5.h"

namespace dlq {
namespace {

MessageAttributes ThreeAttributes() {
  return {{"trace-id", {.data_type = "String", .string_value = "Root=1-5759e988-bd862e3fe1be46a994272793"}},
          {"retries", {.data_type = "Number", .string_value = "3"}},
          {"payload", {.data_type = "Binary", .string_value = {}, .binary_value = std::string(64, '\x7f')}}};
}

std::string Body1K(int i) {
  std::string body = fmt::format("{{\"order\":{},\"note\":\"caf\u00e9 \\\"quoted\\\"\",\"pad\":\"", i);
  body.append(1024 - body.size() - 2, 'x');
  body += "\"}";
  return body;
}

// A realistic response: 10 messages, 1 KiB bodies (JSON text, escaped on the wire), 3 attributes.
std::string ReceiveResponse10() {
  const MessageAttributes attrs = ThreeAttributes();
  const std::string attrs_md5 = Md5OfMessageAttributes(attrs);
  std::string json = R"({"Messages":[)";
  for (int i = 0; i < 10; ++i) {
    const std::string body = Body1K(i);
    // Reuse the request writer to escape the body and encode the attributes.
    std::string encoded =
        sqs::BuildSendMessageRequest("", SendEntry{.id = "", .body = body, .message_attributes = attrs});
    // {"QueueUrl":"","MessageBody":...,"MessageAttributes":{...}} -> reuse the pieces.
    const size_t body_at = encoded.find("\"MessageBody\":") + 14;
    const size_t attrs_at = encoded.find(",\"MessageAttributes\":");
    const std::string body_json = encoded.substr(body_at, attrs_at - body_at);
    const std::string attrs_json = encoded.substr(attrs_at + 21, encoded.size() - 1 - (attrs_at + 21));
    if (i > 0) json += ',';
    json += fmt::format(
        R"({{"MessageId":"00000000-0000-4000-8000-{:012d}","ReceiptHandle":"AQEB{}","MD5OfBody":"{}","Body":{},)"
        R"("Attributes":{{"SentTimestamp":"1757500000000","ApproximateReceiveCount":"4","SenderId":"AIDAEXAMPLE",)"
        R"("ApproximateFirstReceiveTimestamp":"1757500001000"}},"MD5OfMessageAttributes":"{}","MessageAttributes":{}}})",
        i, std::string(180, 'h'), Md5OfBody(body), body_json, attrs_md5, attrs_json);
  }
  json += "]}";
  return json;
}

void BM_Md5OfMessageAttributes3(benchmark::State& state) {
  const MessageAttributes attrs = ThreeAttributes();
  for (auto _ : state) benchmark::DoNotOptimize(Md5OfMessageAttributes(attrs));
}
BENCHMARK(BM_Md5OfMessageAttributes3);

void BM_ParseReceiveMessage10x1KiB(benchmark::State& state) {
  const std::string json = ReceiveResponse10();
  size_t messages = 0;
  for (auto _ : state) {
    auto parsed = sqs::ParseReceiveMessageResponse(json);
    if (!parsed.ok() || parsed->size() != 10) state.SkipWithError("parse failed");
    messages += parsed->size();
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size()));
  state.counters["messages/s"] = benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseReceiveMessage10x1KiB);

void BM_ParseAndVerifyReceiveMessage10x1KiB(benchmark::State& state) {
  const std::string json = ReceiveResponse10();
  size_t messages = 0;
  for (auto _ : state) {
    auto parsed = sqs::ParseReceiveMessageResponse(json);
    if (!parsed.ok()) state.SkipWithError("parse failed");
    for (const Status& s : VerifyMessages(*parsed)) {
      if (!s.ok()) state.SkipWithError("verify failed");
    }
    messages += parsed->size();
  }
  state.counters["messages/s"] = benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseAndVerifyReceiveMessage10x1KiB);

// The checks of one reply's 10 messages: one by one through OpenSSL (as
// before) and side by side (VerifyMessages, what SqsClient uses).
void BM_VerifyReply10x1KiBOneByOne(benchmark::State& state) {
  auto parsed = sqs::ParseReceiveMessageResponse(ReceiveResponse10());
  for (auto _ : state) {
    for (const Message& m : *parsed) {
      if (!VerifyMessage(m).ok()) state.SkipWithError("verify failed");
    }
  }
  state.counters["messages/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * parsed->size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifyReply10x1KiBOneByOne);

void BM_VerifyReply10x1KiBSideBySide(benchmark::State& state) {
  auto parsed = sqs::ParseReceiveMessageResponse(ReceiveResponse10());
  for (auto _ : state) {
    for (const Status& s : VerifyMessages(*parsed)) {
      if (!s.ok()) state.SkipWithError("verify failed");
    }
  }
  state.counters["messages/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * parsed->size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifyReply10x1KiBSideBySide);

// The digests of one reply's inputs (range(1) bodies of 1 KiB and as many
// attribute encodings) by each implementation: range(0) 1 = OpenSSL one at a
// time, 8 = AVX2 lanes, 16 = AVX-512 lanes (skipped where the CPU lacks them).
void BM_Md5ManyReplyInputs(benchmark::State& state) {
  const int lanes = static_cast<int>(state.range(0));
  if ((lanes == 8 && !Md5ManyHasEightLanes()) || (lanes == 16 && !__builtin_cpu_supports("avx512f"))) {
    state.SkipWithError("this CPU lacks these lanes");
    return;
  }
  std::vector<std::string> data;
  const int messages = static_cast<int>(state.range(1));
  for (int i = 0; i < messages; ++i) data.push_back(Body1K(i));
  for (int i = 0; i < messages; ++i) data.push_back(std::string(90, static_cast<char>('a' + i)));
  std::vector<std::string_view> inputs(data.begin(), data.end());
  std::vector<Md5Digest> out(inputs.size());
  for (auto _ : state) {
    if (lanes == 1) {
      for (size_t i = 0; i < inputs.size(); ++i) out[i] = Md5(inputs[i]);
    } else if (lanes == 8) {
      Md5ManyEightLanes(inputs, out);
    } else {
      Md5ManyLanes(inputs, out);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["messages/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * messages), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Md5ManyReplyInputs)->ArgsProduct({{1, 8, 16}, {1, 2, 4, 6, 10}});

void BM_BuildSendMessageBatch10x1KiB(benchmark::State& state) {
  std::vector<SendEntry> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back(
        SendEntry{.id = fmt::format("m{}", i), .body = Body1K(i), .message_attributes = ThreeAttributes()});
  }
  for (auto _ : state) benchmark::DoNotOptimize(sqs::BuildSendMessageBatchRequest("https://sqs/1/q", entries));
}
BENCHMARK(BM_BuildSendMessageBatch10x1KiB);

}  // namespace
}  // namespace dlq
