#include "app/doctor_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "app/command.h"
#include "app/doctor.h"
#include "app/services.h"
#include "aws/http_client_choice.h"
#include "credentials/sso_provider.h"

namespace dlq {
namespace {

int RunDoctorCommand(const GlobalOptions& g, const DoctorOptions& options, bool json) {
  const Environment& env = DefaultEnvironment();
  ServicesOptions so = g.Services();
  DoctorDeps deps;
  deps.setup = DiagnoseSettings(so.client, env);
  if (auto http = DescribeHttpClient(env); http.ok()) deps.http_client = *http;
  if (const auto& s = deps.setup.settings; s && s->profile_section && IsSsoProfile(*s->profile_section)) {
    if (auto sso = ResolveSsoProfile(s->profile, *s->profile_section, *s, env); sso.ok())
      deps.sso_portal = sso->endpoint;
  }
  std::unique_ptr<AwsServices> svc;
  if (deps.setup.settings) {
    auto created = AwsServices::Create(*deps.setup.settings, so, env, DefaultClock());
    if (!created.ok()) {
      // Building the transport failed: nothing can be checked beyond the settings.
      deps.setup.config = created.status();
    } else {
      svc = std::move(*created);
      deps.credentials = &svc->credentials();
      deps.caller_identity = [&svc] { return svc->sts().GetCallerIdentity(); };
      deps.sqs = &svc->sqs();
      deps.lambda = &svc->lambda();
      deps.head_bucket = [&svc](const std::string& b) -> Status {
        Status st = svc->s3_for(b).HeadBucket(b);
        if (st.ok() || st.code() == ErrorCode::kNotFound) return st;
        // HEAD errors carry no body, so a 403 cannot say whether the signature
        // or the permissions are wrong: a one-key listing tells.
        ListObjectsV2Request req;
        req.max_keys = 1;
        auto list = svc->s3_for(b).ListObjectsV2(b, req);
        return list.ok() ? st : list.status();
      };
    }
  }
  DoctorReport report = RunDoctor(deps, options);
  std::string out = json ? report.ToJson() + "\n" : report.ToText();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.ok() ? 0 : 1;
}

struct DoctorFlags {
  DoctorOptions options;
  std::string output = "text";
};

Runner AddDoctorFlags(CLI::App& cmd) {
  auto f = std::make_shared<DoctorFlags>();
  cmd.add_option("--queue", f->options.queue, "also check this queue (name or URL)");
  cmd.add_option("--bucket", f->options.bucket, "also check this bucket");
  cmd.add_option("--output", f->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  return [f](const CommandContext& ctx) { return RunDoctorCommand(ctx.global, f->options, f->output == "json"); };
}

}  // namespace

Command DoctorCommand() {
  Command c{"doctor", "check credentials, region, endpoints and access to SQS and S3",
            "Exit codes: 0 every check passed; 1 some check failed; 2 usage error", AddDoctorFlags};
  c.json_usage_errors = true;
  return c;
}

}  // namespace dlq
