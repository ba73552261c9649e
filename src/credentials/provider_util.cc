#include "credentials/provider_util.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
bool ParseJsonObject(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::object& out) {
  return parser.parse(text.data(), text.size()).get_object().get(out) == simdjson::SUCCESS;
}

std::optional<std::string> JsonString(simdjson::dom::object& obj, std::string_view name) {
  std::string_view v;
  if (obj[name].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return std::string(v);
}

Result<Credentials> ParseCredentialsJson(std::string_view body, std::string_view token_field, std::string_view what,
                                         CredentialsJsonExtras* extras) {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (!ParseJsonObject(parser, body, obj)) {
    return Unauthenticated(fmt::format("{}: response is not a JSON object", what));
  }
  Credentials c;
  c.access_key_id = JsonString(obj, "AccessKeyId").value_or("");
  c.secret_access_key = JsonString(obj, "SecretAccessKey").value_or("");
  c.session_token = JsonString(obj, token_field).value_or("");
  if (c.empty()) return Unauthenticated(fmt::format("{}: response lacks AccessKeyId or SecretAccessKey", what));
  if (auto exp = JsonString(obj, "Expiration"); exp && !exp->empty()) {
    auto t = ParseIso8601(Trim(*exp));
    if (!t) return Unauthenticated(fmt::format("{}: unreadable Expiration '{}'", what, *exp));
    c.expiration = *t;
  }
  if (extras != nullptr) {
    int64_t version = 0;
    if (obj["Version"].get_int64().get(version) == simdjson::SUCCESS) extras->version = version;
    extras->code = JsonString(obj, "Code");
  }
  return c;
}

Result<std::string> ReadTokenFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno)));
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string token(Trim(buf.str()));
  if (token.empty()) return InvalidArgument(fmt::format("{} {} is empty", what, path));
  return token;
}

Status HttpStatusError(int status, std::string_view what) {
  std::string m = fmt::format("{}: HTTP {}", what, status);
  if (status == 401 || status == 403) return Unauthenticated(m);
  if (status == 429) return Throttled(m);
  if (status >= 500) return Unavailable(m);
  return Internal(m);
}

std::string DefaultSessionName(Clock& clock) {
  return fmt::format("dlq-archive-{}", ToUnixSeconds(clock.Now()));
}

bool IsTrueSetting(const std::optional<std::string>& value) {
  return value && IEquals(Trim(*value), "true");
}

}  // namespace dlq
