#include "replay/ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr std::string_view kPartMagic = "dlq-archive sent ids v1";
constexpr std::string_view kIndexMagic = "dlq-archive sent index v1";
constexpr size_t kMaxIdBytes = 1024;  // SQS ids are 36 characters; anything near this is not an id

// Splits at '\n'; the text must end with one (a torn write does not).
Result<std::vector<std::string_view>> Lines(std::string_view text, std::string_view what) {
  if (text.empty() || text.back() != '\n') return InvalidArgument(fmt::format("{}: does not end with a newline", what));
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// An id, a part name or a URL on one line: no control characters, bounded.
bool PlainField(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdBytes) return false;
  return std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

Result<std::string_view> Header(const std::vector<std::string_view>& lines, size_t i, std::string_view name,
                                std::string_view what) {
  if (i >= lines.size() || !lines[i].starts_with(name) || lines[i].size() <= name.size() ||
      lines[i][name.size()] != ' ' || !PlainField(lines[i].substr(name.size() + 1))) {
    return InvalidArgument(fmt::format("{}: line {} is not \"{} ...\"", what, i + 1, name));
  }
  return lines[i].substr(name.size() + 1);
}

}  // namespace

uint64_t LedgerIdHash(std::string_view message_id) {
  Sha256Digest d = Sha256(message_id);
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) h = (h << 8) | d[i];
  return h;
}

std::string LedgerDestinationKey(std::string_view destination_url) {
  return Sha256Hex(destination_url).substr(0, 32);
}

std::string SerializeLedgerPart(const LedgerPart& part) {
  std::string out = fmt::format("{}\ndestination {}\n", kPartMagic, part.destination);
  for (const std::string& id : part.ids) {
    out += id;
    out += '\n';
  }
  return out;
}

Result<LedgerPart> ParseLedgerPart(std::string_view text) {
  constexpr std::string_view kWhat = "not a replay ledger part";
  DLQ_ASSIGN_OR_RETURN(std::vector<std::string_view> lines, Lines(text, kWhat));
  if (lines[0] != kPartMagic) return InvalidArgument(fmt::format("{}: first line is not \"{}\"", kWhat, kPartMagic));
  LedgerPart part;
  DLQ_ASSIGN_OR_RETURN(std::string_view dest, Header(lines, 1, "destination", kWhat));
  part.destination.assign(dest);
  for (size_t i = 2; i < lines.size(); ++i) {
    if (!PlainField(lines[i])) return InvalidArgument(fmt::format("{}: line {} is not a message id", kWhat, i + 1));
    part.ids.emplace_back(lines[i]);
  }
  return part;
}

std::string SerializeLedgerIndex(const LedgerIndex& index) {
  std::string out = fmt::format("{}\ndestination {}\n", kIndexMagic, index.destination);
  for (const std::string& p : index.parts) out += fmt::format("part {}\n", p);
  out += "hashes\n";
  for (uint64_t h : index.hashes) out += fmt::format("{:016x}\n", h);
  return out;
}

Result<LedgerIndex> ParseLedgerIndex(std::string_view text) {
  constexpr std::string_view kWhat = "not a replay ledger index";
  DLQ_ASSIGN_OR_RETURN(std::vector<std::string_view> lines, Lines(text, kWhat));
  if (lines[0] != kIndexMagic) return InvalidArgument(fmt::format("{}: first line is not \"{}\"", kWhat, kIndexMagic));
  LedgerIndex index;
  DLQ_ASSIGN_OR_RETURN(std::string_view dest, Header(lines, 1, "destination", kWhat));
  index.destination.assign(dest);
  size_t i = 2;
  for (; i < lines.size() && lines[i] != "hashes"; ++i) {
    DLQ_ASSIGN_OR_RETURN(std::string_view part, Header(lines, i, "part", kWhat));
    index.parts.emplace_back(part);
  }
  if (i == lines.size()) return InvalidArgument(fmt::format("{}: no \"hashes\" line", kWhat));
  index.hashes.reserve(lines.size() - i - 1);
  for (++i; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    uint64_t h = 0;
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), h, 16);
    if (l.size() != 16 || ec != std::errc() || p != l.data() + l.size() ||
        std::any_of(l.begin(), l.end(), [](char c) { return c >= 'A' && c <= 'F'; })) {
      return InvalidArgument(fmt::format("{}: line {} is not 16 lowercase hex digits", kWhat, i + 1));
    }
    if (!index.hashes.empty() && h <= index.hashes.back()) {
      return InvalidArgument(fmt::format("{}: line {}: hashes are not sorted and unique", kWhat, i + 1));
    }
    index.hashes.push_back(h);
  }
  return index;
}

ReplayLedger::ReplayLedger(ObjectStore& store, std::string prefix, Clock& clock)
    : store_(store),
      prefix_(std::move(prefix)),
      clock_(clock),
      run_stamp_(FormatAmzDate(clock.Now())),
      run_id_(RandomHex(8)) {}

std::string ReplayLedger::Dir(const char* kind, const std::string& destination_url) const {
  std::string dir = prefix_.empty() ? "" : prefix_ + "/";
  return dir + fmt::format("_audit/{}/{}/", kind, LedgerDestinationKey(destination_url));
}

Result<bool> ReplayLedger::AlreadySent(const std::string& destination_url, std::string_view message_id) {
  auto it = sent_.find(destination_url);
  if (it == sent_.end()) {
    DLQ_RETURN_IF_ERROR(Load(destination_url));
    it = sent_.find(destination_url);
  }
  return std::binary_search(it->second.begin(), it->second.end(), LedgerIdHash(message_id));
}

namespace {

Result<std::vector<std::string>> ListKeys(ObjectStore& store, const std::string& dir) {
  std::vector<std::string> keys;
  std::string token;
  do {
    DLQ_ASSIGN_OR_RETURN(ListPage page, store.List(dir, "/", token));
    for (ObjectInfo& o : page.objects) keys.push_back(std::move(o.key));
    token = page.next_token;
  } while (!token.empty());
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string BaseName(const std::string& key) {
  size_t slash = key.rfind('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

}  // namespace

Status ReplayLedger::Load(const std::string& destination_url) {
  std::vector<uint64_t>& hashes = sent_[destination_url];
  const std::string index_dir = Dir("index", destination_url), part_dir = Dir("sent", destination_url);
  auto ctx = [&](const std::string& key) { return fmt::format("replay ledger {}/{}", store_.Describe(), key); };
  auto index_keys = ListKeys(store_, index_dir);
  if (!index_keys.ok()) return index_keys.status().WithContext(ctx(index_dir));
  auto part_keys = ListKeys(store_, part_dir);
  if (!part_keys.ok()) return part_keys.status().WithContext(ctx(part_dir));

  // The index covering the most parts (its name starts with that count), or
  // the next one when it is unreadable: indexes are a cache.
  std::set<std::string> covered;
  for (auto it = index_keys->rbegin(); it != index_keys->rend(); ++it) {
    if (!it->ends_with(".idx")) continue;
    auto data = store_.Get(*it);
    if (!data.ok()) return data.status().WithContext(ctx(*it));
    auto index = ParseLedgerIndex(*data);
    if (!index.ok() || index->destination != destination_url) {
      load_stats_.warnings.push_back(fmt::format(
          "{}: ignored ({})", ctx(*it), index.ok() ? "written for another destination" : index.status().message()));
      continue;
    }
    covered.insert(index->parts.begin(), index->parts.end());
    hashes = std::move(index->hashes);
    load_stats_.index_ids += hashes.size();
    break;
  }
  std::vector<std::string> uncovered;
  for (const std::string& key : *part_keys) {
    if (key.ends_with(".ids") && covered.count(BaseName(key)) == 0) uncovered.push_back(key);
  }
  const size_t from_index = hashes.size();  // sorted and unique already
  for (const std::string& key : uncovered) {
    auto data = store_.Get(key);
    if (!data.ok()) return data.status().WithContext(ctx(key));
    // Not the operator's input but the trail's state: exit 1, not 2.
    auto part = ParseLedgerPart(*data);
    if (!part.ok()) {
      return FailedPrecondition(fmt::format("{}: {}; nothing can be skipped safely until it is repaired or moved away",
                                            ctx(key), part.status().message()));
    }
    if (part->destination != destination_url) {
      return FailedPrecondition(
          fmt::format("{}: written for {}, not {}", ctx(key), part->destination, destination_url));
    }
    for (const std::string& id : part->ids) hashes.push_back(LedgerIdHash(id));
    ++load_stats_.parts_read;
  }
  std::sort(hashes.begin() + static_cast<std::ptrdiff_t>(from_index), hashes.end());
  std::inplace_merge(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(from_index), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());

  if (rebuild_index_ && uncovered.size() > kLedgerCompactAfter) {
    LedgerIndex index;
    index.destination = destination_url;
    index.parts.assign(covered.begin(), covered.end());
    for (const std::string& key : uncovered) index.parts.push_back(BaseName(key));
    std::sort(index.parts.begin(), index.parts.end());
    index.hashes = hashes;
    const std::string key = index_dir + fmt::format("{:010}-{}.idx", index.parts.size(), RandomHex(8));
    PutOptions options;
    options.content_type = "text/plain";
    options.create_only = true;
    // A failed rebuild costs speed only: the parts stay the truth.
    Status st = store_.Put(key, SerializeLedgerIndex(index), options);
    if (st.ok()) {
      load_stats_.index_written = true;
    } else {
      load_stats_.warnings.push_back(fmt::format("{}: not written: {}", ctx(key), st.message()));
    }
  }
  return Status::Ok();
}

Status ReplayLedger::RecordSent(const std::string& destination_url, const std::string& message_id) {
  std::vector<std::string>& ids = new_[destination_url];
  ids.push_back(message_id);
  if (ids.size() >= kLedgerPartIds) return WritePart(destination_url, ids);
  return Status::Ok();
}

Status ReplayLedger::WritePart(const std::string& destination_url, std::vector<std::string>& ids) {
  if (ids.empty()) return Status::Ok();
  const std::string key =
      Dir("sent", destination_url) + fmt::format("{}-{}-{:06}.ids", run_stamp_, run_id_, next_part_++);
  PutOptions options;
  options.content_type = "text/plain";
  options.create_only = true;
  Status st = store_.Put(key, SerializeLedgerPart({destination_url, ids}), options);
  if (!st.ok()) return st.WithContext(fmt::format("replay ledger {}/{}", store_.Describe(), key));
  ids.clear();
  return Status::Ok();
}

Status ReplayLedger::Flush() {
  for (auto& [url, ids] : new_) DLQ_RETURN_IF_ERROR(WritePart(url, ids));
  return Status::Ok();
}

}  // namespace dlq
