// The Lambda function's configuration, read from environment variables
// (documented in doc/lambda.md). Pure: reads only the Environment given.
#pragma once

#include <map>
#include <string>

#include "archive/destination.h"
#include "aws/environment.h"
#include "common/status.h"
#include "lambda/handler.h"

namespace dlq {

struct LambdaSettings {
  std::string runtime_api;    // AWS_LAMBDA_RUNTIME_API
  std::string function_name;  // AWS_LAMBDA_FUNCTION_NAME ("" disables self-invocation)
  Destination destination;    // DLQ_ARCHIVE_DESTINATION
  LambdaConfig config;
  // DLQ_ARCHIVE_ROLE_ARNS "ACCOUNT=ARN,...": the role to assume for queues
  // of that account.
  std::map<std::string, std::string> role_arns;
};

// kInvalidArgument naming the variable and the expected form; every value
// is checked (DrainOptions::Validate included).
Result<LambdaSettings> LambdaSettingsFromEnv(const Environment& env);

}  // namespace dlq
