#include "archive/key_layout.h"

#include <fmt/format.h>

#include <utility>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"

namespace dlq {
namespace {

std::string_view TrimSlashes(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

std::string CollapseSlashes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '/' && (out.empty() || out.back() == '/')) continue;
    out.push_back(c);
  }
  return out;
}

constexpr std::string_view kDotSegmentWhy = "dot segments would be removed by HTTP clients and name another place";

// The first control byte of `s`, if any.
const char* FindControlByte(std::string_view s) {
  for (const char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return &c;
  }
  return nullptr;
}

bool IsDotSegment(std::string_view s) {
  return s == "." || s == "..";
}

// The segment checks of KeyTemplate::Parse, on a template whose placeholders
// are known (none holds a '/').
Status CheckTemplateSegments(std::string_view text) {
  for (std::string_view segment : Split(text, '/')) {
    if (segment.empty()) {
      return InvalidArgument(
          fmt::format("key template \"{}\": empty segment (a '//' or a leading or trailing '/') is not allowed", text));
    }
    // The segment's literal text, and whether every placeholder in it may
    // render empty ({prefix} can be "", {region} and {account_id} unknown).
    std::string literal;
    bool only_empty_placeholders = true;
    for (size_t i = 0; i < segment.size(); ++i) {
      if (segment[i] != '{') {
        literal.push_back(segment[i]);
        continue;
      }
      size_t close = segment.find('}', i);
      std::string_view name = segment.substr(i + 1, close - i - 1);
      only_empty_placeholders =
          only_empty_placeholders && (name == "prefix" || name == "region" || name == "account_id");
      i = close;
    }
    if (!literal.empty() && literal.find_first_not_of('.') == std::string::npos && only_empty_placeholders &&
        literal.size() <= 2) {
      return InvalidArgument(
          fmt::format("key template \"{}\": segment '{}' is or can render as a dot segment, which is not allowed ({})",
                      text, segment, kDotSegmentWhy));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateKeyPath(std::string_view path, std::string_view what) {
  for (std::string_view segment : Split(path, '/')) {
    if (segment.empty()) {
      return InvalidArgument(fmt::format("{} '{}': empty segment (a '//' or a leading or trailing '/') is not allowed",
                                         what, EscapeControlBytes(path)));
    }
    if (IsDotSegment(segment)) {
      return InvalidArgument(fmt::format("{} segment '{}' is not allowed ({})", what, segment, kDotSegmentWhy));
    }
    if (const char* c = FindControlByte(segment)) {
      return InvalidArgument(fmt::format("{} segment '{}' holds control character 0x{:02x}, which is not allowed", what,
                                         EscapeControlBytes(segment), static_cast<unsigned char>(*c)));
    }
  }
  return Status::Ok();
}

Result<KeyTemplate> KeyTemplate::Parse(std::string_view text) {
  static const std::pair<std::string_view, Part> kPlaceholders[] = {
      {"prefix", Part::kPrefix},
      {"queue", Part::kQueue},
      {"region", Part::kRegion},
      {"account_id", Part::kAccountId},
      {"yyyymmdd", Part::kYyyymmdd},
      {"yyyy", Part::kYyyy},
      {"mm", Part::kMm},
      {"dd", Part::kDd},
      {"hh", Part::kHh},
      {"hhmmss", Part::kHhmmss},
      {"yyyy-mm-dd", Part::kIsoDate},
      {"batch_id", Part::kBatchId},
  };
  if (const char* c = FindControlByte(text)) {
    return InvalidArgument(fmt::format("key template \"{}\": control character 0x{:02x} is not allowed",
                                       EscapeControlBytes(text), static_cast<unsigned char>(*c)));
  }
  KeyTemplate t;
  t.text_ = std::string(text);
  bool has_batch_id = false;
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '}') return InvalidArgument(fmt::format("key template \"{}\": unmatched '}}' at offset {}", text, i));
    if (c != '{') {
      literal.push_back(c);
      ++i;
      continue;
    }
    size_t close = text.find('}', i + 1);
    if (close == std::string_view::npos) {
      return InvalidArgument(fmt::format("key template \"{}\": unmatched '{{' at offset {}", text, i));
    }
    std::string_view name = text.substr(i + 1, close - i - 1);
    const Part* part = nullptr;
    for (const auto& [n, p] : kPlaceholders)
      if (n == name) part = &p;
    if (part == nullptr) {
      return InvalidArgument(fmt::format(
          "key template \"{}\": unknown placeholder {{{}}} (known: {{prefix}} {{queue}} {{region}} {{account_id}} "
          "{{yyyymmdd}} {{yyyy}} {{mm}} {{dd}} {{hh}} {{hhmmss}} {{yyyy-mm-dd}} {{batch_id}})",
          text, name));
    }
    if (!literal.empty()) t.segments_.push_back({Part::kLiteral, std::move(literal)});
    literal.clear();
    t.segments_.push_back({*part, {}});
    if (*part == Part::kBatchId) has_batch_id = true;
    i = close + 1;
  }
  if (!literal.empty()) t.segments_.push_back({Part::kLiteral, std::move(literal)});
  if (!has_batch_id) {
    return InvalidArgument(fmt::format(
        "key template \"{}\": must contain {{batch_id}} so concurrent archivers never write the same key", text));
  }
  DLQ_RETURN_IF_ERROR(CheckTemplateSegments(text));
  return t;
}

KeyTemplate KeyTemplate::Default() {
  Result<KeyTemplate> t = Parse(kDefaultKeyTemplate);
  return std::move(t).value();
}

std::string KeyTemplate::RenderUpTo(const KeyFields& f, bool stop_at_variable) const {
  std::string out;
  const bool need_time = !stop_at_variable;
  CivilTime u{};
  if (need_time) u = ToCivilTime(f.time);
  for (const Segment& s : segments_) {
    switch (s.part) {
      case Part::kLiteral: out += s.literal; break;
      case Part::kPrefix: out += TrimSlashes(f.prefix); break;
      case Part::kQueue: out += f.queue; break;
      case Part::kRegion: out += f.region; break;
      case Part::kAccountId: out += f.account_id; break;
      default:
        if (stop_at_variable) {
          size_t slash = out.rfind('/');
          out.resize(slash == std::string::npos ? 0 : slash + 1);
          std::string collapsed = CollapseSlashes(out);
          return collapsed;
        }
        switch (s.part) {
          case Part::kYyyymmdd: out += fmt::format("{:04}{:02}{:02}", u.year, u.month, u.day); break;
          case Part::kYyyy: out += fmt::format("{:04}", u.year); break;
          case Part::kMm: out += fmt::format("{:02}", u.month); break;
          case Part::kDd: out += fmt::format("{:02}", u.day); break;
          case Part::kHh: out += fmt::format("{:02}", u.hour); break;
          case Part::kHhmmss: out += fmt::format("{:02}{:02}{:02}", u.hour, u.minute, u.second); break;
          case Part::kIsoDate: out += fmt::format("{:04}-{:02}-{:02}", u.year, u.month, u.day); break;
          case Part::kBatchId: out += f.batch_id; break;
          default: break;
        }
    }
  }
  if (stop_at_variable) {
    size_t slash = out.rfind('/');
    out.resize(slash == std::string::npos ? 0 : slash + 1);
  }
  return CollapseSlashes(out);
}

std::string KeyTemplate::Render(const KeyFields& fields) const {
  std::string key = RenderUpTo(fields, false);
  if (!key.empty() && key.back() == '/') key.pop_back();  // a trailing placeholder rendered empty
  return key;
}

std::string KeyTemplate::QueuePrefix(const KeyFields& fields) const {
  return RenderUpTo(fields, true);
}

std::string NewBatchId() {
  return RandomHex(8);
}

}  // namespace dlq
