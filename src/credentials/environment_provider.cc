#include "credentials/environment_provider.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {

Result<Credentials> EnvironmentProvider::GetCredentials() {
  auto id = env_.GetNonEmpty("AWS_ACCESS_KEY_ID");
  if (!id) id = env_.GetNonEmpty("AWS_ACCESS_KEY");
  auto secret = env_.GetNonEmpty("AWS_SECRET_ACCESS_KEY");
  if (!secret) secret = env_.GetNonEmpty("AWS_SECRET_KEY");
  if (!id && !secret) return NotFound("no AWS_ACCESS_KEY_ID in the environment");
  if (!id) return InvalidArgument("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  if (!secret) return InvalidArgument("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  Credentials c;
  c.access_key_id = *id;
  c.secret_access_key = *secret;
  auto token = env_.GetNonEmpty("AWS_SESSION_TOKEN");
  if (!token) token = env_.GetNonEmpty("AWS_SECURITY_TOKEN");
  c.session_token = token.value_or("");
  if (auto exp = env_.GetNonEmpty("AWS_CREDENTIAL_EXPIRATION")) {
    auto t = ParseIso8601(Trim(*exp));
    if (!t) return InvalidArgument(fmt::format("AWS_CREDENTIAL_EXPIRATION '{}' is not an ISO-8601 time", *exp));
    c.expiration = *t;
  }
  c.source = "environment";
  return c;
}

}  // namespace dlq
