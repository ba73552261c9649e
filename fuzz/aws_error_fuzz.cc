// Feeds arbitrary bytes to ErrorFromResponse as an AWS error response. The
// first byte picks the HTTP status (300..554) and whether an
// x-amzn-query-error header (taken from the body) is present; the rest is the
// body. The parser must never crash, and always returns a non-OK Status with
// AWS details and a bounded message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "aws/aws_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  dlq::HttpResponse response;
  response.status = 300 + (data[0] & 0x7f) * 2;
  response.body.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 0x80) != 0) {
    response.headers.emplace_back("x-amzn-query-error", response.body.substr(0, 64));
    response.headers.emplace_back("x-amzn-RequestId", response.body.substr(0, 16));
  }
  dlq::Status status = dlq::ErrorFromResponse(response, "ReceiveMessage", "https://sqs.example/q");
  if (status.ok() || !status.aws().has_value() || status.aws()->http_status != response.status) __builtin_trap();
  if (status.message().size() > 4096 || status.aws()->error_code.size() > 256) __builtin_trap();
  (void)status.ToString();
  return 0;
}
