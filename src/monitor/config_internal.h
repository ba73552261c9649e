// Private to the config files (config*.cc; not for other modules): where a
// value came from, the text helpers error messages use, the schema builder
// and the checks that span several keys. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/config.h"

namespace dlq::config_internal {

// A position in the YAML text (1-based).
struct Loc {
  int line = 1;
  int col = 1;
};

// Where a setting's effective value came from.
struct Origin {
  std::string path;  // full field path, e.g. "defaults.batch.max_bytes"
  Loc loc;
  bool from_group = false;
};
using Origins = std::map<std::string, Origin>;  // by path relative to the settings block

// A problem a check found; the parser reports it as "FILE:LINE:COL: field: message".
struct Problem {
  Loc loc;
  std::string field;  // "" when the message names no field
  std::string message;
};
using Problems = std::vector<Problem>;

// A value fit for an error message: truncated, control characters replaced, in quotes.
std::string Quote(std::string_view v);
// "a.b"; either part may be empty.
std::string Join(std::string_view a, std::string_view b);
bool Contains(std::span<const std::string_view> list, std::string_view s);
bool IsUrl(std::string_view s);  // http:// or https://
bool ValidQueueName(std::string_view s);
// A URL fit for an error message: scheme and host only (it may hold a secret).
std::string RedactedUrl(std::string_view url);
// "a, b, c" ("" shown as "\"\"").
std::string Joined(const std::vector<std::string_view>& choices);
// "1KiB", "8MiB", or a byte count when not a whole number of KiB.
std::string SizeText(uint64_t bytes);
// "[a, b]".
std::string ListText(const std::vector<std::string>& items);

// Every key, one function per section of the file (config_schema.cc).
std::vector<ConfigKey> BuildSchema();

// Checks that span several keys (config_checks.cc). They read parsed values
// and where they came from, and append what is wrong to `out`.
//
// The top level: concurrency.per_queue <= global, shard.index < count.
void CheckTop(const MonitorConfig& config, const Origins& origins, Loc root, Problems& out);
// The effective settings of `defaults` or of a group. In a group, a problem
// is reported only when the group set one of the keys involved (otherwise it
// was reported under defaults already).
void CheckSettings(const GroupSettings& s, const Origins& origins, const std::string& base, Loc fallback, bool in_group,
                   const MonitorConfig& config, Problems& out);
// A group's own keys: name required and unique (`names` collects them),
// some selector, external_id needs role_arn. `present`: the keys given,
// valid or not.
void CheckGroup(const GroupConfig& g, const Origins& origins, const std::set<std::string>& present,
                const std::string& base, Loc at, std::set<std::string>& names, Problems& out);
// A group's `region:` is a region AWS has (common/aws_regions.h), reported at
// its line with a suggestion, unless `allow_unknown`
// (DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1). Endpoint overrides do not excuse it:
// a stand-in such as moto fails on an unknown region too, with an HTML 500.
void CheckGroupRegion(const GroupConfig& g, const Origins& origins, bool allow_unknown, Problems& out);

}  // namespace dlq::config_internal
