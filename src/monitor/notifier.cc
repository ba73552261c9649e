#include "monitor/notifier.h"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>

#include "common/time_util.h"

#ifndef DLQ_VERSION
#define DLQ_VERSION "dev"
#endif

namespace dlq {
namespace {

class ObjectWriter {
 public:
  ObjectWriter() : writer_(buffer_) {}
  rapidjson::Writer<rapidjson::StringBuffer>& raw() { return writer_; }
  void Key(std::string_view key) { writer_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size())); }
  void Field(std::string_view key, std::string_view value) {
    Key(key);
    writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
  void NullableField(std::string_view key, std::string_view value) {
    Key(key);
    if (value.empty()) {
      writer_.Null();
    } else {
      writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
    }
  }
  void Number(std::string_view key, std::optional<double> value) {
    Key(key);
    if (value && std::isfinite(*value)) {
      writer_.Double(*value);
    } else {
      writer_.Null();
    }
  }
  std::string Take() { return std::string(buffer_.GetString(), buffer_.GetSize()); }

 private:
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

bool RetryableHttpStatus(int status) {
  return status == 408 || status == 429 || status >= 500;
}

Status CombineFailures(std::string_view what, size_t total, const std::vector<Status>& failures) {
  if (failures.empty()) return Status::Ok();
  if (failures.size() == 1 && total == 1) return failures.front();
  std::string message = fmt::format("{} of {} {} failed", failures.size(), total, what);
  for (const Status& f : failures) message += "; " + f.ToString();
  return Status(failures.front().code(), std::move(message));
}

}  // namespace

std::string AlarmNotification::ToJson() const {
  ObjectWriter w;
  w.raw().StartObject();
  w.Field("AlarmName", alarm_name);
  w.NullableField("AlarmDescription", alarm_description);
  w.NullableField("AWSAccountId", account_id);
  w.Field("NewStateValue", new_state);
  w.Field("NewStateReason", reason);
  w.Field("StateChangeTime", FormatIso8601(time));
  w.Field("Region", region);
  w.Field("OldStateValue", old_state);
  w.Key("Trigger");
  w.raw().StartObject();
  w.Field("MetricName", metric_name);
  w.Field("Namespace", "AWS/SQS");
  w.Field("ComparisonOperator", comparison);
  w.Number("Threshold", threshold);
  w.Key("Dimensions");
  w.raw().StartArray();
  w.raw().StartObject();
  w.Field("name", "QueueName");
  w.Field("value", queue);
  w.raw().EndObject();
  w.raw().EndArray();
  w.raw().EndObject();
  w.Field("Source", "dlq-archive");
  w.Field("Queue", queue);
  w.Field("QueueUrl", queue_url);
  w.Number("MetricValue", metric_value);
  w.raw().EndObject();
  return w.Take();
}

std::string RedactUrl(std::string_view url) {
  Result<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return "<invalid url>";
  // Scheme and host only: webhook URLs (Slack, Teams) carry their secret in
  // the path or query.
  return parsed->scheme + "://" + parsed->Authority() + "/...";
}

Status WebhookOptions::Validate() const {
  if (targets.empty()) return InvalidArgument("webhook: no target URL configured");
  for (const WebhookTarget& target : targets) {
    Result<Url> url = ParseUrl(target.url);
    if (!url.ok()) return InvalidArgument(fmt::format("webhook URL {} is invalid", RedactUrl(target.url)));
    for (const auto& [name, value] : target.headers) {
      if (name.empty() || name.find_first_of(" :\r\n") != std::string::npos) {
        return InvalidArgument(fmt::format("webhook {}: invalid header name '{}'", RedactUrl(target.url), name));
      }
      if (value.find_first_of("\r\n") != std::string::npos) {
        return InvalidArgument(fmt::format("webhook {}: header {} has a line break", RedactUrl(target.url), name));
      }
    }
  }
  if (timeout.count() <= 0) return InvalidArgument("webhook: timeout must be positive");
  return retry.Validate();
}

WebhookNotifier::WebhookNotifier(WebhookOptions options, HttpTransport& transport, Clock& clock, uint64_t seed)
    : options_(std::move(options)), transport_(transport), clock_(clock), rng_(seed) {}

Result<std::unique_ptr<WebhookNotifier>> WebhookNotifier::Create(WebhookOptions options, HttpTransport& transport,
                                                                 Clock& clock) {
  DLQ_RETURN_IF_ERROR(options.Validate());
  return std::make_unique<WebhookNotifier>(std::move(options), transport, clock);
}

Status WebhookNotifier::Notify(const AlarmNotification& notification) {
  const std::string body = notification.ToJson();
  std::vector<Status> failures;
  for (const WebhookTarget& target : options_.targets) {
    Status status = Post(target, body);
    if (!status.ok()) failures.push_back(std::move(status));
  }
  return CombineFailures("webhooks", options_.targets.size(), failures)
      .WithContext(fmt::format("notify alarm {} ({} -> {})", notification.alarm_name, notification.old_state,
                               notification.new_state));
}

Status WebhookNotifier::Post(const WebhookTarget& target, const std::string& body) {
  HttpRequest request;
  request.method = "POST";
  request.url = target.url;
  request.body = body;
  request.timeout = options_.timeout;
  request.headers = {{"Content-Type", "application/json"}, {"User-Agent", "dlq-archive/" DLQ_VERSION}};
  for (const auto& [name, value] : target.headers) SetHeader(request.headers, name, value);

  const std::string where = "webhook POST " + RedactUrl(target.url);
  const int max_attempts = std::max(1, options_.retry.max_attempts);
  Status last;
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> response = transport_.Send(request);
    bool retryable;
    if (!response.ok()) {
      // Transport messages name method, host and path only.
      last = Status(response.status().code(), response.status().message());
      retryable = response.status().retryable();
    } else if (response->status >= 200 && response->status < 300) {
      return Status::Ok();
    } else {
      int code = response->status;
      ErrorCode error = code == 429                 ? ErrorCode::kThrottled
                        : RetryableHttpStatus(code) ? ErrorCode::kUnavailable
                        : code == 401               ? ErrorCode::kUnauthenticated
                        : code == 403               ? ErrorCode::kPermissionDenied
                        : code == 404               ? ErrorCode::kNotFound
                                                    : ErrorCode::kFailedPrecondition;
      last = Status(error, fmt::format("HTTP {}", code));
      retryable = RetryableHttpStatus(code);
    }
    if (!retryable || attempt >= max_attempts) {
      return last.WithContext(fmt::format("{} (attempt {} of {})", where, attempt, max_attempts));
    }
    std::chrono::milliseconds delay;
    {
      std::lock_guard lock(mu_);
      delay = BackoffDelay(options_.retry, attempt - 1, rng_);
    }
    clock_.SleepFor(delay);
  }
}

Status MultiNotifier::Notify(const AlarmNotification& notification) {
  std::vector<Status> failures;
  for (Notifier* notifier : notifiers_) {
    Status status = notifier->Notify(notification);
    if (!status.ok()) failures.push_back(std::move(status));
  }
  return CombineFailures("notifiers", notifiers_.size(), failures);
}

}  // namespace dlq
