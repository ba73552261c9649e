#include "archive/key_layout.h"

#include <fmt/format.h>

#include <utility>

#include "common/crypto.h"
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

}  // namespace

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
  return RenderUpTo(fields, false);
}

std::string KeyTemplate::QueuePrefix(const KeyFields& fields) const {
  return RenderUpTo(fields, true);
}

std::string NewBatchId() {
  return RandomHex(8);
}

}  // namespace dlq
