// Lambda's records of failed asynchronous invocations in an S3 bucket: a
// function whose OnFailure destination is a bucket gets one JSON object per
// event that failed every attempt (on failure only), under
//   aws/lambda/async/<function-name>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>
// holding the invocation record: requestContext (requestId, functionArn,
// condition), requestPayload, responseContext, responsePayload
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
//
// `replay --from-lambda-records s3://BUCKET[/PREFIX] --to-origin` reads them
// as the archive form reads the archive (ScanLambdaRecords): each record is
// a dead-letter message whose origin clue is the record itself
// (replay/origin_clue.h kLambdaDestination), so it goes back to
// requestContext.functionArn with requestPayload. A guarded run to a
// function whose OnFailure destination is a bucket watches the function's
// prefix there for its re-failures (LambdaRecordProbe). Nothing here writes
// or deletes an object.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "archive/record.h"
#include "common/clock.h"
#include "common/status.h"
#include "query/scan.h"
#include "replay/redrive_guard.h"
#include "s3/object_store.h"

namespace dlq {

// Lambda's fixed prefix for the records of asynchronous invocations.
inline constexpr std::string_view kLambdaAsyncRecordsPrefix = "aws/lambda/async/";
// A record object larger than this is not read (an event is at most 1 MiB;
// the record adds the response and context).
inline constexpr uint64_t kMaxLambdaRecordBytes = uint64_t{16} << 20;

// "aws/lambda/async/<function_name>/": where Lambda writes a function's records.
std::string LambdaRecordsPrefix(std::string_view function_name);

// The time in a record's key (its file name's YYYY-MM-DDTHH.MM.SS, UTC);
// nullopt when the key does not end that way.
std::optional<SystemTime> LambdaRecordKeyTime(std::string_view key);

// The record in object `key` of `bucket` as a dead-letter message:
// message_id = requestContext.requestId, body = the object's text as it is,
// sent_at = archived_at = the key's time, queue = "s3://BUCKET/<key's
// directory>", attribute "S3Key" = the key. kInvalidArgument naming the key
// when the text is not a Lambda invocation record (ReadOriginClue: a
// requestContext with functionArn and requestId). md5_of_body is the body's.
Result<ArchiveRecord> LambdaRecordFromObject(const std::string& bucket, const std::string& key, std::string text);

// Calls `fn` for each record under `prefix` (a key prefix ending in '/', or
// empty for kLambdaAsyncRecordsPrefix) that `filter` matches, in key order,
// one object at a time; `fn` returns false to stop. An object that cannot be
// read, is too large or is not a record is skipped and reported in the
// stats (skipped_objects, errors), never fatal; the listing's error is.
// `bucket` names the records' queue (see LambdaRecordFromObject).
Result<ScanStats> ScanLambdaRecords(ObjectStore& store, const std::string& bucket, const std::string& prefix,
                                    const std::function<bool(const ArchiveRecord&)>& matches,
                                    const std::function<bool(const ArchiveRecord&)>& fn);

// The re-failures of a replay to functions whose OnFailure destination is a
// bucket: every record Lambda writes under a watched function's prefix from
// the hour the probe started on, matched to what was sent by its keys
// (RefailureKeys: the request id and the payload's digest). Each look lists
// the hour prefixes (.../YYYY/MM/DD/YYYY-MM-DDTHH) from the start to now,
// reads only the objects it has not read yet (none over
// kMaxLambdaRecordBytes: skipped, logged), at most
// `max_reads_per_look` of them (the next look reads the rest). Not
// thread-safe; `store` and `clock` must outlive it.
class LambdaRecordProbe final : public RefailureProbe {
 public:
  // `store`: the bucket `bucket`; `functions`: the function names whose
  // prefixes are watched.
  LambdaRecordProbe(ObjectStore& store, std::string bucket, Clock& clock, std::vector<std::string> functions,
                    uint64_t max_reads_per_look = 200);

  Result<std::vector<RefailedMessage>> Find(const std::map<std::string, ReplayedMessage>& watched) override;
  uint64_t receives() const override { return reads_; }  // objects read to look
  uint64_t lists() const { return lists_; }

 private:
  // The objects under `function`'s prefix for the hours from start_ to now
  // that were not read yet.
  Result<std::vector<ObjectInfo>> NewObjects(const std::string& function);

  ObjectStore& store_;
  std::string bucket_;
  std::string where_;  // "s3://BUCKET"
  Clock& clock_;
  std::vector<std::string> functions_;
  uint64_t max_reads_;
  SystemTime start_;
  std::set<std::string> read_;      // keys read (or unreadable: never read again)
  std::set<std::string> reported_;  // watched keys already reported
  uint64_t reads_ = 0;
  uint64_t lists_ = 0;
};

// Several probes as one: each looks in turn, and the first error stops the look.
class RefailureProbes final : public RefailureProbe {
 public:
  explicit RefailureProbes(std::vector<std::unique_ptr<RefailureProbe>> probes) : probes_(std::move(probes)) {}
  Result<std::vector<RefailedMessage>> Find(const std::map<std::string, ReplayedMessage>& watched) override;
  uint64_t receives() const override;

 private:
  std::vector<std::unique_ptr<RefailureProbe>> probes_;
};

}  // namespace dlq
