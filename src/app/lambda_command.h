// `dlq-archive lambda`: the AWS Lambda custom runtime (doc/lambda.md).
// Reads its configuration from the environment, reports a bad one as an init
// error to the Runtime API, then serves invocations until the Runtime API
// goes away.
#pragma once

#include <atomic>

#include "app/services.h"

namespace dlq {

// `base` carries the global flags (usually none inside Lambda). Returns the
// exit code: 2 when the configuration is bad, 1 when the Runtime API fails.
int RunLambdaCommand(const ServicesOptions& base, std::atomic<bool>& stop);

}  // namespace dlq
