// SQS message digests, computed the way SQS computes MD5OfBody and
// MD5OfMessageAttributes. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

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

// Checks md5_of_body and md5_of_message_attributes against the message's
// content. kDataLoss naming the message id and the digest that does not
// match (or is missing while its content is present).
Status VerifyMessage(const Message& message);

}  // namespace dlq
