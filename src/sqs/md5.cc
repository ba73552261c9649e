#include "sqs/md5.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>

#include "common/crypto.h"
#include "common/strings.h"

namespace dlq {
namespace {

constexpr char kStringTransport = 1;
constexpr char kBinaryTransport = 2;

void UpdateLengthPrefixed(Md5Hasher& hasher, std::string_view value) {
  const auto n = static_cast<uint32_t>(value.size());
  const std::array<char, 4> length = {static_cast<char>((n >> 24) & 0xff), static_cast<char>((n >> 16) & 0xff),
                                      static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
  hasher.Update(std::string_view(length.data(), length.size()));
  hasher.Update(value);
}

}  // namespace

std::string Md5OfBody(std::string_view body) {
  return Md5Hex(body);
}

std::string Md5OfMessageAttributes(const MessageAttributes& attributes) {
  if (attributes.empty()) return "";
  Md5Hasher hasher;
  // std::map orders names bytewise, which for UTF-8 is code point order, as SQS sorts.
  for (const auto& [name, value] : attributes) {
    UpdateLengthPrefixed(hasher, name);
    UpdateLengthPrefixed(hasher, value.data_type);
    if (value.IsBinary()) {
      hasher.Update(std::string_view(&kBinaryTransport, 1));
      UpdateLengthPrefixed(hasher, value.binary_value);
    } else {
      hasher.Update(std::string_view(&kStringTransport, 1));
      UpdateLengthPrefixed(hasher, value.string_value);
    }
  }
  return HexEncode(hasher.Finish());
}

Status VerifyMessage(const Message& message) {
  if (message.md5_of_body.empty()) {
    return DataLoss(fmt::format("message {}: response has no MD5OfBody", message.message_id));
  }
  const std::string body_md5 = Md5OfBody(message.body);
  if (!IEquals(body_md5, message.md5_of_body)) {
    return DataLoss(fmt::format("message {}: MD5OfBody mismatch (SQS sent {}, body hashes to {})", message.message_id,
                                message.md5_of_body, body_md5));
  }
  if (message.message_attributes.empty() && message.md5_of_message_attributes.empty()) return Status::Ok();
  if (message.md5_of_message_attributes.empty()) {
    return DataLoss(
        fmt::format("message {}: response has message attributes but no MD5OfMessageAttributes", message.message_id));
  }
  const std::string attrs_md5 =
      message.message_attributes.empty() ? Md5Hex("") : Md5OfMessageAttributes(message.message_attributes);
  if (!IEquals(attrs_md5, message.md5_of_message_attributes)) {
    return DataLoss(fmt::format("message {}: MD5OfMessageAttributes mismatch (SQS sent {}, attributes hash to {})",
                                message.message_id, message.md5_of_message_attributes, attrs_md5));
  }
  return Status::Ok();
}

}  // namespace dlq
