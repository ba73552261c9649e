// Archive record (format version 1): one SQS message as one JSON line.
// The line format is the contract in doc/archive-format.md. All functions are
// pure and thread-safe. Receipt handles are never stored.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "sqs/limits.h"
#include "sqs/types.h"

namespace dlq {

inline constexpr int kArchiveSchemaVersion = 1;

// What the archiver knows about the queue it drains; constant for a batch.
struct ArchiveContext {
  std::string queue;  // DLQ name, e.g. "orders-dlq"
  std::string queue_url;
  std::string region;
  std::string account_id;
  std::string archiver_version;
  std::string host;
  bool fifo = false;
  std::chrono::seconds retention{sqs::kDefaultRetention};  // the DLQ's MessageRetentionPeriod
};

struct ArchiverInfo {
  std::string version;
  std::string host;
  bool operator==(const ArchiverInfo&) const = default;
};

// A decoded archive line. Times have millisecond precision on disk.
struct ArchiveRecord {
  int64_t schema = kArchiveSchemaVersion;
  std::string queue;
  std::string queue_url;
  std::string region;
  std::string account_id;
  std::string message_id;
  std::string body;  // raw bytes, whatever the on-disk encoding ("body" or "body_base64")
  std::string md5_of_body;
  std::string md5_of_message_attributes;  // empty when the message had no message attributes
  std::map<std::string, std::string> attributes;
  MessageAttributes message_attributes;  // Binary values: raw bytes
  std::optional<SystemTime> sent_at;     // from SentTimestamp; nullopt when SQS did not return it
  SystemTime expires_at;
  SystemTime archived_at;
  int64_t receive_count = 0;  // ApproximateReceiveCount as SQS reported it, 0 when unknown
  // How many of those receives were dlq-archive's own; nullopt when the
  // writer did not record it (objects written before this field).
  std::optional<int64_t> own_receive_count;
  std::string source_queue_arn;          // DeadLetterQueueSourceArn, empty when unknown
  bool extended_client_pointer = false;  // body is an SQS Extended Client S3 pointer
  ArchiverInfo archiver;

  bool operator==(const ArchiveRecord&) const = default;
};

// Builds the record the archiver writes for `msg` (expiry via ComputeExpiry).
ArchiveRecord MakeArchiveRecord(const Message& msg, const ArchiveContext& ctx, SystemTime archived_at);

// Appends exactly one JSON line (ending in '\n') for `msg` to `out`. Hot path.
// A body that is not valid UTF-8 is stored losslessly as "body_base64".
// `own_receive_count`: how many of the message's receives were ours (the
// line has no such field without it).
void AppendRecordJson(const Message& msg, const ArchiveContext& ctx, SystemTime archived_at, std::string& out,
                      std::optional<int64_t> own_receive_count = std::nullopt);
// Same line format from an already-built record (used by tests and rewriting tools).
void AppendRecordJson(const ArchiveRecord& record, std::string& out);

// The receives of the consumer (and any other tool): SQS's count minus ours,
// never below 0; SQS's count when ours was not recorded.
int64_t ConsumerReceiveCount(const ArchiveRecord& record);

// Parses one line (a trailing '\n' or "\r\n" is allowed). Unknown fields are
// ignored. Errors: kDataLoss naming the bad or missing field; kFailedPrecondition
// for a schema version newer than this reader supports.
Result<ArchiveRecord> ParseRecordJson(std::string_view line);

// The message to replay: same id, body, attributes and MD5s; no receipt handle.
Message RecordToMessage(const ArchiveRecord& record);

// True when the message is an SQS Extended Client pointer to an S3 payload
// (the body is ["software.amazon.payloadoffloading.PayloadS3Pointer", {...}]
// or a message attribute ExtendedPayloadSize / SQSLargePayloadSize is present).
bool IsExtendedClientPointer(std::string_view body, const MessageAttributes& attrs);

}  // namespace dlq
