#include "causes/cause.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/text_mask.h"

namespace dlq {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026
constexpr size_t kMaxKeyBytes = 512;
constexpr size_t kMaxQuotedBytes = 256;  // longer "quotes" are left as text

// Error strength (rule 3 in cause.h): higher wins.
constexpr int kRankLogged = 1, kRankLoggedTyped = 2, kRankPlatform = 3, kRankTimeout = 4, kRankOutOfMemory = 5,
              kRankUncaught = 6;

constexpr std::string_view kOutOfMemory = "Runtime.OutOfMemory";

int Rank(const LogError& e) {
  switch (e.origin) {
    case ErrorOrigin::kUncaught: return kRankUncaught;
    case ErrorOrigin::kPlatform:
      if (e.type == kOutOfMemory) return kRankOutOfMemory;
      return e.type == "Task timed out" ? kRankTimeout : kRankPlatform;
    case ErrorOrigin::kLogged: return e.type.empty() ? kRankLogged : kRankLoggedTyped;
  }
  return kRankLogged;
}

bool IsWordChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Union-find over the ids lines name ("r:" request, "t:" trace, "c:" correlation).
class IdGroups {
 public:
  int Node(const std::string& id) {
    auto [it, inserted] = nodes_.emplace(id, static_cast<int>(parent_.size()));
    if (inserted) parent_.push_back(it->second);
    return it->second;
  }
  int Root(int n) {
    while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }
  void Join(int a, int b) { parent_[Root(a)] = Root(b); }

 private:
  std::unordered_map<std::string, int> nodes_;
  std::vector<int> parent_;
};

// The text lines of an event's message (records use '\n' or '\r'), blank ones dropped.
std::vector<std::string_view> TextLines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != '\n' && s[i] != '\r') continue;
    std::string_view line = s.substr(start, i - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (!line.empty()) out.push_back(line);
    start = i + 1;
  }
  return out;
}

}  // namespace

std::string TruncateUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  if (max_bytes < kEllipsis.size()) return "";
  size_t keep = max_bytes - kEllipsis.size();
  while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
  std::string out(s.substr(0, keep));
  out += kEllipsis;
  return out;
}

std::string CauseKey(std::string_view type, std::string_view message, std::string_view message_id) {
  std::string plain;
  for (size_t i = 0; i < message.size();) {
    if (!message_id.empty() && message.substr(i, message_id.size()) == message_id) {
      plain += "<msg-id>";
      i += message_id.size();
      continue;
    }
    const char c = message[i];
    // A quote opens a string unless it is an apostrophe ("can't").
    if ((c == '"' || c == '\'') && (c == '"' || i == 0 || !IsWordChar(message[i - 1]))) {
      const size_t close = message.find(c, i + 1);
      if (close != std::string_view::npos && close - i <= kMaxQuotedBytes &&
          message.substr(i, close - i).find('\n') == std::string_view::npos) {
        plain += "<str>";
        i = close + 1;
        continue;
      }
    }
    plain.push_back(c);
    ++i;
  }
  std::string key(type);
  if (!key.empty() && !plain.empty()) key += ": ";
  AppendMaskedText(plain, key);
  CapKey(key, kMaxKeyBytes);
  return key;
}

CauseFinder::CauseFinder(std::vector<LogEvent> events, CauseOptions options)
    : options_(std::move(options)), events_(std::move(events)) {
  lines_.reserve(events_.size());
  for (size_t i = 0; i < events_.size(); ++i)
    lines_.push_back(Line{i, ParseLogLine(events_[i].message, options_.lines)});
  std::stable_sort(lines_.begin(), lines_.end(), [&](const Line& a, const Line& b) {
    const LogEvent &x = events_[a.event], &y = events_[b.event];
    return std::tie(x.log_group, x.log_stream, x.timestamp_ms) < std::tie(y.log_group, y.log_stream, y.timestamp_ms);
  });
  AssignInvocations();
}

void CauseFinder::AssignInvocations() {
  IdGroups groups;
  std::vector<int> node(lines_.size(), -1);
  std::string bracket;  // the request id between START and REPORT in the current stream
  for (size_t i = 0; i < lines_.size(); ++i) {
    const LogEvent& event = events_[lines_[i].event];
    if (i > 0) {
      const LogEvent& previous = events_[lines_[i - 1].event];
      if (event.log_group != previous.log_group || event.log_stream != previous.log_stream) bracket.clear();
    }
    const LogLine& p = lines_[i].parsed;
    if (p.marker == InvocationMarker::kStart && !p.request_id.empty()) bracket = p.request_id;
    std::vector<std::string> ids;
    if (!p.request_id.empty()) ids.push_back("r:" + p.request_id);
    if (!bracket.empty() && (p.request_id.empty() || p.request_id == bracket)) ids.push_back("r:" + bracket);
    if (!p.trace_id.empty()) ids.push_back("t:" + p.trace_id);
    if (!p.correlation_id.empty()) ids.push_back("c:" + p.correlation_id);
    if (!ids.empty()) {
      node[i] = groups.Node(ids[0]);
      for (size_t k = 1; k < ids.size(); ++k) groups.Join(node[i], groups.Node(ids[k]));
    }
    if (p.marker == InvocationMarker::kReport) bracket.clear();
  }
  std::map<int, int> index_of_root;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (node[i] < 0) continue;
    auto [it, inserted] = index_of_root.emplace(groups.Root(node[i]), static_cast<int>(invocations_.size()));
    if (inserted) {
      invocations_.emplace_back();
      invocation_request_ids_.emplace_back();
    }
    lines_[i].invocation = it->second;
    invocations_[it->second].push_back(i);
    std::string& request_id = invocation_request_ids_[it->second];
    if (request_id.empty()) request_id = lines_[i].parsed.request_id;
  }
}

bool CauseFinder::NamesAnotherMessage(size_t line, std::string_view message_id,
                                      const std::vector<std::string>& other_message_ids) const {
  const LogLine& p = lines_[line].parsed;
  if (!p.message_id.empty()) return p.message_id != message_id;
  const std::string& text = events_[lines_[line].event].message;
  return std::any_of(other_message_ids.begin(), other_message_ids.end(), [&](const std::string& other) {
    return !other.empty() && other != message_id && text.find(other) != std::string::npos;
  });
}

std::optional<CauseFinder::Candidate> CauseFinder::InvocationError(
    int invocation, std::string_view message_id, const std::vector<std::string>& other_message_ids) const {
  std::optional<Candidate> best;
  const Line* report = nullptr;
  for (size_t i : invocations_[invocation]) {
    const LogLine& p = lines_[i].parsed;
    if (p.marker == InvocationMarker::kReport && p.memory_size_mb > 0) report = &lines_[i];
    if (!p.error) continue;
    Candidate c{i, *p.error, Rank(*p.error)};
    if (c.rank <= kRankLoggedTyped && NamesAnotherMessage(i, message_id, other_message_ids)) continue;
    if (!best || std::make_tuple(c.rank, !c.error.message.empty()) >=
                     std::make_tuple(best->rank, !best->error.message.empty())) {
      best = std::move(c);
    }
  }
  // Out of memory: the invocation used all its memory and nothing stronger
  // (the handler's own error, a timeout) explains its end.
  if (report && report->parsed.max_memory_used_mb >= report->parsed.memory_size_mb &&
      (!best || best->rank < kRankTimeout)) {
    std::string message = fmt::format("Max Memory Used: {} MB of Memory Size: {} MB", report->parsed.max_memory_used_mb,
                                      report->parsed.memory_size_mb);
    const bool exited = best && best->rank == kRankPlatform;
    if (exited && !best->error.message.empty()) message += fmt::format(" ({})", best->error.message);
    const size_t line = exited ? best->line : static_cast<size_t>(report - lines_.data());
    best = Candidate{line, LogError{std::string(kOutOfMemory), std::move(message), "", ErrorOrigin::kPlatform},
                     kRankOutOfMemory};
  }
  return best;
}

std::vector<std::string> CauseFinder::ContextLines(size_t line_index) const {
  // The invocation's lines, or for a line of none, its stream's lines nearby.
  std::vector<size_t> sequence;
  if (int inv = lines_[line_index].invocation; inv >= 0) {
    sequence = invocations_[inv];
  } else {
    const LogEvent& event = events_[lines_[line_index].event];
    const size_t reach = options_.max_context_lines;
    const size_t first = line_index > reach ? line_index - reach : 0;
    for (size_t i = first; i < lines_.size() && i <= line_index + reach; ++i) {
      const LogEvent& other = events_[lines_[i].event];
      if (other.log_group == event.log_group && other.log_stream == event.log_stream) sequence.push_back(i);
    }
  }
  std::vector<std::string_view> text;
  size_t error_at = 0;
  for (size_t i : sequence) {
    if (i == line_index) error_at = text.size();
    for (std::string_view t : TextLines(events_[lines_[i].event].message)) text.push_back(t);
  }
  // About two thirds of the window before the error's first line, the rest after.
  const size_t cap = options_.max_context_lines;
  size_t begin = error_at > cap * 2 / 3 ? error_at - cap * 2 / 3 : 0;
  const size_t end = std::min(text.size(), begin + cap);
  begin = end > cap ? end - cap : 0;  // a short tail gives its room to lines before
  std::vector<std::string> out;
  for (size_t i = begin; i < end; ++i) out.push_back(TruncateUtf8(text[i], options_.max_line_bytes));
  return out;
}

Cause CauseFinder::MakeCause(const Candidate& c, std::string_view message_id) const {
  const Line& line = lines_[c.line];
  const LogEvent& event = events_[line.event];
  Cause cause;
  cause.type = c.error.type;
  cause.message = TruncateUtf8(c.error.message, options_.max_message_bytes);
  cause.stack = TruncateUtf8(c.error.stack, options_.max_stack_bytes);
  cause.key = CauseKey(cause.type, cause.message, message_id);
  cause.request_id = line.parsed.request_id;
  if (cause.request_id.empty() && line.invocation >= 0) cause.request_id = invocation_request_ids_[line.invocation];
  cause.log_group = event.log_group;
  cause.log_stream = event.log_stream;
  cause.timestamp_ms = event.timestamp_ms;
  cause.context_lines = ContextLines(c.line);
  return cause;
}

CauseResult CauseFinder::Find(std::string_view message_id, const std::vector<std::string>& other_message_ids) const {
  CauseResult result;
  if (message_id.empty()) return result;
  std::vector<size_t> mentions;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (lines_[i].parsed.message_id == message_id ||
        events_[lines_[i].event].message.find(message_id) != std::string::npos) {
      mentions.push_back(i);
    }
  }
  if (mentions.empty()) return result;
  // Rule 2: an error line that names the message; one with a type first, then the earliest.
  std::optional<Candidate> own;
  for (size_t i : mentions) {
    const std::optional<LogError>& error = lines_[i].parsed.error;
    if (!error || (own && (own->error.type.empty() <= error->type.empty()))) continue;
    own = Candidate{i, *error, Rank(*error)};
  }
  if (own) {
    result.outcome = CauseOutcome::kFound;
    result.cause = MakeCause(*own, message_id);
    result.cause->batch_partial = true;
    return result;
  }
  // Rule 3: the error of the latest failed invocation that mentions it.
  std::set<int> invocations;
  for (size_t i : mentions) {
    if (lines_[i].invocation >= 0) invocations.insert(lines_[i].invocation);
  }
  std::optional<Candidate> latest;
  for (int inv : invocations) {
    std::optional<Candidate> c = InvocationError(inv, message_id, other_message_ids);
    if (!c) continue;
    if (!latest || events_[lines_[c->line].event].timestamp_ms >= events_[lines_[latest->line].event].timestamp_ms) {
      latest = std::move(c);
    }
  }
  result.outcome = latest ? CauseOutcome::kFound : CauseOutcome::kNoError;
  if (latest) result.cause = MakeCause(*latest, message_id);
  return result;
}

CauseResult FindCause(std::string_view message_id, std::vector<LogEvent> events, const CauseOptions& options) {
  return CauseFinder(std::move(events), options).Find(message_id);
}

}  // namespace dlq
