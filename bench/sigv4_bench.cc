// SigV4 signing cost for the requests dlq-archive sends most: SQS JSON calls
// and S3 PutObject of a gzipped batch.
#include <benchmark/benchmark.h>

#include <string>

#include "aws/sigv4.h"
#include "common/time_util.h"

namespace dlq {
namespace {

Credentials BenchCreds() {
  Credentials creds;
  creds.access_key_id = "AKIDEXAMPLE";
  creds.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  creds.session_token = "FQoGZXIvYXdzEXAMPLEsessiontokenEXAMPLEsessiontokenEXAMPLE==";
  return creds;
}

SigningOptions BenchOptions(std::string service, bool s3) {
  SigningOptions options;
  options.region = "eu-west-1";
  options.service = std::move(service);
  options.time = FromUnixMillis(1757507400000);
  options.s3 = s3;
  return options;
}

// A typical SQS JSON 1.0 POST (SendMessageBatch-sized body of 1 KiB).
void BM_SignSqsJsonPost(benchmark::State& state) {
  HttpRequest base;
  base.method = "POST";
  base.url = "https://sqs.eu-west-1.amazonaws.com/";
  base.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                  {"X-Amz-Target", "AmazonSQS.SendMessageBatch"},
                  {"User-Agent", "dlq-archive/0.1.0"}};
  base.body = R"({"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq","Entries":[)";
  base.body.resize(1024, 'x');
  Credentials creds = BenchCreds();
  SigningOptions options = BenchOptions("sqs", false);
  for (auto _ : state) {
    HttpRequest request = base;
    SignRequest(request, creds, options);
    benchmark::DoNotOptimize(request.headers.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(base.body.size()));
}
BENCHMARK(BM_SignSqsJsonPost);

// S3 PutObject of a 1 MiB object; arg 0 signs the body's SHA-256, arg 1 UNSIGNED-PAYLOAD.
void BM_SignS3Put1MiB(benchmark::State& state) {
  HttpRequest base;
  base.method = "PUT";
  base.url =
      "https://dlq-archive-bucket.s3.eu-west-1.amazonaws.com/dlq-archive/orders-dlq/20250910/"
      "orders-dlq-123000-7f3a9c2e.json.gz";
  base.headers = {
      {"Content-Type", "application/gzip"}, {"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="}, {"If-None-Match", "*"}};
  base.body.assign(1 << 20, '\x5a');
  Credentials creds = BenchCreds();
  SigningOptions options = BenchOptions("s3", true);
  options.unsigned_payload = state.range(0) != 0;
  HttpRequest request = base;
  for (auto _ : state) {
    // Re-signing in place (as a retry does) avoids timing a 1 MiB copy.
    SignRequest(request, creds, options);
    benchmark::DoNotOptimize(request.headers.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(base.body.size()));
}
BENCHMARK(BM_SignS3Put1MiB)->ArgName("unsigned_payload")->Arg(0)->Arg(1);

}  // namespace
}  // namespace dlq
