// Feeds arbitrary bytes to every SQS JSON response parser, and checks that
// a parsed ReceiveMessage response survives MD5 verification without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sqs/json_codec.h"
#include "sqs/md5.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  if (auto messages = dlq::sqs::ParseReceiveMessageResponse(json); messages.ok()) {
    for (const auto& m : *messages) dlq::VerifyMessage(m).IgnoreError();
  }
  dlq::sqs::ParseListQueuesResponse(json).status().IgnoreError();
  dlq::sqs::ParseListDeadLetterSourceQueuesResponse(json).status().IgnoreError();
  dlq::sqs::ParseGetQueueAttributesResponse(json).status().IgnoreError();
  dlq::sqs::ParseQueueUrlResponse(json).status().IgnoreError();
  dlq::sqs::ParseBatchResponse(json).status().IgnoreError();
  dlq::sqs::ParseSendMessageBatchResponse(json).status().IgnoreError();
  dlq::sqs::ParseSendMessageResponse(json).status().IgnoreError();
  return 0;
}
