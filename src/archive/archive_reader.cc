#include "archive/archive_reader.h"

#include <fmt/format.h>

#include <regex>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "archive/gzip.h"

namespace dlq {
namespace {

void Report(ReadStats& stats, size_t cap, std::string key, uint64_t line, std::string message) {
  if (stats.errors.size() < cap) stats.errors.push_back({std::move(key), line, std::move(message)});
}

}  // namespace

bool RecordFilter::Matches(const ArchiveRecord& r) const {
  if (!queue.empty() && r.queue != queue) return false;
  if (sent_from || sent_to) {
    if (!r.sent_at) return false;
    if (sent_from && *r.sent_at < *sent_from) return false;
    if (sent_to && *r.sent_at >= *sent_to) return false;
  }
  if (archived_from && r.archived_at < *archived_from) return false;
  if (archived_to && r.archived_at >= *archived_to) return false;
  if (!body_contains.empty() && r.body.find(body_contains) == std::string::npos) return false;
  return true;
}

ArchiveReader::ArchiveReader(ObjectStore& store, ArchiveReaderOptions options)
    : store_(store), options_(std::move(options)) {}

Result<ReadStats> ArchiveReader::ForEach(const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn) {
  std::optional<std::regex> regex;
  if (!options_.filter.body_regex.empty()) {
    try {
      regex.emplace(options_.filter.body_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument(fmt::format("body regex \"{}\": {}", options_.filter.body_regex, e.what()));
    }
  }
  ReadStats stats;
  std::unordered_set<std::string> seen;
  const size_t cap = options_.max_reported_errors;
  std::string token;
  do {
    Result<ListPage> page = store_.List(options_.prefix, "", token);
    if (!page.ok()) {
      return page.status().WithContext(fmt::format("list {} prefix \"{}\"", store_.Describe(), options_.prefix));
    }
    for (const ObjectInfo& info : page->objects) {
      ++stats.objects;
      Result<std::string> data = store_.Get(info.key);
      if (!data.ok()) return data.status().WithContext(fmt::format("get {} key {}", store_.Describe(), info.key));
      Result<std::string> text = GzipDecompress(*data, options_.max_object_bytes);
      if (!text.ok()) {
        ++stats.corrupt_objects;
        Report(stats, cap, info.key, 0, text.status().ToString());
        continue;
      }
      std::string_view rest = *text;
      uint64_t line_no = 0;
      while (!rest.empty()) {
        size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        ++stats.lines;
        Result<ArchiveRecord> rec = ParseRecordJson(line);
        if (!rec.ok()) {
          ++stats.corrupt_lines;
          Report(stats, cap, info.key, line_no, rec.status().ToString());
          continue;
        }
        if (!options_.filter.Matches(*rec) || (regex && !std::regex_search(rec->body, *regex))) {
          ++stats.filtered;
          continue;
        }
        if (options_.deduplicate) {
          std::string id;
          id.reserve(rec->queue.size() + rec->message_id.size() + 1);
          id.append(rec->queue).push_back('\n');
          id.append(rec->message_id);
          if (!seen.insert(std::move(id)).second) {
            ++stats.duplicates;
            continue;
          }
        }
        ++stats.records;
        if (!fn(*rec, RecordLocation{info.key, line_no})) return stats;
      }
    }
    token = page->next_token;
  } while (!token.empty());
  return stats;
}

}  // namespace dlq
