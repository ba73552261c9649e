// Feeds arbitrary bytes to the SNS query-protocol response parsers
// (ListSubscriptions, GetSubscriptionAttributes, Publish) and, as an error
// response's body, to AwsClient's error reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "aws/aws_client.h"
#include "sns/sns_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  if (auto page = dlq::sns::ParseListSubscriptionsResponse(xml); page.ok()) {
    for (const auto& s : page->subscriptions) static_cast<void>(s.subscription_arn.size() + s.endpoint.size());
  }
  dlq::sns::ParseGetSubscriptionAttributesResponse(xml).status().IgnoreError();
  dlq::sns::ParsePublishResponse(xml).status().IgnoreError();
  dlq::HttpResponse response;
  response.status = 403;
  response.body.assign(xml);
  dlq::ErrorFromResponse(response, "Publish", "arn:aws:sns:us-east-1:123456789012:t").IgnoreError();
  return 0;
}
