#include "common/regex.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <optional>

namespace dlq {
namespace {

constexpr std::string_view kSyntaxNote = "patterns use RE2 syntax (doc/querying.md)";

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// A construct RE2 refuses because matching it needs backtracking, as the
// pattern wrote it.
struct Unsupported {
  std::string_view what;  // plural noun: "backreferences"
  std::string token;      // the pattern's text: "\1", "(?="
  std::string_view hint;  // empty, or what to write instead
};

// `p` from `start` up to and including the first `close` (or to the end),
// at most 32 characters.
std::string TokenThrough(std::string_view p, size_t start, char close) {
  size_t end = p.find(close, start);
  size_t n = end == std::string_view::npos ? p.size() - start : end - start + 1;
  return std::string(p.substr(start, std::min<size_t>(n, 32)));
}

// "(?" at `i`: a group RE2 cannot take, if it is one.
std::optional<Unsupported> UnsupportedGroup(std::string_view p, size_t i) {
  std::string_view rest = p.substr(i + 2);
  auto starts = [&](std::string_view s) { return rest.substr(0, s.size()) == s; };
  if (starts("=") || starts("!")) return Unsupported{"lookahead assertions", std::string(p.substr(i, 3)), {}};
  if (starts("<=") || starts("<!")) return Unsupported{"lookbehind assertions", std::string(p.substr(i, 4)), {}};
  if (starts(">")) return Unsupported{"atomic groups", "(?>", {}};
  if (starts("P=")) return Unsupported{"backreferences", TokenThrough(p, i, ')'), {}};
  if (starts("(")) return Unsupported{"conditionals", "(?(", {}};
  if (starts("R") || starts("&") || starts("P>") || (!rest.empty() && IsDigit(rest[0])) ||
      (rest.size() >= 2 && (rest[0] == '+' || rest[0] == '-') && IsDigit(rest[1]))) {
    return Unsupported{"recursion and subroutine calls", TokenThrough(p, i, ')'), {}};
  }
  if (starts("<")) return Unsupported{"named groups", TokenThrough(p, i, '>'), " in this form (write (?P<name>...))"};
  return std::nullopt;
}

// "\" at `i`, outside a character class: a backreference, if it is one.
std::optional<Unsupported> UnsupportedEscape(std::string_view p, size_t i) {
  if (i + 1 >= p.size()) return std::nullopt;
  char c = p[i + 1];
  // RE2 reads \1-\7 followed by an octal digit as an octal code ("\12" is '\n').
  bool octal = c >= '1' && c <= '7' && i + 2 < p.size() && p[i + 2] >= '0' && p[i + 2] <= '7';
  if (c >= '1' && c <= '9' && !octal) return Unsupported{"backreferences", std::string(p.substr(i, 2)), {}};
  if ((c == 'k' || c == 'g') && i + 2 < p.size()) {
    char open = p[i + 2];
    char close = open == '<' ? '>' : open == '{' ? '}' : open == '\'' ? '\'' : '\0';
    std::string token;
    if (close != '\0') {
      token = std::string(p.substr(i, 3)) + TokenThrough(p, i + 3, close);
    } else if (c == 'g' && (IsDigit(open) || open == '-')) {
      token = std::string(p.substr(i, 3));
    }
    if (!token.empty()) return Unsupported{"backreferences", std::move(token), {}};
  }
  return std::nullopt;
}

// The length of a counted repetition ("{2}", "{2,}", "{2,5}") at `i`, or 0.
size_t RepetitionLength(std::string_view p, size_t i) {
  size_t j = i + 1;
  while (j < p.size() && IsDigit(p[j])) ++j;
  if (j == i + 1) return 0;
  if (j < p.size() && p[j] == ',') {
    ++j;
    while (j < p.size() && IsDigit(p[j])) ++j;
  }
  return j < p.size() && p[j] == '}' ? j + 1 - i : 0;
}

// The first construct in `p` that RE2 refuses because it needs backtracking.
// Escapes, \Q...\E literals and character classes are skipped, so "[(?=]"
// or "\(?=" name nothing.
std::optional<Unsupported> FindUnsupported(std::string_view p) {
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 < p.size() && p[i + 1] == 'Q') {
        size_t end = p.find("\\E", i + 2);
        i = end == std::string_view::npos ? p.size() : end + 2;
        continue;
      }
      if (auto u = UnsupportedEscape(p, i)) return u;
      i += 2;
      continue;
    }
    if (c == '[') {  // skip the class: "[]a]" and "[^]a]" hold a literal ']'
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') {
        if (p[j] == '\\') {
          j += 2;
        } else if (p.substr(j, 2) == "[:") {
          size_t end = p.find(":]", j + 2);
          j = end == std::string_view::npos ? j + 1 : end + 2;
        } else {
          ++j;
        }
      }
      i = j + 1;
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      if (auto u = UnsupportedGroup(p, i)) return u;
      i += 2;
      continue;
    }
    size_t quantifier = c == '*' || c == '+' || c == '?' ? 1 : c == '{' ? RepetitionLength(p, i) : 0;
    if (quantifier > 0 && i + quantifier < p.size() && p[i + quantifier] == '+') {
      return Unsupported{"possessive quantifiers", std::string(p.substr(i, quantifier + 1)), {}};
    }
    i += quantifier > 0 ? quantifier : 1;
  }
  return std::nullopt;
}

}  // namespace

Result<Regex> Regex::Compile(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return InvalidArgument(fmt::format("is longer than {} bytes", kMaxPatternBytes));
  }
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingUTF8);
  options.set_log_errors(false);
  options.set_max_mem(kMaxMem);
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (re->ok()) return Regex(std::move(re));
  // Named only when RE2 refused the pattern: the scan cannot reject what RE2 takes.
  if (std::optional<Unsupported> u = FindUnsupported(pattern)) {
    return InvalidArgument(fmt::format("{} ({}) are not supported{}; {}", u->what, u->token, u->hint, kSyntaxNote));
  }
  return InvalidArgument(fmt::format("not a valid regular expression ({}); {}", re->error(), kSyntaxNote));
}

bool Regex::Search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool Regex::FullMatch(std::string_view text) const {
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

const std::string& Regex::pattern() const {
  return re_->pattern();
}

}  // namespace dlq
