#include "replay/redrive_probes.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>

#include "common/log.h"
#include "common/strings.h"
#include "replay/origin_clue.h"
#include "replay/targets.h"

namespace dlq {
namespace {

// An attribute that SQS returns as a decimal integer; `fallback` when absent.
Result<int64_t> IntAttribute(const std::map<std::string, std::string>& attrs, const std::string& name,
                             int64_t fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->second.empty()) return fallback;
  std::optional<int64_t> v = ParseInt64(it->second);
  if (!v || *v < 0) return InvalidArgument(fmt::format("{} '{}' is not a non-negative integer", name, it->second));
  return *v;
}

// {"deadLetterTargetArn": "...", "maxReceiveCount": 3 or "3"}.
Status ParsePolicy(std::string_view json, DestinationWindow& w) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  std::string_view arn;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS || !doc.is_object() ||
      doc["deadLetterTargetArn"].get_string().get(arn) != simdjson::SUCCESS || arn.empty()) {
    return InvalidArgument("RedrivePolicy is not a JSON object with a deadLetterTargetArn");
  }
  w.dlq_arn = std::string(arn);
  simdjson::dom::element count;
  int64_t n = 0;
  std::string_view text;
  if (doc["maxReceiveCount"].get(count) != simdjson::SUCCESS) {
    return InvalidArgument("RedrivePolicy has no maxReceiveCount");
  }
  if (count.get_int64().get(n) != simdjson::SUCCESS) {
    std::optional<int64_t> parsed;
    if (count.get_string().get(text) == simdjson::SUCCESS) parsed = ParseInt64(text);
    if (!parsed) return InvalidArgument("RedrivePolicy maxReceiveCount is not a number");
    n = *parsed;
  }
  if (n < 1 || n > 1000) return InvalidArgument(fmt::format("RedrivePolicy maxReceiveCount {} is not in 1..1000", n));
  w.max_receive_count = static_cast<int>(n);
  return Status::Ok();
}

}  // namespace

Result<DestinationWindow> ReadProcessingWindow(QueueClient& sqs, const std::string& queue_url,
                                               const std::string& region) {
  auto attrs = sqs.GetQueueAttributes(queue_url, {"RedrivePolicy", "VisibilityTimeout", "DelaySeconds"});
  if (!attrs.ok()) return attrs.status().WithContext(fmt::format("reading the redrive policy of {}", queue_url));
  DestinationWindow w;
  w.queue_url = queue_url;
  auto policy = attrs->find("RedrivePolicy");
  if (policy == attrs->end() || policy->second.empty()) {
    return FailedPrecondition(
        fmt::format("queue {} has no RedrivePolicy: a message that fails again there never reaches a DLQ, so "
                    "re-failures cannot be seen",
                    queue_url));
  }
  if (Status st = ParsePolicy(policy->second, w); !st.ok()) return st.WithContext(fmt::format("queue {}", queue_url));
  auto visibility = IntAttribute(*attrs, "VisibilityTimeout", 30);
  auto delay = IntAttribute(*attrs, "DelaySeconds", 0);
  if (!visibility.ok()) return visibility.status().WithContext(fmt::format("queue {}", queue_url));
  if (!delay.ok()) return delay.status().WithContext(fmt::format("queue {}", queue_url));
  w.visibility_timeout = std::chrono::seconds(*visibility);
  w.delay = std::chrono::seconds(*delay);
  w.window = ProcessingWindow(w.max_receive_count, w.visibility_timeout, w.delay);
  auto dlq = ResolveReplayTarget(sqs, w.dlq_arn, region);
  if (!dlq.ok()) return dlq.status().WithContext(fmt::format("the DLQ of {}", queue_url));
  w.dlq_url = dlq->url;
  return w;
}

SqsBacklogProbe::SqsBacklogProbe(QueueClient& sqs, std::vector<std::string> destination_urls)
    : sqs_(sqs), urls_(std::move(destination_urls)) {}

Result<BacklogSample> SqsBacklogProbe::Sample() {
  BacklogSample sample;
  sample.visible = 0;
  for (const std::string& url : urls_) {
    auto attrs = sqs_.GetQueueAttributes(url, {"ApproximateNumberOfMessages"});
    if (!attrs.ok()) return attrs.status().WithContext(fmt::format("reading the backlog of {}", url));
    auto n = IntAttribute(*attrs, "ApproximateNumberOfMessages", -1);
    if (!n.ok() || *n < 0) {
      return Internal(fmt::format("queue {} returned no ApproximateNumberOfMessages", url));
    }
    sample.visible += *n;
  }
  return sample;
}

SqsRefailureProbe::SqsRefailureProbe(QueueClient& sqs, Clock& clock, RefailureProbeOptions options)
    : sqs_(sqs), clock_(clock), options_(std::move(options)) {}

Result<std::unique_ptr<SqsRefailureProbe>> SqsRefailureProbe::Start(QueueClient& sqs, Clock& clock,
                                                                    std::vector<std::string> dlqs,
                                                                    RefailureProbeOptions options) {
  std::unique_ptr<SqsRefailureProbe> probe(new SqsRefailureProbe(sqs, clock, std::move(options)));
  std::sort(dlqs.begin(), dlqs.end());
  dlqs.erase(std::unique(dlqs.begin(), dlqs.end()), dlqs.end());
  for (std::string& url : dlqs) {
    DLQ_ASSIGN_OR_RETURN(int64_t total, probe->Total(url));
    probe->dlqs_.push_back({std::move(url), total});
  }
  return probe;
}

Result<int64_t> SqsRefailureProbe::Total(const std::string& url) {
  static const std::vector<std::string> kCounts = {
      "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"};
  ++count_reads_;
  auto attrs = sqs_.GetQueueAttributes(url, kCounts);
  if (!attrs.ok()) return attrs.status().WithContext(fmt::format("reading the message counts of DLQ {}", url));
  int64_t total = 0;
  for (const std::string& name : kCounts) {
    auto n = IntAttribute(*attrs, name, 0);
    if (!n.ok()) return n.status().WithContext(fmt::format("DLQ {}", url));
    total += *n;
  }
  if (options_.removed_by_caller) total += static_cast<int64_t>(options_.removed_by_caller(url));
  return total;
}

Result<std::vector<RefailedMessage>> SqsRefailureProbe::Find(const std::map<std::string, ReplayedMessage>& watched) {
  std::vector<RefailedMessage> found;
  for (Dlq& dlq : dlqs_) {
    DLQ_ASSIGN_OR_RETURN(int64_t total, Total(dlq.url));
    if (total <= dlq.last_total) {
      dlq.last_total = total;  // nothing new (or others removed messages): the next growth counts from here
      continue;
    }
    DLQ_RETURN_IF_ERROR(Look(dlq, total, watched, found));
  }
  return found;
}

Status SqsRefailureProbe::Look(Dlq& dlq, int64_t total, const std::map<std::string, ReplayedMessage>& watched,
                               std::vector<RefailedMessage>& found) {
  const int64_t growth = total - dlq.last_total;
  std::vector<Message> held;
  std::set<std::string> seen;
  int64_t new_found = 0;
  bool complete = false;
  while (held.size() < options_.max_receives_per_look) {
    ReceiveOptions ro;
    ro.max_messages = static_cast<int>(std::min<uint64_t>(10, options_.max_receives_per_look - held.size()));
    ro.wait_time_seconds = options_.wait_time_seconds;
    ro.visibility_timeout = options_.visibility_timeout_seconds;
    ro.attribute_names = {};
    ro.message_attribute_names = {"All"};  // a Lambda origin's re-failure names its invocation (RequestID)
    std::vector<CorruptMessage> corrupt;
    ro.corrupt = &corrupt;
    auto got = sqs_.ReceiveMessages(dlq.url, ro);
    if (!got.ok()) {
      Release(dlq.url, held);
      return got.status().WithContext(fmt::format("looking for re-failures in DLQ {}", dlq.url));
    }
    receives_ += got->size() + corrupt.size();
    for (CorruptMessage& c : corrupt) held.push_back(Message{c.message_id, c.receipt_handle, "", "", "", {}, {}});
    if (got->empty() && corrupt.empty()) {
      complete = true;  // long polling: nothing visible is left
      break;
    }
    for (Message& m : *got) {
      seen.insert(m.message_id);
      // By its id (an SQS destination), or, sent to an origin, by its
      // invocation's request id or its payload (replay/origin_clue.h).
      for (const std::string& key : RefailureKeysOf(m)) {
        auto w = watched.find(key);
        if (w == watched.end()) continue;
        if (reported_.insert(key).second) {
          found.push_back({w->second.message_id, key, w->second.destination, dlq.url, clock_.Now()});
          ++new_found;
        }
        break;
      }
      held.push_back(std::move(m));
    }
    if (new_found >= growth || static_cast<int64_t>(seen.size()) >= total) {
      complete = true;  // the growth is explained, or every message was seen
      break;
    }
  }
  Release(dlq.url, held);
  // What was found is explained either way; the rest of the growth is looked at again next time.
  dlq.last_total = complete ? total : dlq.last_total + new_found;
  return Status::Ok();
}

void SqsRefailureProbe::Release(const std::string& url, const std::vector<Message>& held) {
  for (size_t at = 0; at < held.size(); at += 10) {
    std::vector<VisibilityEntry> entries;
    for (size_t i = at; i < held.size() && i < at + 10; ++i) {
      entries.push_back({fmt::format("r{}", i - at), held[i].receipt_handle, 0});
    }
    auto r = sqs_.ChangeMessageVisibilityBatch(url, entries);
    if (!r.ok()) {
      // They come back by themselves after the short receive visibility.
      Log().Log(LogLevel::kWarn, "replay.refailure_release_failed",
                {{"queue", url}, {"messages", std::to_string(entries.size())}, {"error", r.status().message()}});
      continue;
    }
    for (const BatchEntryError& e : r->failed) {
      Log().Log(LogLevel::kWarn, "replay.refailure_release_failed",
                {{"queue", url}, {"entry", e.id}, {"error", e.code + ": " + e.message}});
    }
  }
}

}  // namespace dlq
