#include "app/command.h"

#include <cstdio>

#include "app/doctor.h"
#include "aws/http_client_choice.h"
#include "common/text.h"

namespace dlq {
namespace {

constexpr int kExitUsage = 2;

// Resolves the settings and builds the services. Sets `exit_code` to what a
// failure means: 2 for a bad DLQ_HTTP_CLIENT or an unknown region given with
// --region, else 1.
Result<std::unique_ptr<AwsServices>> MakeServices(const GlobalOptions& g, int& exit_code) {
  const Environment& env = DefaultEnvironment();
  ServicesOptions so = g.Services();
  exit_code = kExitUsage;
  DLQ_RETURN_IF_ERROR(ChooseHttpClient(env).status());  // DLQ_HTTP_CLIENT
  exit_code = 1;
  DLQ_ASSIGN_OR_RETURN(AwsSettings settings, ResolveSettings(so.client, env));
  if (Status st = CheckKnownRegion(settings, env); !st.ok()) {
    if (settings.region_source == "--region") exit_code = kExitUsage;
    return st;
  }
  return AwsServices::Create(settings, so, env, DefaultClock());
}

}  // namespace

ServicesOptions GlobalOptions::Services() const {
  ServicesOptions o;
  if (!region.empty()) o.client.region = region;
  if (!profile.empty()) o.client.profile = profile;
  if (!endpoint_url.empty()) o.client.endpoint_url = endpoint_url;
  o.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1000));
  o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(read_timeout_s * 1000));
  o.retry.max_attempts = max_attempts;
  return o;
}

int UsageReporter::Fail(const std::string& message) const {
  std::string prefix = command_ ? *command_ + ": " : "";
  std::fprintf(stderr, "error: %s%s\n", prefix.c_str(), TerminalSafe(message).c_str());
  if (command_) std::fprintf(stderr, "run 'dlq-archive help %s' for usage\n", command_->c_str());
  if (json_) {
    std::string doc = DoctorErrorJson(InvalidArgument(prefix + message), kExitUsage) + "\n";
    std::fwrite(doc.data(), 1, doc.size(), stdout);
  }
  return kExitUsage;
}

int WithServices(const CommandContext& ctx, const std::function<int(AwsServices&)>& run) {
  int exit_code = 1;
  auto services = MakeServices(ctx.global, exit_code);
  if (!services.ok()) {
    std::fprintf(stderr, "error: %s\n", TerminalSafe(services.status().message()).c_str());
    return exit_code;
  }
  return run(**services);
}

int WithArchive(const CommandContext& ctx, const std::string& from_uri,
                const std::function<int(ObjectStore&, const Destination&)>& run) {
  if (from_uri.empty()) return ctx.usage.Fail("--from is required (s3://BUCKET/PREFIX or file:///DIR)");
  Result<Destination> from = ParseDestination(from_uri);
  if (!from.ok()) return ctx.usage.Fail("--from: " + from.status().message());
  auto open_and_run = [&](AwsServices* services) {
    auto store = OpenStore(*from, services);
    if (!store.ok()) {
      std::fprintf(stderr, "error: %s\n", TerminalSafe(store.status().message()).c_str());
      return 1;
    }
    return run(**store, *from);
  };
  if (from->scheme != "s3") return open_and_run(nullptr);
  return WithServices(ctx, [&](AwsServices& services) { return open_and_run(&services); });
}

int WithArchiveAndServices(const CommandContext& ctx, const std::string& from_uri,
                           const std::function<int(ObjectStore&, const Destination&, AwsServices&)>& run) {
  if (from_uri.empty()) return ctx.usage.Fail("--from is required (s3://BUCKET/PREFIX or file:///DIR)");
  Result<Destination> from = ParseDestination(from_uri);
  if (!from.ok()) return ctx.usage.Fail("--from: " + from.status().message());
  return WithServices(ctx, [&](AwsServices& services) {
    auto store = OpenStore(*from, &services);
    if (!store.ok()) {
      std::fprintf(stderr, "error: %s\n", TerminalSafe(store.status().message()).c_str());
      return 1;
    }
    return run(**store, *from, services);
  });
}

std::optional<FileModes> FileModesOrReport() {
  Result<FileModes> modes = FileModesFromEnv(DefaultEnvironment());
  if (!modes.ok()) {
    std::fprintf(stderr, "error: %s\n", modes.status().message().c_str());
    return std::nullopt;
  }
  return *modes;
}

}  // namespace dlq
