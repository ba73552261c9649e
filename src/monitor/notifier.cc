#include "monitor/notifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/json_writer.h"
#include "common/log.h"
#include "common/time_util.h"

#ifndef DLQ_VERSION
#define DLQ_VERSION "dev"
#endif

namespace dlq {
namespace {

// A string, or null when empty.
void NullableString(JsonWriter& w, std::string_view value) {
  if (value.empty()) {
    w.Null();
  } else {
    w.String(value);
  }
}

// A number as CloudWatch writes it in alarm notifications: always with a
// fraction ("86400.0"); null when absent or not finite.
void CloudWatchNumber(JsonWriter& w, std::optional<double> value) {
  if (!value || !std::isfinite(*value)) {
    w.Null();
    return;
  }
  std::string text = fmt::format("{}", *value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  w.Raw(text);
}

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

std::string_view MetricNamespace(std::string_view metric_name) {
  // The SQS metrics in CloudWatch whose names the daemon's alarms reuse.
  static constexpr std::string_view kSqsMetrics[] = {"ApproximateAgeOfOldestMessage",
                                                     "ApproximateNumberOfMessagesVisible",
                                                     "ApproximateNumberOfMessagesNotVisible",
                                                     "ApproximateNumberOfMessagesDelayed",
                                                     "NumberOfMessagesSent",
                                                     "NumberOfMessagesReceived",
                                                     "NumberOfMessagesDeleted",
                                                     "NumberOfEmptyReceives",
                                                     "SentMessageSize"};
  for (std::string_view m : kSqsMetrics) {
    if (m == metric_name) return "AWS/SQS";
  }
  return kOwnMetricNamespace;
}

std::string AlarmNotification::ToJson() const {
  JsonWriter w;
  w.BeginObject();
  w.Key("AlarmName").String(alarm_name);
  w.Key("AlarmDescription");
  NullableString(w, alarm_description);
  w.Key("AWSAccountId");
  NullableString(w, account_id);
  w.Key("NewStateValue").String(new_state);
  w.Key("NewStateReason").String(reason);
  w.Key("StateChangeTime").String(FormatIso8601(time));
  w.Key("Region").String(region);
  w.Key("OldStateValue").String(old_state);
  w.Key("Trigger").BeginObject();
  w.Key("MetricName").String(metric_name);
  w.Key("Namespace").String(MetricNamespace(metric_name));
  w.Key("ComparisonOperator").String(comparison);
  w.Key("Threshold");
  CloudWatchNumber(w, threshold);
  w.Key("Dimensions").BeginArray();
  if (group.empty()) {
    w.BeginObject().Key("name").String("QueueName").Key("value").String(queue).EndObject();
  } else {
    w.BeginObject().Key("name").String("Group").Key("value").String(group).EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.Key("Source").String("dlq-archive");
  w.Key("Queue").String(queue);
  w.Key("QueueUrl").String(queue_url);
  if (!group.empty()) {
    w.Key("Group").String(group);
    w.Key("Destination").String(destination);
  }
  w.Key("MetricValue");
  CloudWatchNumber(w, metric_value);
  w.Key("Summary").String(Summary());
  if (messages) w.Key("Messages").Int(*messages);
  if (!dashboard_url.empty()) w.Key("DashboardUrl").String(dashboard_url);
  if (!top_groups.empty()) {
    w.Key("TopGroups").BeginArray();
    for (const NotificationGroup& g : top_groups) {
      w.BeginObject();
      w.Key("Id").String(g.id);
      w.Key("Key").String(g.key);
      w.Key("Messages").Uint(g.messages);
      w.Key("Cause");
      NullableString(w, g.cause);
      w.Key("NoCause");
      NullableString(w, g.no_cause);
      w.Key("LookedUp").Uint(g.answered);
      w.Key("Found").Uint(g.found);
      w.Key("Url");
      NullableString(w, g.url);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

std::string AlarmNotification::Summary() const {
  std::string out = fmt::format("{}: {}", queue.empty() ? group : queue, new_state);
  if (messages) out += fmt::format(" ({} message{})", *messages, *messages == 1 ? "" : "s");
  if (!top_groups.empty()) {
    out += ": ";
    for (size_t i = 0; i < top_groups.size(); ++i) {
      const NotificationGroup& g = top_groups[i];
      if (i > 0) out += ", ";
      if (!g.cause.empty()) {
        out += fmt::format("{} x {} (found for {} of {} looked up)", g.messages, g.cause, g.found, g.answered);
      } else if (!g.no_cause.empty()) {
        out += fmt::format("{} x group {}, no cause found ({})", g.messages, g.id, g.no_cause);
      } else {
        out += fmt::format("{} x group {}", g.messages, g.id);
      }
    }
  } else {
    out += ": " + reason;
  }
  if (!dashboard_url.empty()) out += " " + dashboard_url;
  return out;
}

bool IsStartupOk(const AlarmNotification& notification) {
  return notification.initial && notification.old_state == "INSUFFICIENT_DATA" && notification.new_state == "OK";
}

namespace {

constexpr std::string_view kRedactedPath = "/...";

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  Result<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return "<invalid url>";
  // Scheme and host only: webhook URLs (Slack, Teams) carry their secret in
  // the path or query.
  return parsed->scheme + "://" + parsed->Authority() + std::string(kRedactedPath);
}

std::string ScrubUrl(std::string_view text, std::string_view url) {
  std::string out(text);
  // The URL as written first, so that what is left of it reads as RedactUrl.
  ReplaceAll(out, url, RedactUrl(url));
  if (size_t hash = url.find('#'); hash != std::string_view::npos) ReplaceAll(out, url.substr(hash + 1), "...");
  if (size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    std::string_view authority = url.substr(scheme + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
      ReplaceAll(out, authority.substr(0, at + 1), "");
      ReplaceAll(out, authority.substr(0, at), "...");
    }
  }
  Result<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return out;
  if (!parsed->query.empty()) {
    ReplaceAll(out, parsed->path + "?" + parsed->query, kRedactedPath);
    ReplaceAll(out, "?" + parsed->query, "");
    ReplaceAll(out, parsed->query, "...");
  }
  if (parsed->path != "/") ReplaceAll(out, parsed->path, kRedactedPath);
  return out;
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
    if (target.timeout.count() < 0) {
      return InvalidArgument(fmt::format("webhook {}: timeout must not be negative", RedactUrl(target.url)));
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
  size_t tried = 0;
  for (const WebhookTarget& target : options_.targets) {
    if (IsStartupOk(notification) && !target.notify_on_startup) continue;
    ++tried;
    Status status = Post(target, body);
    if (!status.ok()) failures.push_back(std::move(status));
  }
  return CombineFailures("webhooks", tried, failures)
      .WithContext(fmt::format("notify alarm {} ({} -> {})", notification.alarm_name, notification.old_state,
                               notification.new_state));
}

Status WebhookNotifier::Post(const WebhookTarget& target, const std::string& body) {
  HttpRequest request;
  request.method = "POST";
  request.url = target.url;
  request.body = body;
  request.timeout = target.timeout.count() > 0 ? target.timeout : options_.timeout;
  request.headers = {{"Content-Type", "application/json"}, {"User-Agent", "dlq-archive/" DLQ_VERSION}};
  for (const auto& [name, value] : target.headers) SetHeader(request.headers, name, value);

  const std::string where = "webhook POST " + RedactUrl(target.url);
  const int max_attempts = std::max(1, options_.retry.max_attempts);
  Status last;
  for (int attempt = 1;; ++attempt) {
    if (cancelled_) {
      return Cancelled(fmt::format("{}: cancelled before attempt {} of {}{}", where, attempt, max_attempts,
                                   last.ok() ? "" : "; last error: " + last.ToString()));
    }
    Result<HttpResponse> response = transport_.Send(request);
    bool retryable;
    if (!response.ok()) {
      // Transport messages name the URL's path, which may be the secret.
      last = Status(response.status().code(), ScrubUrl(response.status().message(), target.url));
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
      MutexLock lock(mu_);
      delay = BackoffDelay(options_.retry, attempt - 1, rng_);
    }
    // In slices, so that Cancel() ends the wait promptly.
    for (std::chrono::milliseconds left = delay; left.count() > 0 && !cancelled_;) {
      std::chrono::milliseconds step = std::min(left, std::chrono::milliseconds(100));
      clock_.SleepFor(step);
      left -= step;
    }
  }
}

QueuedNotifier::QueuedNotifier(std::unique_ptr<Notifier> inner, QueuedNotifierOptions options)
    : inner_(std::move(inner)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : DefaultClock()) {
  worker_ = std::thread([this] { Work(); });
}

QueuedNotifier::~QueuedNotifier() {
  Shutdown();
}

void QueuedNotifier::CountDropped(uint64_t n) {
  if (n == 0) return;
  dropped_ += n;
  if (options_.dropped != nullptr) options_.dropped->Add(static_cast<double>(n));
}

Status QueuedNotifier::Notify(const AlarmNotification& notification) {
  const size_t capacity = std::max<size_t>(options_.capacity, 1);
  std::string why;
  {
    MutexLock lock(mu_);
    if (!closing_ && queue_.size() < capacity) {
      queue_.push_back(notification);
      cv_.NotifyAll();
      return Status::Ok();
    }
    why = closing_ ? std::string("shutting down") : fmt::format("queue full ({} waiting)", capacity);
  }
  CountDropped(1);
  return Unavailable(fmt::format("webhook {}: {}; notification of alarm {} ({} -> {}) dropped", options_.name, why,
                                 notification.alarm_name, notification.old_state, notification.new_state));
}

void QueuedNotifier::Work() {
  MutexLock lock(mu_);
  for (;;) {
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return !queue_.empty() || closing_; });
    if (abandon_ || queue_.empty()) return;  // given up, or closing and drained
    AlarmNotification notification = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.Unlock();
    Status status = inner_->Notify(notification);
    if (status.ok()) {
      ++delivered_;
      if (options_.delivered != nullptr) options_.delivered->Inc();
    } else if (status.code() == ErrorCode::kCancelled) {
      CountDropped(1);
    } else {
      ++failed_;
      if (options_.failed != nullptr) options_.failed->Inc();
      Log().Log(LogLevel::kError, "notify_failed",
                {{"webhook", options_.name},
                 {"queue", notification.queue},
                 {"alarm", notification.alarm_name},
                 {"error", status.ToString()}});
    }
    lock.Lock();
    busy_ = false;
    cv_.NotifyAll();
  }
}

void QueuedNotifier::BeginShutdown() {
  MutexLock lock(mu_);
  if (closing_) return;
  closing_ = true;
  deadline_ = clock_.SteadyNow() + options_.drain_timeout;
  cv_.NotifyAll();
}

void QueuedNotifier::FinishShutdown() {
  BeginShutdown();
  size_t abandoned = 0;
  bool gave_up = false;
  {
    MutexLock lock(mu_);
    if (!clock_.WaitUntil(mu_, cv_, deadline_,
                          [&]() DLQ_REQUIRES(mu_) { return abandon_ || (queue_.empty() && !busy_); })) {
      gave_up = true;
      abandon_ = true;
      abandoned = queue_.size();
      queue_.clear();
      cv_.NotifyAll();
    }
  }
  if (gave_up) {
    inner_->Cancel();  // the attempt in flight is the last one
    CountDropped(abandoned);
    Log().Log(LogLevel::kWarn, "webhook_drain_timeout",
              {{"webhook", options_.name},
               {"dropped", static_cast<uint64_t>(abandoned)},
               {"drain_timeout_ms", static_cast<int64_t>(options_.drain_timeout.count())}});
  }
  std::call_once(joined_, [this] { worker_.join(); });
}

bool QueuedNotifier::Flush(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return clock_.WaitFor(mu_, cv_, timeout, [&]() DLQ_REQUIRES(mu_) { return queue_.empty() && !busy_; });
}

std::vector<std::string> WebhookLabels(const std::vector<WebhookConfig>& webhooks) {
  std::vector<std::string> labels;
  for (size_t i = 0; i < webhooks.size(); ++i) {
    std::string label = RedactUrl(webhooks[i].url);
    if (std::find(labels.begin(), labels.end(), label) != labels.end()) label += fmt::format(" #{}", i + 1);
    labels.push_back(std::move(label));
  }
  return labels;
}

namespace {

bool SameWebhooks(const std::vector<WebhookConfig>& a, const std::vector<WebhookConfig>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const WebhookConfig& x, const WebhookConfig& y) {
    return x.url == y.url && x.headers == y.headers && x.timeout == y.timeout &&
           x.notify_on_startup == y.notify_on_startup;
  });
}

}  // namespace

WebhookSet::WebhookSet(HttpTransport& transport, Clock& clock, DaemonMetrics* metrics, WebhookSetOptions options)
    : transport_(transport),
      clock_(clock),
      metrics_(metrics),
      options_(options),
      entries_(std::make_shared<Entries>()) {}

WebhookSet::~WebhookSet() {
  std::shared_ptr<Entries> current;
  std::vector<std::shared_future<void>> retiring;
  {
    MutexLock lock(mu_);
    current = std::move(entries_);
    retiring = std::move(retiring_);
  }
  // One shared deadline for all webhooks, then the replaced sets.
  for (Entry& e : *current) e.notifier->BeginShutdown();
  for (Entry& e : *current) e.notifier->FinishShutdown();
  for (const std::shared_future<void>& f : retiring) f.wait();
}

Status WebhookSet::Apply(const std::vector<WebhookConfig>& webhooks) {
  {
    MutexLock lock(mu_);
    if (SameWebhooks(configs_, webhooks)) return Status::Ok();
  }
  const std::vector<std::string> labels = WebhookLabels(webhooks);
  // Validate everything before any thread starts or series appears.
  std::vector<std::unique_ptr<WebhookNotifier>> hooks;
  for (size_t i = 0; i < webhooks.size(); ++i) {
    const WebhookConfig& w = webhooks[i];
    WebhookOptions o;
    o.retry = options_.retry;
    o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(w.timeout);
    WebhookTarget t;
    t.url = w.url;
    for (const auto& [name, value] : w.headers) t.headers.emplace_back(name, value);
    t.timeout = o.timeout;
    t.notify_on_startup = w.notify_on_startup;
    o.targets.push_back(std::move(t));
    auto hook = WebhookNotifier::Create(std::move(o), transport_, clock_);
    if (!hook.ok()) return hook.status().WithContext(fmt::format("notify.webhooks[{}]", i));
    hooks.push_back(std::move(*hook));
  }
  auto fresh = std::make_shared<Entries>();
  for (size_t i = 0; i < hooks.size(); ++i) {
    QueuedNotifierOptions qo;
    qo.name = labels[i];
    qo.capacity = options_.capacity;
    qo.drain_timeout = options_.drain_timeout;
    if (metrics_ != nullptr) {
      qo.delivered = &metrics_->webhook_deliveries_total.WithLabels({labels[i], "ok"});
      qo.failed = &metrics_->webhook_deliveries_total.WithLabels({labels[i], "error"});
      qo.dropped = &metrics_->webhook_dropped_total.WithLabels({labels[i]});
    }
    fresh->push_back(
        Entry{labels[i], webhooks[i].notify_on_startup, std::make_unique<QueuedNotifier>(std::move(hooks[i]), qo)});
  }

  std::shared_ptr<Entries> old;
  {
    MutexLock lock(mu_);
    old = std::exchange(entries_, fresh);
    configs_ = webhooks;
    std::erase_if(retiring_, [](const std::shared_future<void>& f) {
      // Whether it is ready, without waiting.
      return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;  // lint: allow-raw-wait
    });
    if (!old->empty()) {
      for (Entry& e : *old) e.notifier->BeginShutdown();
      retiring_.push_back(std::async(std::launch::async, [old] {
                            for (Entry& e : *old) e.notifier->FinishShutdown();
                          }).share());
    }
  }
  if (metrics_ != nullptr) {
    for (const Entry& e : *old) {
      if (std::find(labels.begin(), labels.end(), e.label) != labels.end()) continue;
      metrics_->webhook_deliveries_total.RemoveLabels({e.label, "ok"});
      metrics_->webhook_deliveries_total.RemoveLabels({e.label, "error"});
      metrics_->webhook_dropped_total.RemoveLabels({e.label});
    }
  }
  Log().Log(LogLevel::kInfo, "webhooks_applied",
            {{"webhooks", static_cast<uint64_t>(labels.size())}, {"replaced", static_cast<uint64_t>(old->size())}});
  return Status::Ok();
}

Status WebhookSet::Notify(const AlarmNotification& notification) {
  std::shared_ptr<Entries> entries;
  {
    MutexLock lock(mu_);
    entries = entries_;
  }
  std::vector<Status> failures;
  size_t tried = 0;
  for (Entry& e : *entries) {
    if (IsStartupOk(notification) && !e.notify_on_startup) continue;
    ++tried;
    Status status = e.notifier->Notify(notification);
    if (!status.ok()) failures.push_back(std::move(status));
  }
  return CombineFailures("webhooks", tried, failures);
}

bool WebhookSet::Flush(std::chrono::milliseconds timeout) {
  std::shared_ptr<Entries> entries;
  std::vector<std::shared_future<void>> retiring;
  {
    MutexLock lock(mu_);
    entries = entries_;
    retiring = retiring_;
  }
  // The same clock as the notifiers' own waits (they take the default).
  Clock& clock = DefaultClock();
  const SteadyTime deadline = clock.SteadyNow() + timeout;
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.SteadyNow()),
                    std::chrono::milliseconds(0));
  };
  bool drained = true;
  for (Entry& e : *entries) drained = e.notifier->Flush(left()) && drained;
  for (const std::shared_future<void>& f : retiring) {
    // A retiring set's shutdown runs on its own thread, timed by its own
    // drain_timeout: this only bounds how long Flush looks at it.
    drained = f.wait_for(left()) == std::future_status::ready && drained;  // lint: allow-raw-wait
  }
  return drained;
}

size_t WebhookSet::size() const {
  MutexLock lock(mu_);
  return entries_->size();
}

Status MultiNotifier::Notify(const AlarmNotification& notification) {
  std::vector<Status> failures;
  for (Notifier* notifier : notifiers_) {
    Status status = notifier->Notify(notification);
    if (!status.ok()) failures.push_back(std::move(status));
  }
  return CombineFailures("notifiers", notifiers_.size(), failures);
}

void MultiNotifier::Cancel() {
  for (Notifier* notifier : notifiers_) notifier->Cancel();
}

}  // namespace dlq
