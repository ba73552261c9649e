#include "testing/fake_queue.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "sqs/limits.h"
#include "sqs/md5.h"

namespace dlq {
namespace {

// The characters SQS accepts in a message body: #x9 #xA #xD #x20-#xD7FF
// #xE000-#xFFFD #x10000-#x10FFFF, as valid UTF-8.
bool ValidSqsText(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8SequenceLength(p + i, s.size() - i);
    if (len == 0) return false;
    uint32_t cp = len == 1 ? p[i] : p[i] & (0xFF >> (len + 1));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
    bool ok = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
              cp >= 0x10000;
    if (!ok) return false;
    i += len;
  }
  return true;
}

using std::chrono::seconds;

constexpr int kDefaultVisibilityTimeout = 30;
constexpr int kDefaultRetention = 345600;  // 4 days
constexpr int kDefaultMaxMessageSize = static_cast<int>(sqs::kMaxMessageBytes);
constexpr auto kDedupWindow = std::chrono::minutes(5);

int64_t EpochMillis(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
int64_t EpochSeconds(SystemTime t) {
  return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count();
}

Status QueueDoesNotExist(std::string_view operation, std::string_view what) {
  return NotFound(fmt::format("{} {}: The specified queue does not exist.", operation, what))
      .WithAws(AwsErrorInfo{.error_code = "QueueDoesNotExist", .http_status = 400, .request_id = "fake"});
}

Status AwsError(ErrorCode code, std::string_view aws_code, std::string message) {
  return Status(code, std::move(message))
      .WithAws(AwsErrorInfo{.error_code = std::string(aws_code), .http_status = 400, .request_id = "fake"});
}

// What SQS answers to a send of `entry` whose body it cannot store.
Status CheckSendable(const SendEntry& entry) {
  if (ValidSqsText(entry.body)) return Status::Ok();
  return AwsError(ErrorCode::kInvalidArgument, "InvalidMessageContents",
                  "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF and "
                  "#xE000 to #xFFFD.");
}

bool ValidQueueName(std::string_view name) {
  std::string_view base = name;
  if (EndsWith(base, ".fifo")) base.remove_suffix(5);
  if (base.empty() || name.size() > 80) return false;
  return std::all_of(base.begin(), base.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

bool Wants(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names) {
    if (n == "All" || n == ".*" || n == name) return true;
    if (EndsWith(n, ".*") && StartsWith(name, std::string_view(n).substr(0, n.size() - 1))) return true;
  }
  return false;
}

std::optional<int> ParseInt(const std::string& text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

const std::set<std::string>& SettableAttributes() {
  static const std::set<std::string> kNames = {"DelaySeconds",
                                               "MaximumMessageSize",
                                               "MessageRetentionPeriod",
                                               "Policy",
                                               "ReceiveMessageWaitTimeSeconds",
                                               "VisibilityTimeout",
                                               "RedrivePolicy",
                                               "RedriveAllowPolicy",
                                               "KmsMasterKeyId",
                                               "KmsDataKeyReusePeriodSeconds",
                                               "SqsManagedSseEnabled",
                                               "FifoQueue",
                                               "ContentBasedDeduplication",
                                               "DeduplicationScope",
                                               "FifoThroughputLimit"};
  return kNames;
}

}  // namespace

FakeQueueClient::FakeQueueClient(Clock& clock, std::string region, std::string account_id)
    : clock_(clock), region_(std::move(region)), account_id_(std::move(account_id)) {}

// ---------------------------------------------------------------- controls

void FakeQueueClient::FailNext(Operation op, Status status, int count, bool after_applying) {
  if (status.ok()) status = Internal("FakeQueueClient::FailNext called with an OK status");
  MutexLock lock(mu_);
  for (int i = 0; i < count; ++i) failures_[static_cast<int>(op)].push_back(Injected{status, after_applying});
}

void FakeQueueClient::CorruptNextReceived(int n) {
  MutexLock lock(mu_);
  corrupt_next_ += n;
}

void FakeQueueClient::CorruptReceivesOf(const std::string& message_id, int times) {
  MutexLock lock(mu_);
  corrupt_ids_[message_id] = times;
}

void FakeQueueClient::FailDeleteEntries(int n, std::string code) {
  MutexLock lock(mu_);
  fail_delete_entries_ = n;
  fail_delete_code_ = std::move(code);
}

void FakeQueueClient::FailVisibilityEntries(int n, std::string code) {
  MutexLock lock(mu_);
  fail_visibility_entries_ = n;
  fail_visibility_code_ = std::move(code);
}

void FakeQueueClient::FailSendEntries(int n, std::string code) {
  MutexLock lock(mu_);
  fail_send_entries_ = n;
  fail_send_code_ = std::move(code);
}

int FakeQueueClient::calls(Operation op) const {
  MutexLock lock(mu_);
  return calls_[static_cast<int>(op)];
}

int FakeQueueClient::deleted_count() const {
  MutexLock lock(mu_);
  return deleted_count_;
}

std::string FakeQueueClient::UrlFor(const std::string& name) const {
  return fmt::format("https://sqs.{}.amazonaws.com/{}/{}", region_, account_id_, name);
}

Result<std::string> FakeQueueClient::InjectMessage(const std::string& queue_url, const SendEntry& entry,
                                                   SystemTime sent_at,
                                                   const std::map<std::string, std::string>& system_attributes) {
  MutexLock lock(mu_);
  auto it = queues_.find(queue_url);
  if (it == queues_.end()) return QueueDoesNotExist("InjectMessage", queue_url);
  DLQ_ASSIGN_OR_RETURN(SentMessage sent, Enqueue(it->second, entry, sent_at, system_attributes));
  return sent.message_id;
}

std::vector<Message> FakeQueueClient::Messages(const std::string& queue_url) const {
  MutexLock lock(mu_);
  std::vector<Message> out;
  const Queue* q = FindQueueConst(queue_url);
  if (q == nullptr) return out;
  const SystemTime now = clock_.Now();
  const auto retention = seconds(IntAttribute(*q, "MessageRetentionPeriod", kDefaultRetention));
  for (const Stored& s : q->messages) {
    if (now >= s.retention_start + retention) continue;
    out.push_back(View(*q, s, {"All"}, {"All"}));
  }
  return out;
}

size_t FakeQueueClient::Depth(const std::string& queue_url) const {
  return Messages(queue_url).size();
}

// ---------------------------------------------------------------- helpers

std::optional<FakeQueueClient::Injected> FakeQueueClient::BeginCall(Operation op) {
  const int i = static_cast<int>(op);
  ++calls_[i];
  if (failures_[i].empty()) return std::nullopt;
  Injected f = failures_[i].front();
  failures_[i].pop_front();
  return f;
}

Result<FakeQueueClient::Queue*> FakeQueueClient::FindQueue(const std::string& queue_url, std::string_view operation) {
  auto it = queues_.find(queue_url);
  if (it == queues_.end()) return QueueDoesNotExist(operation, queue_url);
  Expire(it->second);
  return &it->second;
}

const FakeQueueClient::Queue* FakeQueueClient::FindQueueConst(const std::string& queue_url) const {
  auto it = queues_.find(queue_url);
  return it == queues_.end() ? nullptr : &it->second;
}

FakeQueueClient::Queue* FakeQueueClient::FindQueueByArn(const std::string& arn) {
  for (auto& [url, q] : queues_) {
    if (q.arn == arn) return &q;
  }
  return nullptr;
}

int FakeQueueClient::IntAttribute(const Queue& q, const std::string& name, int fallback) const {
  auto it = q.attributes.find(name);
  if (it == q.attributes.end()) return fallback;
  return ParseInt(it->second).value_or(fallback);
}

void FakeQueueClient::Expire(Queue& q) {
  const SystemTime now = clock_.Now();
  const auto retention = seconds(IntAttribute(q, "MessageRetentionPeriod", kDefaultRetention));
  std::erase_if(q.messages, [&](const Stored& s) { return now >= s.retention_start + retention; });
  std::erase_if(q.dedup, [&](const auto& kv) { return now >= kv.second.first + kDedupWindow; });
}

Status FakeQueueClient::ApplyAttributes(Queue& q, const std::map<std::string, std::string>& attributes) {
  const auto& settable = SettableAttributes();
  struct Range {
    const char* name;
    int lo, hi;
  };
  static constexpr Range kRanges[] = {{"DelaySeconds", 0, 900},
                                      {"MaximumMessageSize", 1024, 1048576},
                                      {"MessageRetentionPeriod", 60, 1209600},
                                      {"ReceiveMessageWaitTimeSeconds", 0, 20},
                                      {"VisibilityTimeout", 0, 43200}};
  std::optional<RedrivePolicy> redrive = q.redrive;
  for (const auto& [name, value] : attributes) {
    if (!settable.contains(name)) {
      return AwsError(ErrorCode::kInvalidArgument, "InvalidAttributeName", fmt::format("Unknown Attribute {}.", name));
    }
    for (const Range& r : kRanges) {
      if (name != r.name) continue;
      auto v = ParseInt(value);
      if (!v || *v < r.lo || *v > r.hi) {
        return AwsError(ErrorCode::kInvalidArgument, "InvalidAttributeValue",
                        fmt::format("Invalid value for the parameter {}.", name));
      }
    }
    if (name == "RedrivePolicy") {
      if (value.empty()) {
        redrive.reset();
        continue;
      }
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      std::string_view arn;
      RedrivePolicy policy;
      if (parser.parse(value).get(doc) || doc["deadLetterTargetArn"].get_string().get(arn)) {
        return AwsError(ErrorCode::kInvalidArgument, "InvalidAttributeValue", "Invalid RedrivePolicy.");
      }
      policy.target_arn = std::string(arn);
      simdjson::dom::element count = doc["maxReceiveCount"];
      int64_t n = 0;
      std::string_view text;
      if (!count.get_int64().get(n)) {
        policy.max_receive_count = static_cast<int>(n);
      } else if (!count.get_string().get(text)) {
        policy.max_receive_count = ParseInt(std::string(text)).value_or(0);
      }
      if (policy.max_receive_count < 1 || policy.max_receive_count > 1000) {
        return AwsError(ErrorCode::kInvalidArgument, "InvalidAttributeValue", "Invalid RedrivePolicy.");
      }
      redrive = policy;
    }
  }
  for (const auto& [name, value] : attributes) q.attributes[name] = value;
  if (q.attributes.contains("RedrivePolicy") && q.attributes["RedrivePolicy"].empty()) {
    q.attributes.erase("RedrivePolicy");
  }
  q.redrive = redrive;
  q.modified = clock_.Now();
  return Status::Ok();
}

Result<SentMessage> FakeQueueClient::Enqueue(Queue& q, const SendEntry& entry, SystemTime sent_at,
                                             const std::map<std::string, std::string>& system_attributes) {
  size_t size = entry.body.size();
  for (const auto& [name, value] : entry.message_attributes) {
    if (value.data_type.empty()) {
      return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue",
                      fmt::format("message attribute {} has no DataType", name));
    }
    size += name.size() + value.data_type.size() + value.string_value.size() + value.binary_value.size();
  }
  if (size > static_cast<size_t>(IntAttribute(q, "MaximumMessageSize", kDefaultMaxMessageSize))) {
    return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue", "Message must be shorter.");
  }
  if (entry.delay_seconds && (*entry.delay_seconds < 0 || *entry.delay_seconds > 900)) {
    return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue", "DelaySeconds must be 0..900.");
  }
  std::string dedup_id = entry.message_deduplication_id;
  if (q.fifo) {
    if (entry.message_group_id.empty()) {
      return AwsError(ErrorCode::kInvalidArgument, "MissingParameter",
                      "The request must contain the parameter MessageGroupId.");
    }
    if (entry.delay_seconds && *entry.delay_seconds != 0) {
      return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue",
                      "FIFO queues do not support per-message DelaySeconds.");
    }
    if (dedup_id.empty()) {
      auto it = q.attributes.find("ContentBasedDeduplication");
      if (it == q.attributes.end() || it->second != "true") {
        return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue",
                        "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId "
                        "provided explicitly.");
      }
      dedup_id = Sha256Hex(entry.body);
    }
    if (auto it = q.dedup.find(dedup_id); it != q.dedup.end()) return it->second.second;
  }

  Stored s;
  s.seq = next_seq_++;
  s.sent_at = sent_at;
  s.retention_start = sent_at;
  const int delay = entry.delay_seconds.value_or(IntAttribute(q, "DelaySeconds", 0));
  s.visible_at = std::max(sent_at, clock_.Now()) + seconds(delay);
  s.group_id = entry.message_group_id;
  Message& m = s.message;
  m.message_id = fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", static_cast<uint32_t>(s.seq * 2654435761u),
                             s.seq & 0xffff, (s.seq >> 4) & 0xfff, (s.seq >> 8) & 0xfff, s.seq);
  m.body = entry.body;
  m.md5_of_body = Md5OfBody(entry.body);
  m.message_attributes = entry.message_attributes;
  m.md5_of_message_attributes = Md5OfMessageAttributes(entry.message_attributes);
  m.attributes = system_attributes;
  for (const auto& [name, value] : entry.message_system_attributes) m.attributes[name] = value;
  m.attributes["SenderId"] = "AIDAFAKESENDER000000";
  m.attributes["SentTimestamp"] = std::to_string(EpochMillis(sent_at));
  SentMessage sent{.id = entry.id,
                   .message_id = m.message_id,
                   .md5_of_body = m.md5_of_body,
                   .md5_of_message_attributes = m.md5_of_message_attributes,
                   .sequence_number = {}};
  if (q.fifo) {
    sent.sequence_number = fmt::format("{:020d}", 18000000000000000000ull + s.seq);
    m.attributes["MessageGroupId"] = entry.message_group_id;
    m.attributes["MessageDeduplicationId"] = dedup_id;
    m.attributes["SequenceNumber"] = sent.sequence_number;
    q.dedup[dedup_id] = {clock_.Now(), sent};
  }
  q.messages.push_back(std::move(s));
  return sent;
}

Message FakeQueueClient::View(const Queue& q, const Stored& s, const std::vector<std::string>& attribute_names,
                              const std::vector<std::string>& message_attribute_names) const {
  (void)q;
  Message m;
  m.message_id = s.message.message_id;
  m.receipt_handle = s.message.receipt_handle;
  m.body = s.message.body;
  m.md5_of_body = s.message.md5_of_body;
  std::map<std::string, std::string> all = s.message.attributes;
  all["ApproximateReceiveCount"] = std::to_string(s.receive_count);
  if (s.first_receive) all["ApproximateFirstReceiveTimestamp"] = std::to_string(EpochMillis(*s.first_receive));
  for (auto& [name, value] : all) {
    if (Wants(attribute_names, name)) m.attributes.emplace(name, value);
  }
  for (const auto& [name, value] : s.message.message_attributes) {
    if (Wants(message_attribute_names, name)) m.message_attributes.emplace(name, value);
  }
  m.md5_of_message_attributes = Md5OfMessageAttributes(m.message_attributes);
  return m;
}

FakeQueueClient::Stored* FakeQueueClient::FindByHandle(Queue& q, const std::string& handle) {
  if (handle.empty()) return nullptr;
  for (Stored& s : q.messages) {
    if (s.message.receipt_handle == handle) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------- QueueClient

#define DLQ_FAKE_BEGIN(op)                                \
  MutexLock lock(mu_);                                    \
  const std::optional<Injected> injected = BeginCall(op); \
  if (injected && !injected->after_applying) return injected->status
#define DLQ_FAKE_END(result)             \
  if (injected) return injected->status; \
  return result

Result<std::string> FakeQueueClient::GetQueueUrl(const std::string& name, const std::string& owner_account_id) {
  DLQ_FAKE_BEGIN(Operation::kGetQueueUrl);
  if (!owner_account_id.empty() && owner_account_id != account_id_) return QueueDoesNotExist("GetQueueUrl", name);
  std::string url = UrlFor(name);
  if (!queues_.contains(url)) return QueueDoesNotExist("GetQueueUrl", name);
  DLQ_FAKE_END(url);
}

Result<std::vector<std::string>> FakeQueueClient::ListQueues(const std::string& prefix) {
  DLQ_FAKE_BEGIN(Operation::kListQueues);
  std::vector<std::string> urls;
  for (const auto& [url, q] : queues_) {
    if (StartsWith(q.name, prefix)) urls.push_back(url);
  }
  DLQ_FAKE_END(urls);
}

Result<std::map<std::string, std::string>> FakeQueueClient::GetQueueAttributes(const std::string& queue_url,
                                                                               const std::vector<std::string>& names) {
  DLQ_FAKE_BEGIN(Operation::kGetQueueAttributes);
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "GetQueueAttributes"));
  const SystemTime now = clock_.Now();
  int visible = 0, in_flight = 0, delayed = 0;
  for (const Stored& s : q->messages) {
    if (now >= s.visible_at) {
      ++visible;
    } else if (s.receive_count > 0) {
      ++in_flight;
    } else {
      ++delayed;
    }
  }
  std::map<std::string, std::string> all = q->attributes;
  all.try_emplace("VisibilityTimeout", std::to_string(kDefaultVisibilityTimeout));
  all.try_emplace("MessageRetentionPeriod", std::to_string(kDefaultRetention));
  all.try_emplace("MaximumMessageSize", std::to_string(kDefaultMaxMessageSize));
  all.try_emplace("DelaySeconds", "0");
  all.try_emplace("ReceiveMessageWaitTimeSeconds", "0");
  all["QueueArn"] = q->arn;
  all["ApproximateNumberOfMessages"] = std::to_string(visible);
  all["ApproximateNumberOfMessagesNotVisible"] = std::to_string(in_flight);
  all["ApproximateNumberOfMessagesDelayed"] = std::to_string(delayed);
  all["CreatedTimestamp"] = std::to_string(EpochSeconds(q->created));
  all["LastModifiedTimestamp"] = std::to_string(EpochSeconds(q->modified));
  std::map<std::string, std::string> out;
  for (const auto& name : names) {
    if (name == "All") {
      out = all;
      break;
    }
    if (!all.contains(name) && !SettableAttributes().contains(name)) {
      return AwsError(ErrorCode::kInvalidArgument, "InvalidAttributeName", fmt::format("Unknown Attribute {}.", name));
    }
    if (auto it = all.find(name); it != all.end()) out.insert(*it);
  }
  DLQ_FAKE_END(out);
}

Result<std::vector<std::string>> FakeQueueClient::ListDeadLetterSourceQueues(const std::string& queue_url) {
  DLQ_FAKE_BEGIN(Operation::kListDeadLetterSourceQueues);
  DLQ_ASSIGN_OR_RETURN(Queue * dlq, FindQueue(queue_url, "ListDeadLetterSourceQueues"));
  std::vector<std::string> urls;
  for (const auto& [url, q] : queues_) {
    if (q.redrive && q.redrive->target_arn == dlq->arn) urls.push_back(url);
  }
  DLQ_FAKE_END(urls);
}

void FakeQueueClient::SampleReceives(double fraction, uint64_t seed) {
  MutexLock lock(mu_);
  sample_fraction_ = fraction;
  sample_rng_.seed(seed);
}

void FakeQueueClient::RedeliverNextReceived(int n) {
  MutexLock lock(mu_);
  redeliver_next_ = n;
}

Result<std::vector<Message>> FakeQueueClient::ReceiveMessages(const std::string& queue_url,
                                                              const ReceiveOptions& options) {
  DLQ_FAKE_BEGIN(Operation::kReceiveMessages);
  DLQ_RETURN_IF_ERROR(options.Validate());
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "ReceiveMessage"));
  const SystemTime now = clock_.Now();
  const int timeout = options.visibility_timeout.value_or(IntAttribute(*q, "VisibilityTimeout", 30));
  std::set<std::string> blocked_groups;  // FIFO: groups with a message in flight
  if (q->fifo) {
    for (const Stored& s : q->messages) {
      if (s.receive_count > 0 && now < s.visible_at) blocked_groups.insert(s.group_id);
    }
  }
  std::vector<Message> out;
  for (auto it = q->messages.begin(); it != q->messages.end() && static_cast<int>(out.size()) < options.max_messages;) {
    Stored& s = *it;
    const bool drawn =
        sample_fraction_ >= 1.0 || std::uniform_real_distribution<double>(0, 1)(sample_rng_) < sample_fraction_;
    if (now < s.visible_at || (q->fifo && blocked_groups.contains(s.group_id)) || !drawn) {
      if (q->fifo) blocked_groups.insert(s.group_id);  // keep order within the group
      ++it;
      continue;
    }
    if (q->redrive && s.receive_count >= q->redrive->max_receive_count) {
      if (Queue* target = FindQueueByArn(q->redrive->target_arn); target != nullptr && target != q) {
        Stored moved = std::move(s);
        it = q->messages.erase(it);
        moved.message.receipt_handle.clear();
        moved.message.attributes["DeadLetterQueueSourceArn"] = q->arn;
        moved.visible_at = now;
        moved.seq = next_seq_++;
        if (target->fifo) moved.retention_start = now;  // FIFO: the retention clock restarts on the move
        target->messages.push_back(std::move(moved));
        continue;
      }
    }
    ++s.receive_count;
    if (!s.first_receive) s.first_receive = now;
    s.message.receipt_handle =
        fmt::format("AQEB{}-{}-{}", Base64Encode(s.message.message_id).substr(0, 16), s.seq, next_handle_++);
    s.visible_at = now + seconds(timeout);
    if (redeliver_next_ > 0) {
      --redeliver_next_;
      s.visible_at = now;  // the next receive hands it out again
    }
    out.push_back(View(*q, s, options.attribute_names, options.message_attribute_names));
    ++it;  // FIFO: later messages of this group may follow in the same receive, in order
  }
  // Corruption in transit: the body changes after SQS computed its MD5.
  for (Message& m : out) {
    bool flip = false;
    if (auto c = corrupt_ids_.find(m.message_id); c != corrupt_ids_.end() && c->second != 0) {
      if (c->second > 0) --c->second;
      flip = true;
    } else if (corrupt_next_ > 0) {
      --corrupt_next_;
      flip = true;
    }
    if (flip) {
      if (m.body.empty())
        m.body = "x";
      else
        m.body[0] = static_cast<char>(m.body[0] ^ 0x01);
    }
  }
  // Verified as SqsClient verifies.
  DLQ_RETURN_IF_ERROR(VerifyReceived(out, options.corrupt));
  DLQ_FAKE_END(out);
}

Result<BatchResult> FakeQueueClient::DeleteMessageBatch(const std::string& queue_url,
                                                        const std::vector<DeleteEntry>& entries) {
  DLQ_FAKE_BEGIN(Operation::kDeleteMessageBatch);
  std::vector<std::string> ids;
  ids.reserve(entries.size());
  for (const auto& e : entries) ids.push_back(e.id);
  DLQ_RETURN_IF_ERROR(ValidateBatchIds(ids));
  // As moto does (and AWS, by moto's issue 3996): one receipt handle twice
  // in a batch fails the whole call.
  std::set<std::string_view> handles;
  for (const auto& e : entries) {
    if (!handles.insert(e.receipt_handle).second) {
      return Status(ErrorCode::kInvalidArgument, fmt::format("BatchEntryIdsNotDistinct: Id {} repeated.", e.id));
    }
  }
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "DeleteMessageBatch"));
  BatchResult result;
  for (const auto& e : entries) {
    if (fail_delete_entries_ > 0) {
      --fail_delete_entries_;
      result.failed.push_back({e.id, fail_delete_code_, "injected failure", false});
      continue;
    }
    if (q->deleted_handles.contains(e.receipt_handle)) {
      result.successful_ids.push_back(e.id);
      continue;
    }
    auto it = std::find_if(q->messages.begin(), q->messages.end(), [&](const Stored& s) {
      return !e.receipt_handle.empty() && s.message.receipt_handle == e.receipt_handle;
    });
    if (it == q->messages.end()) {
      result.failed.push_back({e.id, "ReceiptHandleIsInvalid",
                               fmt::format("The receipt handle \"{}\" is not valid.", e.receipt_handle), true});
      continue;
    }
    q->deleted_handles.emplace(e.receipt_handle, it->message.message_id);
    q->messages.erase(it);
    ++deleted_count_;
    result.successful_ids.push_back(e.id);
  }
  DLQ_FAKE_END(result);
}

Result<BatchResult> FakeQueueClient::ChangeMessageVisibilityBatch(const std::string& queue_url,
                                                                  const std::vector<VisibilityEntry>& entries) {
  DLQ_FAKE_BEGIN(Operation::kChangeMessageVisibilityBatch);
  std::vector<std::string> ids;
  ids.reserve(entries.size());
  for (const auto& e : entries) ids.push_back(e.id);
  DLQ_RETURN_IF_ERROR(ValidateBatchIds(ids));
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "ChangeMessageVisibilityBatch"));
  const SystemTime now = clock_.Now();
  BatchResult result;
  for (const auto& e : entries) {
    if (fail_visibility_entries_ > 0) {
      --fail_visibility_entries_;
      result.failed.push_back({e.id, fail_visibility_code_, "injected failure", false});
      continue;
    }
    if (e.visibility_timeout_seconds < 0 || e.visibility_timeout_seconds > 43200) {
      result.failed.push_back({e.id, "InvalidParameterValue", "VisibilityTimeout must be 0..43200.", true});
      continue;
    }
    Stored* s = FindByHandle(*q, e.receipt_handle);
    if (s == nullptr) {
      result.failed.push_back({e.id, "ReceiptHandleIsInvalid",
                               fmt::format("The receipt handle \"{}\" is not valid.", e.receipt_handle), true});
      continue;
    }
    if (now >= s->visible_at) {
      result.failed.push_back({e.id, "MessageNotInflight", "The message is not in flight.", true});
      continue;
    }
    s->visible_at = now + seconds(e.visibility_timeout_seconds);
    result.successful_ids.push_back(e.id);
  }
  DLQ_FAKE_END(result);
}

Result<SendBatchResult> FakeQueueClient::SendMessageBatch(const std::string& queue_url,
                                                          const std::vector<SendEntry>& entries) {
  DLQ_FAKE_BEGIN(Operation::kSendMessageBatch);
  std::vector<std::string> ids;
  ids.reserve(entries.size());
  for (const auto& e : entries) ids.push_back(e.id);
  DLQ_RETURN_IF_ERROR(ValidateBatchIds(ids));
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "SendMessageBatch"));
  SendBatchResult result;
  for (const auto& e : entries) {
    if (fail_send_entries_ > 0) {
      --fail_send_entries_;
      result.failed.push_back({e.id, fail_send_code_, "injected failure", false});
      continue;
    }
    Status sendable = CheckSendable(e);
    auto sent = sendable.ok() ? Enqueue(*q, e, clock_.Now(), {}) : Result<SentMessage>(sendable);
    if (!sent.ok()) {
      const auto& aws = sent.status().aws();
      result.failed.push_back({e.id, aws ? aws->error_code : "InternalError", sent.status().message(), true});
      continue;
    }
    result.successful_ids.push_back(e.id);
    result.sent.push_back(std::move(sent).value());
  }
  DLQ_FAKE_END(result);
}

Result<SentMessage> FakeQueueClient::SendMessage(const std::string& queue_url, const SendEntry& entry) {
  DLQ_FAKE_BEGIN(Operation::kSendMessage);
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "SendMessage"));
  DLQ_RETURN_IF_ERROR(CheckSendable(entry));
  DLQ_ASSIGN_OR_RETURN(SentMessage sent, Enqueue(*q, entry, clock_.Now(), {}));
  DLQ_FAKE_END(sent);
}

Result<std::string> FakeQueueClient::CreateQueue(const std::string& name,
                                                 const std::map<std::string, std::string>& attributes) {
  DLQ_FAKE_BEGIN(Operation::kCreateQueue);
  if (!ValidQueueName(name)) {
    return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue",
                    fmt::format("CreateQueue {}: invalid queue name", name));
  }
  const bool fifo = EndsWith(name, ".fifo");
  auto fifo_attr = attributes.find("FifoQueue");
  if (fifo != (fifo_attr != attributes.end() && fifo_attr->second == "true")) {
    return AwsError(ErrorCode::kInvalidArgument, "InvalidParameterValue",
                    "CreateQueue: a FIFO queue needs the .fifo suffix and FifoQueue=true");
  }
  const std::string url = UrlFor(name);
  if (auto it = queues_.find(url); it != queues_.end()) {
    for (const auto& [k, v] : attributes) {
      auto existing = it->second.attributes.find(k);
      if (existing == it->second.attributes.end() || existing->second != v) {
        return AwsError(ErrorCode::kAlreadyExists, "QueueAlreadyExists",
                        fmt::format("CreateQueue {}: a queue with this name and other attributes exists", name));
      }
    }
    DLQ_FAKE_END(url);
  }
  Queue q;
  q.name = name;
  q.url = url;
  q.arn = fmt::format("arn:aws:sqs:{}:{}:{}", region_, account_id_, name);
  q.fifo = fifo;
  q.created = q.modified = clock_.Now();
  DLQ_RETURN_IF_ERROR(ApplyAttributes(q, attributes));
  queues_.emplace(url, std::move(q));
  DLQ_FAKE_END(url);
}

Status FakeQueueClient::DeleteQueue(const std::string& queue_url) {
  DLQ_FAKE_BEGIN(Operation::kDeleteQueue);
  if (queues_.erase(queue_url) == 0) return QueueDoesNotExist("DeleteQueue", queue_url);
  DLQ_FAKE_END(Status::Ok());
}

Status FakeQueueClient::SetQueueAttributes(const std::string& queue_url,
                                           const std::map<std::string, std::string>& attributes) {
  DLQ_FAKE_BEGIN(Operation::kSetQueueAttributes);
  DLQ_ASSIGN_OR_RETURN(Queue * q, FindQueue(queue_url, "SetQueueAttributes"));
  DLQ_RETURN_IF_ERROR(ApplyAttributes(*q, attributes));
  DLQ_FAKE_END(Status::Ok());
}

#undef DLQ_FAKE_BEGIN
#undef DLQ_FAKE_END

}  // namespace dlq
