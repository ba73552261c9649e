// Parsers of what the dashboard's HTTP clients send: query strings, API
// paths and the replay request body. Pure functions of their input, safe on
// any bytes (fuzzed: fuzz/dashboard_request_fuzz.cc); every rejection is
// kInvalidArgument with a message fit for a 400 response (it never echoes
// more than a short, sanitised piece of the input).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/filter.h"
#include "query/fingerprint.h"

namespace dlq {

inline constexpr size_t kMaxQueryBytes = 8192;
inline constexpr size_t kMaxQueryParams = 32;
inline constexpr size_t kMaxReplayIds = 100;
inline constexpr size_t kMaxReplayBodyBytes = size_t{64} * 1024;
inline constexpr size_t kMaxSearchResults = 500;

// "a=1&b=x%20y+z" -> {a: "1", b: "x y z"}: names and values percent-decoded,
// '+' is a space, a name without '=' has the value "". A repeated name is
// an error (the API takes each parameter once), as are more than
// kMaxQueryParams parameters, more than kMaxQueryBytes, or an empty name.
Result<std::map<std::string, std::string>> ParseQueryString(std::string_view query);

// An SQS queue name: 1-80 of A-Z a-z 0-9 - _, with ".fifo" allowed at the end.
bool IsQueueName(std::string_view name);

// "/api/queues/{name}/{view}" -> {name, view}; nullopt for anything else
// (no name, a name that is not a queue name after percent-decoding, extra
// segments). `view` may be empty ("/api/queues/{name}").
struct QueuePath {
  std::string queue;
  std::string view;
};
std::optional<QueuePath> ParseQueuePath(std::string_view path);

// "/api/messages/{id}" -> id (percent-decoded; 1-128 printable ASCII
// characters); nullopt for anything else.
std::optional<std::string> ParseMessagePath(std::string_view path);

// GET /api/search: queue (required), q (body contains), re (body regex), id,
// attr (NAME=VALUE), since, until, min_receive_count, fingerprint (a failure
// group id), limit (1..500,
// default 50). The filter fields are the CLI's filter flags, checked by
// BuildFilter later.
struct SearchRequest {
  FilterFlags flags;
  size_t limit = 50;
};
Result<SearchRequest> ParseSearchRequest(const std::map<std::string, std::string>& params);

// POST /api/replay: {"queue": "NAME", "ids": ["ID", ...]} with 1 to
// kMaxReplayIds distinct ids (each as ParseMessagePath accepts), or
// {"queue": "NAME", "fingerprint": "ID", "dry_run": true|false} for every
// archived message of one failure group (dry_run required). "dry_run" also
// goes with ids. "to": "source" (the default: each message's source queue)
// or "origin" (back where it came from: a Lambda function, an EventBridge
// target, an SNS endpoint; doc/origins.md), and with "origin" only,
// "function": the function of messages that do not name theirs (a name or
// ARN). Unknown fields are an error, so a typo does not silently replay
// something else.
struct ReplayRequest {
  std::string queue;
  std::vector<std::string> ids;
  std::string fingerprint;
  bool dry_run = false;
  bool to_origin = false;
  std::string function;
};
Result<ReplayRequest> ParseReplayRequest(std::string_view body);

// "limit" of `params` in [1, max] (`fallback` when absent).
Result<size_t> ParseLimit(const std::map<std::string, std::string>& params, size_t fallback, size_t max);

}  // namespace dlq
