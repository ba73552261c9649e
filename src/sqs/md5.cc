#include "sqs/md5.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/md5_lanes.h"

namespace dlq {
namespace {

constexpr char kStringTransport = 1;
constexpr char kBinaryTransport = 2;

void AppendLengthPrefixed(std::string& out, std::string_view value) {
  const auto n = static_cast<uint32_t>(value.size());
  const char length[4] = {static_cast<char>((n >> 24) & 0xff), static_cast<char>((n >> 16) & 0xff),
                          static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
  out.append(length, 4);
  out.append(value);
}

// SQS sends digests in lower case; accept either case, as before.
bool DigestEquals(const Md5Digest& digest, std::string_view hex) {
  static constexpr char kDigits[] = "0123456789abcdef";
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    const char hi = kDigits[digest[i] >> 4], lo = kDigits[digest[i] & 0xf];
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(hex[2 * i]) != hi || lower(hex[2 * i + 1]) != lo) return false;
  }
  return true;
}

// The checks of VerifyMessage, given the digests of the body and of the
// attribute encoding (the latter only read when there are attributes).
Status CheckDigests(const Message& message, const Md5Digest& body, const Md5Digest& attributes) {
  if (message.md5_of_body.empty()) {
    return DataLoss(fmt::format("message {}: response has no MD5OfBody", message.message_id));
  }
  if (!DigestEquals(body, message.md5_of_body)) {
    return DataLoss(fmt::format("message {}: MD5OfBody mismatch (SQS sent {}, body hashes to {})", message.message_id,
                                message.md5_of_body, HexEncode(body)));
  }
  if (message.message_attributes.empty() && message.md5_of_message_attributes.empty()) return Status::Ok();
  if (message.md5_of_message_attributes.empty()) {
    return DataLoss(
        fmt::format("message {}: response has message attributes but no MD5OfMessageAttributes", message.message_id));
  }
  const Md5Digest attrs = message.message_attributes.empty() ? Md5("") : attributes;
  if (!DigestEquals(attrs, message.md5_of_message_attributes)) {
    return DataLoss(fmt::format("message {}: MD5OfMessageAttributes mismatch (SQS sent {}, attributes hash to {})",
                                message.message_id, message.md5_of_message_attributes, HexEncode(attrs)));
  }
  return Status::Ok();
}

}  // namespace

std::string Md5OfBody(std::string_view body) {
  return Md5Hex(body);
}

void AppendMessageAttributesDigestInput(const MessageAttributes& attributes, std::string& out) {
  for (const auto& [name, value] : attributes) {
    AppendLengthPrefixed(out, name);
    AppendLengthPrefixed(out, value.data_type);
    if (value.IsBinary()) {
      out.push_back(kBinaryTransport);
      AppendLengthPrefixed(out, value.binary_value);
    } else {
      out.push_back(kStringTransport);
      AppendLengthPrefixed(out, value.string_value);
    }
  }
}

std::string Md5OfMessageAttributes(const MessageAttributes& attributes) {
  if (attributes.empty()) return "";
  std::string input;
  AppendMessageAttributesDigestInput(attributes, input);
  return Md5Hex(input);
}

Status VerifyMessage(const Message& message) {
  const Md5Digest body = Md5(message.body);
  Md5Digest attributes{};
  if (!message.message_attributes.empty()) {
    std::string input;
    AppendMessageAttributesDigestInput(message.message_attributes, input);
    attributes = Md5(input);
  }
  return CheckDigests(message, body, attributes);
}

std::vector<Status> VerifyMessages(std::span<const Message> messages) {
  // Bodies first, then the attribute encodings that exist (all in one
  // buffer): one Md5Many call hashes them side by side.
  std::string encodings;
  std::vector<std::pair<size_t, size_t>> spans(messages.size(), {0, 0});  // in `encodings`
  for (size_t i = 0; i < messages.size(); ++i) {
    const size_t begin = encodings.size();
    AppendMessageAttributesDigestInput(messages[i].message_attributes, encodings);
    spans[i] = {begin, encodings.size() - begin};
  }
  std::vector<std::string_view> inputs;
  inputs.reserve(2 * messages.size());
  for (const Message& m : messages) inputs.push_back(m.body);
  std::vector<size_t> encoding_input(messages.size(), SIZE_MAX);
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].message_attributes.empty()) continue;
    encoding_input[i] = inputs.size();
    inputs.push_back(std::string_view(encodings).substr(spans[i].first, spans[i].second));
  }
  std::vector<Md5Digest> digests(inputs.size());
  Md5Many(inputs, digests);
  std::vector<Status> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const Md5Digest none{};
    out.push_back(
        CheckDigests(messages[i], digests[i], encoding_input[i] == SIZE_MAX ? none : digests[encoding_input[i]]));
  }
  return out;
}

}  // namespace dlq
