// credential_process: credentials printed by an external command (a profile's
// credential_process setting). The command's stdout never appears in an
// error, since it may hold secrets.
#pragma once

#include <string>
#include <string_view>

#include "aws/credentials.h"

namespace dlq {

// Runs `command` through /bin/sh and parses its JSON output
// ({"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}).
// The command's stderr goes to ours. Source "credential-process (profile P)".
Result<Credentials> RunCredentialProcess(const std::string& command, std::string_view profile);

}  // namespace dlq
