// Small string helpers shared by the wire layer. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlq {

std::string ToLower(std::string_view s);
bool IEquals(std::string_view a, std::string_view b);
std::string_view Trim(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
// The whole of `s` as a base-10 integer (optional leading '-'); nullopt on
// anything else, including overflow and surrounding spaces.
std::optional<int64_t> ParseInt64(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

// RFC 3986 percent-encoding of everything but unreserved characters
// (A-Z a-z 0-9 - _ . ~). When encode_slash is false, '/' is kept.
std::string UriEncode(std::string_view s, bool encode_slash = true);
// Decodes %XX sequences ('+' is kept as is). Malformed escapes are kept literally.
std::string UriDecode(std::string_view s);

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate nearest to `word` (case-insensitively) when it is within
// max(2, word.size() / 4) edits; empty when none is that close.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dlq
