// SQS message digests, computed the way SQS computes MD5OfBody and
// MD5OfMessageAttributes. Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sqs/types.h"

namespace dlq {

// Lower-case hex MD5 of the body's bytes (SQS bodies are UTF-8).
std::string Md5OfBody(std::string_view body);

// SQS's attribute digest: for each attribute in byte order of its name, the
// 4-byte big-endian length and bytes of the name, then of the data type, then
// one transport byte (1 = String/Number, 2 = Binary) and the length and bytes
// of the value (raw bytes for Binary). Lower-case hex of the MD5 of it all.
// Returns "" for an empty map (SQS sends no digest then).
std::string Md5OfMessageAttributes(const MessageAttributes& attributes);
// Appends the bytes whose MD5 that digest is (nothing for an empty map).
void AppendMessageAttributesDigestInput(const MessageAttributes& attributes, std::string& out);

// Checks md5_of_body and md5_of_message_attributes against the message's
// content. kDataLoss naming the message id and the digest that does not
// match (or is missing while its content is present).
Status VerifyMessage(const Message& message);

// VerifyMessage for each message (result i for message i), with the digests
// of all of them computed side by side (common/md5_lanes.h).
std::vector<Status> VerifyMessages(std::span<const Message> messages);

}  // namespace dlq
