// A LambdaApi for tests: functions and event source mappings held in
// memory, every call counted and every Invoke recorded, with failures on
// command ("throttle the next 2 invokes", "deny ListEventSourceMappings").
// Invoke answers from a handler when one is set, else as Lambda does for a
// function that succeeds (202 Event, 200 "null" RequestResponse, 204 DryRun).
// Thread-safe; the handler is called without the fake's lock held.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "lambda_api/lambda_api.h"

namespace dlq {

class FakeLambdaApi final : public LambdaApi {
 public:
  using InvokeHandler = std::function<Result<InvokeResult>(const InvokeRequest&)>;

  Result<std::vector<EventSourceMapping>> ListEventSourceMappings(const std::string& event_source_arn) override;
  Result<FunctionConfiguration> GetFunctionConfiguration(const std::string& function) override;
  Result<std::vector<FunctionConfiguration>> ListFunctions() override;
  Result<std::optional<EventInvokeConfig>> GetFunctionEventInvokeConfig(const std::string& function,
                                                                        const std::string& qualifier) override;
  Result<InvokeResult> Invoke(const InvokeRequest& request) override;

  // Adds or replaces a function (by name); an empty function_arn becomes
  // "arn:aws:lambda:us-east-1:123456789012:function:<name>".
  void AddFunction(FunctionConfiguration function);
  void AddEventSourceMapping(EventSourceMapping mapping);
  // The asynchronous-invocation settings of a function (by name; the
  // qualifier is ignored), answered by GetFunctionEventInvokeConfig.
  void SetEventInvokeConfig(const std::string& function_name, EventInvokeConfig config);
  void SetInvokeHandler(InvokeHandler handler);
  // The next `n` Invoke calls fail with kThrottled (TooManyRequestsException, HTTP 429).
  void ThrottleInvokes(int n);
  // Every call needing IAM action `action` ("ListEventSourceMappings",
  // "GetFunctionConfiguration", "ListFunctions", "GetFunctionEventInvokeConfig", "InvokeFunction") fails with
  // kPermissionDenied (AccessDeniedException); "" stops denying.
  void Deny(const std::string& action);

  // Calls made, by IAM action name (as for Deny); failed ones included.
  int calls(const std::string& action) const;
  // Every Invoke request, in order, throttled and denied ones included.
  std::vector<InvokeRequest> invocations() const;

 private:
  // Counts one call of `action` and returns its injected denial, if any.
  Status BeginCall(const std::string& action, const std::string& resource) DLQ_REQUIRES(mu_);
  // The function named by name or ARN (a qualifier after the ARN is ignored).
  const FunctionConfiguration* Find(const std::string& function) const DLQ_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, FunctionConfiguration> functions_ DLQ_GUARDED_BY(mu_);  // by name
  std::vector<EventSourceMapping> mappings_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, EventInvokeConfig> invoke_configs_ DLQ_GUARDED_BY(mu_);  // by function name
  InvokeHandler handler_ DLQ_GUARDED_BY(mu_);
  int throttle_invokes_ DLQ_GUARDED_BY(mu_) = 0;
  std::string denied_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ DLQ_GUARDED_BY(mu_);
  std::vector<InvokeRequest> invocations_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
