#include "dashboard/request.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace dlq {
namespace {

// Percent-decoding with '+' as a space (application/x-www-form-urlencoded).
std::string FormDecode(std::string_view s) {
  std::string plus;
  plus.reserve(s.size());
  for (char c : s) plus.push_back(c == '+' ? ' ' : c);
  return UriDecode(plus);
}

bool IsMessageId(std::string_view id) {
  return !id.empty() && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A short, printable rendering of untrusted text for an error message.
std::string Shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (s.size() > 40) out += "...";
  return "'" + out + "'";
}

}  // namespace

Result<std::map<std::string, std::string>> ParseQueryString(std::string_view query) {
  std::map<std::string, std::string> out;
  if (query.size() > kMaxQueryBytes) {
    return InvalidArgument(fmt::format("query string of {} bytes: at most {}", query.size(), kMaxQueryBytes));
  }
  if (query.empty()) return out;
  for (std::string_view part : Split(query, '&')) {
    if (part.empty()) continue;
    if (out.size() == kMaxQueryParams) {
      return InvalidArgument(fmt::format("more than {} query parameters", kMaxQueryParams));
    }
    size_t eq = part.find('=');
    std::string name = FormDecode(part.substr(0, eq));
    std::string value = eq == std::string_view::npos ? std::string() : FormDecode(part.substr(eq + 1));
    if (name.empty()) return InvalidArgument("a query parameter has no name");
    if (out.count(name)) return InvalidArgument(fmt::format("query parameter {} is given twice", Shown(name)));
    out.emplace(std::move(name), std::move(value));
  }
  return out;
}

bool IsQueueName(std::string_view name) {
  std::string_view base = EndsWith(name, ".fifo") ? name.substr(0, name.size() - 5) : name;
  return !base.empty() && name.size() <= 80 && std::all_of(base.begin(), base.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::optional<QueuePath> ParseQueuePath(std::string_view path) {
  constexpr std::string_view kPrefix = "/api/queues/";
  if (!StartsWith(path, kPrefix)) return std::nullopt;
  std::string_view rest = path.substr(kPrefix.size());
  size_t slash = rest.find('/');
  QueuePath out;
  out.queue = UriDecode(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    out.view = std::string(rest.substr(slash + 1));
    if (out.view.find('/') != std::string::npos) return std::nullopt;
  }
  if (!IsQueueName(out.queue)) return std::nullopt;
  return out;
}

std::optional<std::string> ParseMessagePath(std::string_view path) {
  constexpr std::string_view kPrefix = "/api/messages/";
  if (!StartsWith(path, kPrefix)) return std::nullopt;
  std::string_view rest = path.substr(kPrefix.size());
  if (rest.find('/') != std::string_view::npos) return std::nullopt;
  std::string id = UriDecode(rest);
  if (!IsMessageId(id)) return std::nullopt;
  return id;
}

Result<size_t> ParseLimit(const std::map<std::string, std::string>& params, size_t fallback, size_t max) {
  auto it = params.find("limit");
  if (it == params.end()) return fallback;
  std::optional<int64_t> n = ParseInt64(it->second);
  if (!n || *n < 1 || static_cast<uint64_t>(*n) > max) {
    return InvalidArgument(fmt::format("limit {} is not a whole number in 1..{}", Shown(it->second), max));
  }
  return static_cast<size_t>(*n);
}

Result<SearchRequest> ParseSearchRequest(const std::map<std::string, std::string>& params) {
  static const std::set<std::string> kKnown = {
      "queue", "q", "re", "id", "attr", "since", "until", "limit", "min_receive_count", "fingerprint"};
  for (const auto& [name, value] : params) {
    if (!kKnown.count(name)) {
      return InvalidArgument(
          fmt::format("unknown search parameter {}: expected queue, q, re, id, attr, since, until, min_receive_count, "
                      "fingerprint, limit",
                      Shown(name)));
    }
  }
  SearchRequest out;
  auto get = [&](const char* name) -> std::string {
    auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  };
  std::string queue = get("queue");
  if (!IsQueueName(queue)) return InvalidArgument("queue: name the queue to search (an SQS queue name)");
  out.flags.queues = {queue};
  out.flags.body_contains = get("q");
  out.flags.body_regex = get("re");
  if (std::string id = get("id"); !id.empty()) {
    if (!IsMessageId(id)) return InvalidArgument(fmt::format("id {} is not a message id", Shown(id)));
    out.flags.ids = {id};
  }
  if (std::string attr = get("attr"); !attr.empty()) out.flags.attrs = {attr};
  out.flags.since = get("since");
  out.flags.until = get("until");
  out.flags.min_receive_count = get("min_receive_count");
  out.flags.fingerprint = get("fingerprint");
  DLQ_ASSIGN_OR_RETURN(out.limit, ParseLimit(params, 50, kMaxSearchResults));
  return out;
}

namespace {

// "ids": 1 to kMaxReplayIds distinct message ids (repeats dropped).
Status ParseReplayIds(simdjson::dom::element value, std::vector<std::string>& out) {
  simdjson::dom::array ids;
  if (value.get_array().get(ids) != simdjson::SUCCESS) return InvalidArgument("ids must be an array");
  std::set<std::string> seen;
  for (simdjson::dom::element e : ids) {
    std::string_view id;
    if (e.get_string().get(id) != simdjson::SUCCESS || !IsMessageId(id)) {
      return InvalidArgument("every id must be a message id (1-128 printable characters)");
    }
    if (!seen.insert(std::string(id)).second) continue;
    if (out.size() == kMaxReplayIds) return InvalidArgument(fmt::format("at most {} ids in one replay", kMaxReplayIds));
    out.emplace_back(id);
  }
  return Status::Ok();
}

// "to": "source" | "origin".
Status ParseReplayTo(simdjson::dom::element value, bool& to_origin) {
  std::string_view to;
  if (value.get_string().get(to) != simdjson::SUCCESS || (to != "source" && to != "origin")) {
    return InvalidArgument(
        "to must be \"source\" (each message's source queue) or \"origin\" (back where it came from: a Lambda "
        "function, an EventBridge target, an SNS endpoint)");
  }
  to_origin = to == "origin";
  return Status::Ok();
}

// "function": a Lambda function name or ARN (with a qualifier).
Status ParseReplayFunction(simdjson::dom::element value, std::string& out) {
  std::string_view fn;
  if (value.get_string().get(fn) != simdjson::SUCCESS || fn.empty() || fn.size() > 170 ||
      fn.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:$") !=
          std::string_view::npos) {
    return InvalidArgument("function must be a Lambda function name or ARN");
  }
  out = std::string(fn);
  return Status::Ok();
}

// One field of the replay body into `out`; `have` records which were given.
struct ReplayFieldsSeen {
  bool queue = false, ids = false, dry_run = false;
};
Status ParseReplayField(std::string_view key, simdjson::dom::element value, ReplayRequest& out, ReplayFieldsSeen& have,
                        std::string_view expected) {
  if (key == "queue") {
    std::string_view q;
    if (value.get_string().get(q) != simdjson::SUCCESS || !IsQueueName(q)) {
      return InvalidArgument("queue must be an SQS queue name");
    }
    out.queue = std::string(q);
    have.queue = true;
  } else if (key == "ids") {
    DLQ_RETURN_IF_ERROR(ParseReplayIds(value, out.ids));
    have.ids = true;
  } else if (key == "fingerprint") {
    std::string_view id;
    if (value.get_string().get(id) != simdjson::SUCCESS || id.size() != kGroupIdChars ||
        id.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
      return InvalidArgument("fingerprint must be a failure group id (12 lowercase hex digits)");
    }
    out.fingerprint = std::string(id);
  } else if (key == "dry_run") {
    if (value.get_bool().get(out.dry_run) != simdjson::SUCCESS) return InvalidArgument("dry_run must be true or false");
    have.dry_run = true;
  } else if (key == "to") {
    DLQ_RETURN_IF_ERROR(ParseReplayTo(value, out.to_origin));
  } else if (key == "function") {
    DLQ_RETURN_IF_ERROR(ParseReplayFunction(value, out.function));
  } else {
    return InvalidArgument(fmt::format("unknown field {}: {}", Shown(key), expected));
  }
  return Status::Ok();
}

}  // namespace

Result<ReplayRequest> ParseReplayRequest(std::string_view body) {
  if (body.size() > kMaxReplayBodyBytes) {
    return InvalidArgument(fmt::format("request body of {} bytes: at most {}", body.size(), kMaxReplayBodyBytes));
  }
  const std::string_view expected =
      R"(expected {"queue": "NAME", "ids": ["MESSAGE_ID", ...]} or {"queue": "NAME", "fingerprint": "ID", )"
      R"("dry_run": true|false}, with "to": "source"|"origin" and, with "origin", "function": "NAME")";
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) {
    return InvalidArgument(fmt::format("the body is not JSON: {}", expected));
  }
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return InvalidArgument(fmt::format("the body is not a JSON object: {}", expected));
  }
  ReplayRequest out;
  ReplayFieldsSeen have;
  for (auto field : object) DLQ_RETURN_IF_ERROR(ParseReplayField(field.key, field.value, out, have, expected));
  if (!have.queue || have.ids == !out.fingerprint.empty()) {
    return InvalidArgument(fmt::format("queue and either ids or fingerprint are required: {}", expected));
  }
  if (have.ids && out.ids.empty()) return InvalidArgument("ids is empty: select at least one message");
  // A group can be large: the page asks for the dry run first, and sending
  // needs dry_run: false spelled out.
  if (!out.fingerprint.empty() && !have.dry_run) {
    return InvalidArgument("a group replay needs \"dry_run\": true (what would be sent) or false (send)");
  }
  if (!out.function.empty() && !out.to_origin) {
    return InvalidArgument("function names the origin of \"to\": \"origin\"; give it with \"to\": \"origin\"");
  }
  return out;
}

}  // namespace dlq
