// Filter: which archive records a search, stats or replay selects. All
// conditions are AND-ed; an empty or unset field does not filter. A Filter is
// a value; Matches is const and thread-safe. BuildFilter turns the raw
// command-line flags (the same on search, stats and replay) into a Filter,
// rejecting anything malformed with kInvalidArgument naming the flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "archive/record.h"
#include "common/clock.h"
#include "common/regex.h"
#include "common/status.h"
#include "query/fingerprint.h"
#include "query/json_path.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace dlq {

enum class TimeField { kSent, kArchived };

struct Filter {
  std::vector<std::string> queues;                               // record.queue equals any of them
  std::optional<SystemTime> since, until;                        // half-open [since, until) on `by`
  TimeField by = TimeField::kSent;                               // records without sent_at never match a sent bound
  std::vector<std::string> ids;                                  // message_id equals any of them
  std::vector<std::pair<std::string, std::string>> attr_equals;  // message attribute NAME has string value VALUE
  std::vector<std::string> attr_exists;                          // message attribute NAME present
  std::string body_contains;                                     // byte substring of the body
  std::string body_regex;                                        // RE2 syntax, searched anywhere in the body
  std::vector<std::pair<JsonPath, std::string>> json_equals;     // --json 'PATH=VALUE' (JsonPath::Lookup text)
  std::optional<int64_t> min_receive_count;
  std::string fingerprint;                 // GroupId(FailureGroupKey(record, fingerprint_options)) equals it
  FingerprintOptions fingerprint_options;  // also what stats groups by

  // A Binary attribute never equals a VALUE (it has no string value). A
  // body_regex that does not compile matches nothing (BuildFilter and
  // CompileRegex reject it up front).
  bool Matches(const ArchiveRecord& record) const;
  // Stable one-line text of the filter (a JSON object; lists sorted, times
  // RFC 3339 UTC), equal for equal filters whatever the flag order. Used as
  // checkpoint identity and in audit records.
  std::string Canonical() const;
  // True when no condition is set (every record matches).
  bool Empty() const;

  // Compiles body_regex (common/regex.h: linear time, bounded memory) once so
  // Matches does not recompile it per record. kInvalidArgument naming
  // --body-regex, the pattern and the reason (an unsupported construct by name).
  Status CompileRegex();

 private:
  std::optional<Regex> regex_;  // compiled body_regex, when CompileRegex ran
};

// The filter flags as given on the command line (unparsed).
struct FilterFlags {
  std::vector<std::string> queues;
  std::string since, until;
  std::string by;  // "sent" (default) or "archived"
  std::vector<std::string> ids;
  std::vector<std::string> attrs;  // NAME=VALUE
  std::vector<std::string> attr_exists;
  std::string body_contains, body_regex;
  std::vector<std::string> json;  // PATH=VALUE
  std::string min_receive_count;
  std::string fingerprint, fingerprint_fields;
};

// Registers --queue --since --until --by --id --attr --attr-exists
// --body-contains --body-regex --json --min-receive-count --fingerprint
// --fingerprint-fields on `cmd`; `flags`
// must outlive the parse.
void AddFilterFlags(CLI::App& cmd, FilterFlags& flags);

// A time bound for --since/--until (and ls): RFC 3339 ("2026-11-20T10:00:00Z",
// offsets allowed), a UTC date ("2026-11-20": its midnight), or a duration
// ("24h", "7d", "1h30m": `now` minus it). nullopt when it is none of those.
std::optional<SystemTime> ParseTimeBound(std::string_view text, SystemTime now);

// kInvalidArgument naming the flag and why (the CLI exits 2 on it).
Result<Filter> BuildFilter(const FilterFlags& flags, SystemTime now);

}  // namespace dlq
