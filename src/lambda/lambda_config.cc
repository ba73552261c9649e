#include "lambda/lambda_config.h"

#include <fmt/format.h>

#include <limits>

#include "archiver/selection_spec.h"
#include "common/byte_size.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

Status Bad(std::string_view var, std::string_view value, std::string_view expected) {
  return InvalidArgument(fmt::format("{}='{}': expected {}", var, value, expected));
}

Result<int64_t> IntVar(const Environment& env, std::string_view var, int64_t lo, int64_t hi, int64_t fallback) {
  auto v = env.GetNonEmpty(var);
  if (!v) return fallback;
  auto n = ParseInt64(Trim(*v));
  if (!n || *n < lo || *n > hi) return Bad(var, *v, fmt::format("an integer from {} to {}", lo, hi));
  return *n;
}

// DLQ_ARCHIVE_KEY_TEMPLATE, or the default (Hive with DLQ_ARCHIVE_HIVE=1) layout.
Status ReadKeyTemplate(const Environment& env, DrainOptions& d) {
  bool hive = env.GetNonEmpty("DLQ_ARCHIVE_HIVE").value_or("0") == "1";
  std::string tmpl =
      env.GetNonEmpty("DLQ_ARCHIVE_KEY_TEMPLATE").value_or(std::string(hive ? kHiveKeyTemplate : kDefaultKeyTemplate));
  auto key_template = KeyTemplate::Parse(tmpl);
  if (!key_template.ok()) return key_template.status().WithContext("DLQ_ARCHIVE_KEY_TEMPLATE");
  d.key_template = *key_template;
  return Status::Ok();
}

// DLQ_ARCHIVE_SSE, DLQ_ARCHIVE_SSE_KMS_KEY_ID and DLQ_ARCHIVE_STORAGE_CLASS.
Status ReadPutOptions(const Environment& env, PutOptions& put) {
  if (auto sse = env.GetNonEmpty("DLQ_ARCHIVE_SSE")) {
    if (*sse != "AES256" && *sse != "aws:kms") return Bad("DLQ_ARCHIVE_SSE", *sse, "AES256 or aws:kms");
    put.sse = *sse;
  }
  if (auto kms = env.GetNonEmpty("DLQ_ARCHIVE_SSE_KMS_KEY_ID")) {
    if (put.sse != "aws:kms") {
      return InvalidArgument("DLQ_ARCHIVE_SSE_KMS_KEY_ID is set but DLQ_ARCHIVE_SSE is not aws:kms");
    }
    put.sse_kms_key_id = *kms;
  }
  if (auto sc = env.GetNonEmpty("DLQ_ARCHIVE_STORAGE_CLASS")) put.storage_class = *sc;
  return Status::Ok();
}

// DLQ_ARCHIVE_BATCH_MAX_MESSAGES, _MAX_BYTES and _MAX_AGE.
Status ReadBatchLimits(const Environment& env, BatchLimits& batch) {
  DLQ_ASSIGN_OR_RETURN(int64_t batch_messages, IntVar(env, "DLQ_ARCHIVE_BATCH_MAX_MESSAGES", 1, 1000000, 0));
  if (batch_messages > 0) batch.max_messages = static_cast<size_t>(batch_messages);
  if (auto b = env.GetNonEmpty("DLQ_ARCHIVE_BATCH_MAX_BYTES")) {
    auto n = ParseByteSize(*b);
    if (!n || *n == 0) return Bad("DLQ_ARCHIVE_BATCH_MAX_BYTES", *b, "a size such as 64MiB");
    batch.max_bytes = static_cast<size_t>(*n);
  }
  if (auto a = env.GetNonEmpty("DLQ_ARCHIVE_BATCH_MAX_AGE")) {
    auto age = ParseDuration(*a);
    if (!age || age->count() <= 0) return Bad("DLQ_ARCHIVE_BATCH_MAX_AGE", *a, "a duration such as 30s");
    batch.max_age = *age;
  }
  return Status::Ok();
}

// DLQ_ARCHIVE_ROLE_ARNS: ACCOUNT=ROLE_ARN pairs, comma-separated.
Status ReadRoleArns(const Environment& env, std::map<std::string, std::string>& role_arns) {
  if (auto roles = env.GetNonEmpty("DLQ_ARCHIVE_ROLE_ARNS")) {
    for (std::string_view part : Split(*roles, ',')) {
      part = Trim(part);
      if (part.empty()) continue;
      auto eq = part.find('=');
      std::string_view account = eq == std::string_view::npos ? "" : part.substr(0, eq);
      std::string_view arn = eq == std::string_view::npos ? "" : part.substr(eq + 1);
      if (account.size() != 12 || !ParseInt64(account) || !StartsWith(arn, "arn:")) {
        return Bad("DLQ_ARCHIVE_ROLE_ARNS", part, "ACCOUNT=ROLE_ARN pairs, comma-separated (12-digit account ids)");
      }
      role_arns[std::string(account)] = std::string(arn);
    }
  }
  return Status::Ok();
}

// DLQ_ARCHIVE_CAUSES, DLQ_ARCHIVE_CAUSE_SAMPLES and DLQ_ARCHIVE_CONSUMER_LOGS.
Status ReadCauses(const Environment& env, LambdaCauses& causes) {
  if (auto mode = env.GetNonEmpty("DLQ_ARCHIVE_CAUSES")) {
    const std::string_view m = Trim(*mode);
    if (m == "auto") {
      causes.mode = LambdaCauses::Mode::kAuto;
    } else if (m == "on") {
      causes.mode = LambdaCauses::Mode::kOn;
    } else if (m == "off") {
      causes.mode = LambdaCauses::Mode::kOff;
    } else {
      return Bad("DLQ_ARCHIVE_CAUSES", *mode, "auto, on or off");
    }
  }
  DLQ_ASSIGN_OR_RETURN(int64_t samples,
                       IntVar(env, "DLQ_ARCHIVE_CAUSE_SAMPLES", 1, 100, static_cast<int64_t>(causes.samples)));
  causes.samples = static_cast<size_t>(samples);
  if (auto logs = env.GetNonEmpty("DLQ_ARCHIVE_CONSUMER_LOGS")) {
    for (std::string_view part : Split(*logs, ',')) {
      part = Trim(part);
      if (part.empty()) continue;
      const auto eq = part.find('=');
      const std::string_view queue = eq == std::string_view::npos ? "" : Trim(part.substr(0, eq));
      const std::string_view group = eq == std::string_view::npos ? part : Trim(part.substr(eq + 1));
      if (group.empty() || (eq != std::string_view::npos && queue.empty()) ||
          group.find_first_of(" \t*") != std::string_view::npos) {
        return Bad("DLQ_ARCHIVE_CONSUMER_LOGS", part,
                   "log group names, or QUEUE=GROUP for one queue, comma-separated (e.g. /ecs/orders,"
                   "payments-dlq=/ecs/payments)");
      }
      causes.consumer_logs.emplace_back(std::string(queue), std::string(group));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<LambdaSettings> LambdaSettingsFromEnv(const Environment& env) {
  LambdaSettings s;
  auto api = env.GetNonEmpty("AWS_LAMBDA_RUNTIME_API");
  if (!api) return InvalidArgument("AWS_LAMBDA_RUNTIME_API is not set: `dlq-archive lambda` runs inside AWS Lambda");
  s.runtime_api = *api;
  s.function_name = env.GetNonEmpty("AWS_LAMBDA_FUNCTION_NAME").value_or("");

  auto dest = env.GetNonEmpty("DLQ_ARCHIVE_DESTINATION");
  if (!dest) return InvalidArgument("DLQ_ARCHIVE_DESTINATION is not set: expected s3://BUCKET/PREFIX");
  auto parsed_dest = ParseDestination(*dest);
  if (!parsed_dest.ok()) return parsed_dest.status().WithContext("DLQ_ARCHIVE_DESTINATION");
  s.destination = *parsed_dest;
  LambdaConfig& c = s.config;
  c.destination_uri = *dest;

  if (auto q = env.GetNonEmpty("DLQ_ARCHIVE_QUEUES")) {
    for (std::string_view part : Split(*q, ',')) {
      part = Trim(part);
      if (!part.empty()) c.queues.emplace_back(part);
    }
  }

  DrainOptions& d = c.drain;
  // A stop at the deadline releases everything received, so a follow-up
  // invocation finds it visible at once.
  d.finish_receives_on_stop = true;
  if (!s.destination.prefix.empty()) d.prefix = s.destination.prefix;
  DLQ_RETURN_IF_ERROR(ReadKeyTemplate(env, d));
  DLQ_RETURN_IF_ERROR(ReadPutOptions(env, d.put));
  DLQ_RETURN_IF_ERROR(ReadBatchLimits(env, d.batch));

  if (auto p = env.GetNonEmpty("DLQ_ARCHIVE_POLICY")) {
    auto selection = ParseSelectionSpec(*p);
    if (!selection.ok()) {
      return Bad("DLQ_ARCHIVE_POLICY", *p, "all, older_than:DURATION or expiring_within:DURATION (e.g. older_than:1h)");
    }
    d.selection = *selection;
  }
  DLQ_ASSIGN_OR_RETURN(int64_t max_messages,
                       IntVar(env, "DLQ_ARCHIVE_MAX_MESSAGES", 0, std::numeric_limits<int64_t>::max(), 0));
  d.max_messages = static_cast<uint64_t>(max_messages);

  if (auto m = env.GetNonEmpty("DLQ_ARCHIVE_DEADLINE_MARGIN")) {
    auto margin = ParseDuration(*m);
    if (!margin || margin->count() <= 0) return Bad("DLQ_ARCHIVE_DEADLINE_MARGIN", *m, "a duration such as 10s");
    c.deadline_margin = *margin;
  }
  DLQ_ASSIGN_OR_RETURN(int64_t hops, IntVar(env, "DLQ_ARCHIVE_MAX_HOPS", 0, 1000, c.max_hops));
  c.max_hops = static_cast<int>(hops);
  c.metrics_namespace = env.GetNonEmpty("DLQ_ARCHIVE_METRICS_NAMESPACE").value_or(c.metrics_namespace);

  DLQ_RETURN_IF_ERROR(ReadRoleArns(env, s.role_arns));
  DLQ_RETURN_IF_ERROR(ReadCauses(env, c.causes));
  if (Status st = d.Validate(); !st.ok()) return st;
  return s;
}

}  // namespace dlq
