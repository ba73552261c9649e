// Helpers shared by the credential providers (like aws-c-auth's
// credentials_utils): the credentials JSON document, token files, HTTP status
// mapping and default session names. Errors name the source, never the
// document, token or secret.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aws/credentials.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

// `text` parsed into `parser` as a JSON object; false when it is not one.
bool ParseJsonObject(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::object& out);
// The string member `name` of `obj`; nullopt when missing or not a string.
std::optional<std::string> JsonString(simdjson::dom::object& obj, std::string_view name);

// Fields of a credentials JSON document beyond the credentials themselves.
struct CredentialsJsonExtras {
  std::optional<int64_t> version;   // "Version" (credential_process)
  std::optional<std::string> code;  // "Code" (IMDS)
};

// Parses {"AccessKeyId", "SecretAccessKey", <token_field>, "Expiration"}. `what` names the
// source for errors (kUnauthenticated); the body itself never appears in them.
Result<Credentials> ParseCredentialsJson(std::string_view body, std::string_view token_field, std::string_view what,
                                         CredentialsJsonExtras* extras = nullptr);

// Reads a small token file, trimmed. kInvalidArgument naming the file (never its content)
// when it cannot be read or is empty.
Result<std::string> ReadTokenFile(const std::string& path, std::string_view what);

// A credentials endpoint's non-200 status: 401/403 kUnauthenticated, 429 kThrottled,
// 5xx kUnavailable, anything else kInternal.
Status HttpStatusError(int status, std::string_view what);

// "dlq-archive-<unix seconds>": the session name when none is configured.
std::string DefaultSessionName(Clock& clock);

// True when the value, trimmed, is "true" in any case.
bool IsTrueSetting(const std::optional<std::string>& value);

}  // namespace dlq
