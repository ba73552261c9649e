#include "testing/fake_lambda_api.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {
namespace {

Status FunctionNotFound(std::string_view operation, std::string_view function) {
  AwsErrorInfo info{"ResourceNotFoundException", 404, "fake-request-id"};
  return NotFound(
             fmt::format("{} {}: ResourceNotFoundException: Function not found: {}", operation, function, function))
      .WithAws(std::move(info));
}

}  // namespace

void FakeLambdaApi::AddFunction(FunctionConfiguration function) {
  if (function.function_arn.empty()) {
    function.function_arn = "arn:aws:lambda:us-east-1:123456789012:function:" + function.function_name;
  }
  MutexLock lock(mu_);
  std::string name = function.function_name;
  functions_.insert_or_assign(std::move(name), std::move(function));
}

void FakeLambdaApi::AddEventSourceMapping(EventSourceMapping mapping) {
  MutexLock lock(mu_);
  mappings_.push_back(std::move(mapping));
}

void FakeLambdaApi::SetInvokeHandler(InvokeHandler handler) {
  MutexLock lock(mu_);
  handler_ = std::move(handler);
}

void FakeLambdaApi::ThrottleInvokes(int n) {
  MutexLock lock(mu_);
  throttle_invokes_ = n;
}

void FakeLambdaApi::Deny(const std::string& action) {
  MutexLock lock(mu_);
  denied_ = action;
}

int FakeLambdaApi::calls(const std::string& action) const {
  MutexLock lock(mu_);
  auto it = calls_.find(action);
  return it == calls_.end() ? 0 : it->second;
}

std::vector<InvokeRequest> FakeLambdaApi::invocations() const {
  MutexLock lock(mu_);
  return invocations_;
}

Status FakeLambdaApi::BeginCall(const std::string& action, const std::string& resource) {
  ++calls_[action];
  if (denied_.empty() || denied_ != action) return Status::Ok();
  AwsErrorInfo info{"AccessDeniedException", 403, "fake-request-id"};
  return PermissionDenied(fmt::format("{} {}: AccessDeniedException: User: arn:aws:iam::123456789012:user/test is not "
                                      "authorized to perform: lambda:{} (needs lambda:{} on {})",
                                      action, resource, action, action, resource.empty() ? "*" : resource))
      .WithAws(std::move(info));
}

const FunctionConfiguration* FakeLambdaApi::Find(const std::string& function) const {
  if (auto it = functions_.find(function); it != functions_.end()) return &it->second;
  for (const auto& [name, fn] : functions_) {
    if (function == fn.function_arn || StartsWith(function, fn.function_arn + ":")) return &fn;
  }
  return nullptr;
}

Result<std::vector<EventSourceMapping>> FakeLambdaApi::ListEventSourceMappings(const std::string& event_source_arn) {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("ListEventSourceMappings", event_source_arn));
  std::vector<EventSourceMapping> out;
  for (const EventSourceMapping& m : mappings_) {
    if (m.event_source_arn == event_source_arn) out.push_back(m);
  }
  return out;
}

Result<FunctionConfiguration> FakeLambdaApi::GetFunctionConfiguration(const std::string& function) {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("GetFunctionConfiguration", function));
  const FunctionConfiguration* fn = Find(function);
  if (fn == nullptr) return FunctionNotFound("GetFunctionConfiguration", function);
  return *fn;
}

Result<std::vector<FunctionConfiguration>> FakeLambdaApi::ListFunctions() {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("ListFunctions", ""));
  std::vector<FunctionConfiguration> out;
  for (const auto& [name, fn] : functions_) out.push_back(fn);
  return out;
}

Result<std::optional<EventInvokeConfig>> FakeLambdaApi::GetFunctionEventInvokeConfig(const std::string& function,
                                                                                     const std::string& /*qualifier*/) {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("GetFunctionEventInvokeConfig", function));
  const FunctionConfiguration* fn = Find(function);
  if (fn == nullptr) return FunctionNotFound("GetFunctionEventInvokeConfig", function);
  auto it = invoke_configs_.find(fn->function_name);
  if (it == invoke_configs_.end()) return std::optional<EventInvokeConfig>();
  return std::optional<EventInvokeConfig>(it->second);
}

void FakeLambdaApi::SetEventInvokeConfig(const std::string& function_name, EventInvokeConfig config) {
  MutexLock lock(mu_);
  invoke_configs_[function_name] = std::move(config);
}

Result<InvokeResult> FakeLambdaApi::Invoke(const InvokeRequest& request) {
  DLQ_RETURN_IF_ERROR(request.Validate());
  InvokeHandler handler;
  {
    MutexLock lock(mu_);
    invocations_.push_back(request);
    DLQ_RETURN_IF_ERROR(BeginCall("InvokeFunction", request.function_name));
    if (throttle_invokes_ > 0) {
      --throttle_invokes_;
      AwsErrorInfo info{"TooManyRequestsException", 429, "fake-request-id"};
      return Throttled(fmt::format("Invoke {}: TooManyRequestsException: Rate Exceeded.", request.function_name))
          .WithAws(std::move(info));
    }
    if (Find(request.function_name) == nullptr) return FunctionNotFound("Invoke", request.function_name);
    handler = handler_;
  }
  if (handler) return handler(request);
  InvokeResult result;
  result.request_id = "fake-request-id";
  switch (request.type) {
    case InvocationType::kEvent: result.status_code = 202; break;
    case InvocationType::kDryRun: result.status_code = 204; break;
    case InvocationType::kRequestResponse:
      result.status_code = 200;
      result.executed_version = "$LATEST";
      result.payload = "null";
      break;
  }
  return result;
}

}  // namespace dlq
