// The AWS service clients a command needs, built from the global options the
// way the AWS CLI resolves them (region, profile, endpoints, credential
// chain). Owns everything it creates; thread-safe after Create.
#pragma once

#include <memory>
#include <string>

#include "archive/destination.h"
#include "aws/aws_client.h"
#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "cloudwatch/cloudwatch_client.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "events/events_api.h"
#include "lambda_api/lambda_api.h"
#include "logs/logs_client.h"
#include "s3/object_store.h"
#include "s3/s3_client.h"
#include "sns/sns_api.h"
#include "sqs/sqs_client.h"
#include "sts/sts_client.h"

namespace dlq {

struct ServicesOptions {
  ClientOptions client;
  // When set, every call uses temporary credentials from STS AssumeRole,
  // obtained with the resolved credentials and refreshed before they expire
  // (cross-account queue groups).
  std::string role_arn;
  std::string external_id;
  std::string role_session_name = "dlq-archive";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{70000};
  RetryOptions retry;
};

class AwsServices {
 public:
  // Resolves settings and builds the transport and credential chain. Fails on
  // a bad config file, a missing region, a region that is not a known AWS
  // region (see CheckKnownRegion) or an invalid endpoint; credentials are
  // only fetched on first use.
  static Result<std::unique_ptr<AwsServices>> Create(const ServicesOptions& options, const Environment& env,
                                                     Clock& clock);
  // The same from settings already resolved (options.client is ignored);
  // does not check the region.
  static Result<std::unique_ptr<AwsServices>> Create(const AwsSettings& settings, const ServicesOptions& options,
                                                     const Environment& env, Clock& clock);

  const AwsSettings& settings() const { return settings_; }
  HttpTransport& transport() { return *transport_; }
  CredentialsProvider& credentials() { return *credentials_; }
  QueueClient& sqs() { return *sqs_; }
  StsClient& sts() { return *sts_; }
  CloudWatchClient& cloudwatch() { return *cloudwatch_; }
  // CloudWatch Logs (retried with LogsRetryOptions) and Lambda, for the
  // cause lookup.
  LogsClient& logs() { return *logs_; }
  LambdaApi& lambda() { return *lambda_; }
  // SNS and EventBridge: what `replay --to-origin` sends to.
  SnsApi& sns() { return *sns_; }
  EventsApi& events() { return *events_; }
  // An S3 client addressing `bucket` the way the settings say (path-style for
  // custom endpoints and non-DNS names).
  S3Client& s3_for(const std::string& bucket);
  Clock& clock() { return clock_; }
  void SetObserver(const CallObserver& observer);

 private:
  explicit AwsServices(Clock& clock) : clock_(clock) {}

  Clock& clock_;
  AwsSettings settings_;
  RetryOptions retry_;
  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<CredentialsProvider> credentials_;  // the chain, or AssumeRole over it (role_arn)
  std::unique_ptr<AwsClient> sqs_aws_, s3_aws_, s3_aws_path_, cw_aws_, logs_aws_, lambda_aws_, sns_aws_, events_aws_;
  std::unique_ptr<QueueClient> sqs_;
  std::unique_ptr<S3Client> s3_virtual_, s3_path_;
  std::unique_ptr<StsClient> sts_;
  std::unique_ptr<CloudWatchClient> cloudwatch_;
  std::unique_ptr<LogsClient> logs_;
  std::unique_ptr<LambdaApi> lambda_;
  std::unique_ptr<SnsApi> sns_;
  std::unique_ptr<EventsApi> events_;
};

// OK when settings.region is in the table of AWS regions, or when an unknown
// name cannot misroute anything: every service has a custom endpoint
// (--endpoint-url or AWS_ENDPOINT_URL set one for all), or
// DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1 (a region newer than this build).
// Otherwise kInvalidArgument naming the region, its source and the closest
// known region.
Status CheckKnownRegion(const AwsSettings& settings, const Environment& env);

// Settings resolved as far as a broken setup allows, for `doctor`: each
// problem is reported on its own and masked so the next step can still run.
struct SettingsDiagnosis {
  Status config;   // other resolution failures: config files, endpoints, addressing style
  Status profile;  // a named profile that neither file has (suggests the closest one)
  Status region;   // missing, or not a known region
  // Set unless `config` failed. Without a usable region it carries
  // kPlaceholderRegion so credentials can still be resolved.
  std::optional<AwsSettings> settings;
};
inline constexpr std::string_view kPlaceholderRegion = "us-east-1";
SettingsDiagnosis DiagnoseSettings(const ClientOptions& options, const Environment& env);

// This machine's host name, recorded in archive records ("unknown" if unset).
std::string LocalHostName();

// Opens the store for a destination (S3 through `services`, or a local
// directory whose files and directories get `modes`). Touches nothing: call
// CheckWritable() before receiving.
Result<std::unique_ptr<ObjectStore>> OpenStore(const Destination& dest, AwsServices* services,
                                               const FileModes& modes = {});

// DLQ_FILE_MODE (ParseFileModes: "0640" also lets the group read), or the
// owner-only default when unset. kInvalidArgument naming the variable.
Result<FileModes> FileModesFromEnv(const Environment& env);

}  // namespace dlq
