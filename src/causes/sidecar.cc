#include "causes/sidecar.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "archive/gzip.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// A sidecar object holds at most one run's records for one queue; a larger
// one is not ours.
constexpr size_t kMaxObjectBytes = 256u << 20;

Status ReadObject(ObjectStore& store, const std::string& key, CauseIndex& index) {
  DLQ_ASSIGN_OR_RETURN(std::string gz, store.Get(key));
  Result<std::string> text = GzipDecompress(gz, kMaxObjectBytes);
  if (!text.ok()) {
    index.unreadable.push_back(fmt::format("{}: {}", key, text.status().message()));
    return Status::Ok();
  }
  ++index.objects;
  size_t line_no = 0;
  for (std::string_view line : Split(*text, '\n')) {
    ++line_no;
    if (Trim(line).empty()) continue;
    Result<CauseRecord> r = ParseCauseRecordJson(line);
    if (!r.ok()) {
      index.unreadable.push_back(fmt::format("{} line {}: {}", key, line_no, r.status().message()));
      continue;
    }
    index.Add(std::move(r).value(), key);
  }
  return Status::Ok();
}

Status ReadDir(ObjectStore& store, const std::string& dir, CauseIndex& index) {
  std::string token;
  do {
    Result<ListPage> page = store.List(dir, "", token);
    if (!page.ok()) {
      if (page.status().code() == ErrorCode::kNotFound) return Status::Ok();
      return page.status().WithContext(fmt::format("list {} prefix \"{}\"", store.Describe(), dir));
    }
    for (const ObjectInfo& info : page->objects) {
      if (!EndsWith(info.key, ".jsonl.gz")) continue;
      Status st = ReadObject(store, info.key, index);
      if (!st.ok()) {
        if (st.code() == ErrorCode::kNotFound) continue;  // removed while listing
        return st.WithContext(fmt::format("read {}", info.key));
      }
    }
    token = page->next_token;
  } while (!token.empty());
  return Status::Ok();
}

}  // namespace

std::string CausesDir(std::string_view archive_prefix) {
  std::string dir(archive_prefix);
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  return dir.empty() ? "_causes/" : dir + "/_causes/";
}

std::string CausesQueueDir(std::string_view archive_prefix, std::string_view queue) {
  return CausesDir(archive_prefix) + std::string(queue) + "/";
}

std::string CauseObjectKey(std::string_view archive_prefix, std::string_view queue, SystemTime run_time,
                           std::string_view run_id) {
  return fmt::format("{}{}-{}.jsonl.gz", CausesQueueDir(archive_prefix, queue), FormatAmzDate(run_time), run_id);
}

Result<CauseWriteResult> WriteCauseRecords(ObjectStore& store, std::string_view archive_prefix,
                                           const std::vector<CauseRecord>& records, SystemTime run_time) {
  std::map<std::string, std::string> by_queue;
  for (const CauseRecord& r : records) AppendCauseRecordJson(r, by_queue[r.queue]);
  CauseWriteResult result;
  const std::string run_id = RandomHex(8);
  PutOptions options;
  options.content_type = "application/x-ndjson";
  options.content_encoding = "gzip";
  for (const auto& [queue, text] : by_queue) {
    std::string key = CauseObjectKey(archive_prefix, queue, run_time, run_id);
    DLQ_ASSIGN_OR_RETURN(std::string gz, GzipCompress(text, 6));
    Status st = store.Put(key, gz, options);
    if (!st.ok()) return st.WithContext(fmt::format("write causes {} to {}", key, store.Describe()));
    result.keys.push_back(std::move(key));
  }
  result.records = records.size();
  return result;
}

void CauseIndex::Add(CauseRecord record, const std::string& object_key) {
  auto& messages = queues_[record.queue];
  auto it = messages.find(record.message_id);
  if (it != messages.end()) {
    const Held& h = it->second;
    if (std::tie(record.looked_up_at, object_key) < std::tie(h.record.looked_up_at, h.object_key)) return;
    it->second = Held{std::move(record), object_key};
    return;
  }
  std::string id = record.message_id;
  messages.emplace(std::move(id), Held{std::move(record), object_key});
}

const CauseRecord* CauseIndex::Find(std::string_view queue, std::string_view message_id) const {
  auto q = queues_.find(queue);
  if (q == queues_.end()) return nullptr;
  auto m = q->second.find(std::string(message_id));
  return m == q->second.end() ? nullptr : &m->second.record;
}

size_t CauseIndex::size() const {
  size_t n = 0;
  for (const auto& [queue, messages] : queues_) n += messages.size();
  return n;
}

std::vector<const CauseRecord*> CauseIndex::All() const {
  std::vector<const CauseRecord*> out;
  for (const auto& [queue, messages] : queues_) {
    size_t first = out.size();
    for (const auto& [id, held] : messages) out.push_back(&held.record);
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
              [](const CauseRecord* a, const CauseRecord* b) { return a->message_id < b->message_id; });
  }
  return out;
}

Result<CauseIndex> ReadCauseRecords(ObjectStore& store, std::string_view archive_prefix,
                                    const std::vector<std::string>& queues) {
  CauseIndex index;
  if (queues.empty()) {
    DLQ_RETURN_IF_ERROR(ReadDir(store, CausesDir(archive_prefix), index));
    return index;
  }
  std::set<std::string> seen;
  for (const std::string& q : queues) {
    if (!seen.insert(q).second) continue;
    DLQ_RETURN_IF_ERROR(ReadDir(store, CausesQueueDir(archive_prefix, q), index));
  }
  return index;
}

}  // namespace dlq
