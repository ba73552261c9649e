#include "app/lambda_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <memory>

#include "aws/default_transport.h"
#include "common/log.h"
#include "lambda/handler.h"
#include "lambda/lambda_config.h"
#include "lambda/runtime_client.h"

namespace dlq {

int RunLambdaCommand(const ServicesOptions& base, std::atomic<bool>& stop) {
  const Environment& env = DefaultEnvironment();
  auto settings = LambdaSettingsFromEnv(env);
  std::string api = env.GetNonEmpty("AWS_LAMBDA_RUNTIME_API").value_or("");
  if (api.empty()) {
    std::fprintf(stderr, "error: %s\n", settings.status().message().c_str());
    return 2;
  }
  auto runtime_transport = MakeDefaultTransport(TransportSettings{});
  if (!runtime_transport.ok()) {
    std::fprintf(stderr, "error: %s\n", runtime_transport.status().ToString().c_str());
    return 1;
  }
  HttpRuntimeClient runtime(**runtime_transport, api);
  auto init_error = [&](const Status& st, int code) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    runtime.ReportInitError("DlqArchive.InvalidConfig", st.message()).IgnoreError();
    return code;
  };
  if (!settings.ok()) return init_error(settings.status(), 2);

  auto services = AwsServices::Create(base, env, DefaultClock());
  if (!services.ok()) return init_error(services.status(), 2);
  auto store = OpenStore(settings->destination, services->get());
  if (!store.ok()) return init_error(store.status().WithContext("DLQ_ARCHIVE_DESTINATION"), 2);

  std::map<std::string, std::unique_ptr<AwsServices>> by_account;  // assumed roles, created on first use
  LambdaDeps deps;
  deps.store = store->get();
  deps.clock = &DefaultClock();
  deps.region = (*services)->settings().region;
  // The cause lookups (DLQ_ARCHIVE_CAUSES) use the function's own account.
  deps.logs = &(*services)->logs();
  deps.lambda_api = &(*services)->lambda();
  deps.sqs_for = [&](const std::string& account) -> Result<QueueClient*> {
    auto role = settings->role_arns.find(account);
    if (account.empty() || role == settings->role_arns.end()) return &(*services)->sqs();
    auto& slot = by_account[account];
    if (!slot) {
      ServicesOptions so = base;
      so.role_arn = role->second;
      so.role_session_name = "dlq-archive-lambda";
      DLQ_ASSIGN_OR_RETURN(slot, AwsServices::Create(so, env, DefaultClock()));
    }
    return &slot->sqs();
  };
  std::unique_ptr<AwsClient> lambda_aws;
  std::unique_ptr<AwsFunctionInvoker> invoker;
  if (!settings->function_name.empty()) {
    lambda_aws = std::make_unique<AwsClient>((*services)->settings().Endpoint("lambda"), (*services)->transport(),
                                             (*services)->credentials(), DefaultClock(), base.retry);
    invoker = std::make_unique<AwsFunctionInvoker>(*lambda_aws, settings->function_name);
    deps.invoker = invoker.get();
  }
  deps.emit_metric = [](const std::string& line) {
    std::string out = line + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  };
  settings->config.host = LocalHostName();

  Status st = RunLambdaLoop(
      runtime,
      [&](const Invocation& inv) {
        LambdaOutcome o = HandleLambdaEvent(inv.body, inv.deadline, settings->config, deps);
        Log().Log(o.ok ? LogLevel::kInfo : LogLevel::kError, "lambda.invocation",
                  {{"request_id", inv.request_id}, {"ok", o.ok ? "true" : "false"}, {"error_type", o.error_type}});
        return o;
      },
      stop);
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace dlq
