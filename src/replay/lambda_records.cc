#include "replay/lambda_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "replay/origin_clue.h"
#include "sqs/md5.h"

namespace dlq {
namespace {

constexpr size_t kMaxReportedErrors = 100;
constexpr int kMaxPages = 100000;  // a listing that never ends is an error, not a hang

// "YYYY-MM-DDTHH.MM.SS" is 19 characters.
constexpr size_t kKeyTimeLength = 19;

// "YYYY-MM-DDTHH" of `t`: the start of a key's file name for that hour.
std::string HourStamp(SystemTime t) {
  const CivilTime c = ToCivilTime(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}", c.year, c.month, c.day, c.hour);
}

// ".../YYYY/MM/DD/YYYY-MM-DDTHH": the keys of `function`'s records written in the hour of `t`.
std::string HourPrefix(const std::string& function, SystemTime t) {
  const CivilTime c = ToCivilTime(t);
  return fmt::format("{}{:04}/{:02}/{:02}/{}", LambdaRecordsPrefix(function), c.year, c.month, c.day, HourStamp(t));
}

// Lists every key under `prefix`, following continuation tokens.
Result<std::vector<ObjectInfo>> ListAll(ObjectStore& store, const std::string& prefix, uint64_t& lists) {
  std::vector<ObjectInfo> out;
  std::string token;
  for (int page = 0; page < kMaxPages; ++page) {
    ++lists;
    DLQ_ASSIGN_OR_RETURN(ListPage p, store.List(prefix, "", token));
    for (ObjectInfo& o : p.objects) out.push_back(std::move(o));
    if (p.next_token.empty()) return out;
    token = std::move(p.next_token);
  }
  return Internal(
      fmt::format("listing {}/{}: pagination did not end after {} pages", store.Describe(), prefix, kMaxPages));
}

// Reads object `o` of `bucket` as a record (LambdaRecordFromObject), never
// more than kMaxLambdaRecordBytes of it (the listed size is checked first):
// kInvalidArgument when it is too large or not a record; the store's error
// (kNotFound: deleted since it was listed) otherwise.
Result<ArchiveRecord> ReadLambdaRecord(ObjectStore& store, const std::string& bucket, const ObjectInfo& o) {
  if (o.size > kMaxLambdaRecordBytes) {
    return InvalidArgument(fmt::format("s3://{}/{}: {} bytes, over the {} MiB a record is read up to", bucket, o.key,
                                       o.size, kMaxLambdaRecordBytes >> 20));
  }
  DLQ_ASSIGN_OR_RETURN(std::string text, store.Get(o.key));
  return LambdaRecordFromObject(bucket, o.key, std::move(text));
}

}  // namespace

std::string LambdaRecordsPrefix(std::string_view function_name) {
  return fmt::format("{}{}/", kLambdaAsyncRecordsPrefix, function_name);
}

std::optional<SystemTime> LambdaRecordKeyTime(std::string_view key) {
  const size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (name.size() < kKeyTimeLength) return std::nullopt;
  std::string iso(name.substr(0, kKeyTimeLength));
  if (iso[13] != '.' || iso[16] != '.') return std::nullopt;
  iso[13] = ':';
  iso[16] = ':';
  return ParseIso8601(iso + "Z");
}

Result<ArchiveRecord> LambdaRecordFromObject(const std::string& bucket, const std::string& key, std::string text) {
  ArchiveRecord r;
  r.body = std::move(text);
  const OriginClue clue = ReadOriginClue(r);
  if (clue.kind != ClueKind::kLambdaDestination) {
    return InvalidArgument(
        fmt::format("s3://{}/{} is not a Lambda invocation record (no requestContext with a "
                    "functionArn and a requestId)",
                    bucket, key));
  }
  r.message_id = clue.request_id;
  r.md5_of_body = Md5OfBody(r.body);  // as read: S3 checked it in transit, and nothing else vouches for it
  const size_t slash = key.rfind('/');
  r.queue = fmt::format("s3://{}/{}", bucket, slash == std::string::npos ? "" : key.substr(0, slash));
  r.attributes["S3Key"] = key;
  if (auto t = LambdaRecordKeyTime(key)) {
    r.sent_at = *t;
    r.archived_at = *t;
    r.expires_at = SystemTime::max();  // an object stays until someone deletes it
  }
  return r;
}

Result<ScanStats> ScanLambdaRecords(ObjectStore& store, const std::string& bucket, const std::string& prefix,
                                    const std::function<bool(const ArchiveRecord&)>& matches,
                                    const std::function<bool(const ArchiveRecord&)>& fn) {
  const std::string under = prefix.empty() ? std::string(kLambdaAsyncRecordsPrefix) : prefix;
  ScanStats stats;
  stats.passes = 1;
  auto skip = [&](const std::string& key, const std::string& why) {
    ++stats.skipped_objects;
    if (stats.errors.size() < kMaxReportedErrors) stats.errors.push_back({key, 0, why});
  };
  // One page of the listing at a time: a bucket of millions of records is
  // never held in memory.
  std::string token;
  for (int page = 0; page < kMaxPages; ++page) {
    DLQ_ASSIGN_OR_RETURN(ListPage listed, store.List(under, "", token));
    stats.objects_listed += listed.objects.size();
    for (const ObjectInfo& o : listed.objects) {
      if (EndsWith(o.key, "/")) continue;  // a folder placeholder
      ++stats.objects;
      auto record = ReadLambdaRecord(store, bucket, o);
      if (!record.ok()) {
        skip(o.key, record.status().message());
        continue;
      }
      stats.bytes += record->body.size();
      stats.compressed_bytes += record->body.size();
      ++stats.lines;
      ++stats.parsed;
      ++stats.objects_done;
      if (matches && !matches(*record)) continue;
      ++stats.records;
      if (!fn(*record)) return stats;
    }
    if (listed.next_token.empty()) return stats;
    token = std::move(listed.next_token);
  }
  return Internal(
      fmt::format("listing {}/{}: pagination did not end after {} pages", store.Describe(), under, kMaxPages));
}

LambdaRecordProbe::LambdaRecordProbe(ObjectStore& store, std::string bucket, Clock& clock,
                                     std::vector<std::string> functions, uint64_t max_reads_per_look)
    : store_(store),
      bucket_(std::move(bucket)),
      where_("s3://" + bucket_),
      clock_(clock),
      functions_(std::move(functions)),
      max_reads_(std::max<uint64_t>(max_reads_per_look, 1)),
      start_(clock.Now()) {}

Result<std::vector<ObjectInfo>> LambdaRecordProbe::NewObjects(const std::string& function) {
  std::vector<ObjectInfo> objects;
  const SystemTime now = clock_.Now();
  // Hour by hour from the start; a record written in the start's hour but
  // before it is read once and matches nothing.
  for (SystemTime t = start_; HourStamp(t) <= HourStamp(now); t += std::chrono::hours(1)) {
    const std::string prefix = HourPrefix(function, t);
    auto listed = ListAll(store_, prefix, lists_);
    if (!listed.ok()) return listed.status().WithContext(fmt::format("listing {}/{}", where_, prefix));
    for (ObjectInfo& o : *listed) {
      if (!read_.contains(o.key)) objects.push_back(std::move(o));
    }
  }
  return objects;
}

Result<std::vector<RefailedMessage>> LambdaRecordProbe::Find(const std::map<std::string, ReplayedMessage>& watched) {
  std::vector<RefailedMessage> found;
  uint64_t budget = max_reads_;
  for (const std::string& function : functions_) {
    DLQ_ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects, NewObjects(function));
    for (const ObjectInfo& o : objects) {
      if (budget == 0) return found;  // the next look reads the rest
      --budget;
      ++reads_;
      auto record = ReadLambdaRecord(store_, bucket_, o);
      const ErrorCode code = record.ok() ? ErrorCode::kOk : record.status().code();
      if (code != ErrorCode::kOk && code != ErrorCode::kNotFound && code != ErrorCode::kInvalidArgument) {
        return record.status().WithContext(fmt::format("reading {}/{}", where_, o.key));
      }
      read_.insert(o.key);
      if (code == ErrorCode::kNotFound) continue;  // deleted since it was listed
      if (code == ErrorCode::kInvalidArgument) {
        Log().Log(LogLevel::kWarn, "replay.unreadable_lambda_record",
                  {{"object", where_ + "/" + o.key}, {"reason", record.status().message()}});
        continue;
      }
      for (const std::string& k : RefailureKeys(*record)) {
        auto w = watched.find(k);
        if (w == watched.end() || !reported_.insert(k).second) continue;
        found.push_back({w->second.message_id, k, w->second.destination, where_ + "/" + o.key, clock_.Now()});
        break;
      }
    }
  }
  return found;
}

Result<std::vector<RefailedMessage>> RefailureProbes::Find(const std::map<std::string, ReplayedMessage>& watched) {
  std::vector<RefailedMessage> found;
  for (const auto& p : probes_) {
    DLQ_ASSIGN_OR_RETURN(std::vector<RefailedMessage> f, p->Find(watched));
    for (RefailedMessage& m : f) found.push_back(std::move(m));
  }
  return found;
}

uint64_t RefailureProbes::receives() const {
  uint64_t n = 0;
  for (const auto& p : probes_) n += p->receives();
  return n;
}

}  // namespace dlq
