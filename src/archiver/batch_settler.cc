#include "archiver/batch_settler.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "archive/key_layout.h"
#include "common/log.h"
#include "common/strings.h"
#include "sqs/limits.h"

namespace dlq {
namespace {

using sqs::kMaxBatchEntries;
// A reply to a batch call names entries by the index we gave them.
std::optional<size_t> EntryIndex(const std::string& id, size_t size) {
  auto v = ParseInt64(id);
  if (!v || *v < 0 || static_cast<uint64_t>(*v) >= size) return std::nullopt;
  return static_cast<size_t>(*v);
}

bool IsReceiptHandleError(const BatchEntryError& e) {
  return e.code == "ReceiptHandleIsInvalid" || e.code == "InvalidReceiptHandle" ||
         e.code == "AWS.SimpleQueueService.ReceiptHandleIsInvalid" ||
         (e.code == "InvalidParameterValue" && e.message.find("eceipt") != std::string::npos);
}

// `held` in the order to delete: each copy (HeldMessage::copy) right after
// its message, so both handles most often go in one call and its reply says
// at once which one deleted it. A receipt handle comes once: a copy may carry
// the handle its message already has (moto gives two receives that race the
// same one), a batch naming a handle twice fails whole
// (BatchEntryIdsNotDistinct), and one delete of it does for both.
std::vector<const HeldMessage*> DeleteOrder(const std::vector<HeldMessage>& held) {
  std::vector<const HeldMessage*> order;
  order.reserve(held.size());
  std::unordered_map<std::string_view, std::vector<const HeldMessage*>> copies;
  for (const HeldMessage& h : held) {
    if (h.copy) copies[h.message_id].push_back(&h);
  }
  for (const HeldMessage& h : held) {
    if (h.copy) continue;
    order.push_back(&h);
    if (auto it = copies.find(h.message_id); it != copies.end()) {
      order.insert(order.end(), it->second.begin(), it->second.end());
      copies.erase(it);
    }
  }
  for (const HeldMessage& h : held) {  // copies of messages not in `held`, in their order
    if (h.copy && copies.contains(h.message_id)) order.push_back(&h);
  }
  std::unordered_set<std::string_view> handles;
  std::erase_if(order, [&](const HeldMessage* h) { return !handles.insert(h->receipt_handle).second; });
  return order;
}

}  // namespace

BatchSettler::BatchSettler(QueueClient& sqs, ObjectStore& store, Clock& clock, const QueueInfo& queue,
                           const DrainOptions& options, DrainCounters& counters, VisibilityLedger& ledger,
                           CopyLedger& copies, std::function<void(const Status&)> fail)
    : sqs_(sqs),
      store_(store),
      clock_(clock),
      queue_(queue),
      options_(options),
      counters_(counters),
      ledger_(ledger),
      copies_(copies),
      fail_(std::move(fail)) {}

Status BatchSettler::Upload(const SealedBatch& sb) const {
  std::string where = fmt::format("{}/{}", store_.Describe(), sb.key);
  // The template was checked when parsed; a queue, region or account name
  // from a non-AWS endpoint could still render a key naming another place.
  DLQ_RETURN_IF_ERROR(ValidateKeyPath(sb.key, "object key").WithContext(fmt::format("upload {} refused", where)));
  Status st = store_.Put(sb.key, sb.gz, options_.put);
  if (st.ok()) return st;
  if (st.code() == ErrorCode::kAlreadyExists) {
    // A batch id collision is astronomically unlikely; never overwrite.
    return st.WithContext(fmt::format("upload {} refused to overwrite", where));
  }
  std::string code =
      st.aws() && !st.aws()->error_code.empty() ? st.aws()->error_code : std::string(ErrorCodeName(st.code()));
  const PutFailureAdvice advice = store_.AdvisePutFailure(st);
  Status out(st.code(),
             fmt::format("{} failed with {} on {}: {} ({})", advice.operation, code, where, advice.hint, st.message()));
  return st.aws() ? out.WithAws(*st.aws()) : out;
}

void BatchSettler::Delete(const std::vector<HeldMessage>& unordered) {
  const std::vector<const HeldMessage*> held = DeleteOrder(unordered);
  size_t chunks = (held.size() + kMaxBatchEntries - 1) / kMaxBatchEntries;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::mt19937_64 rng(std::random_device{}());
    for (size_t c = next++; c < chunks; c = next++) {
      size_t begin = c * kMaxBatchEntries;
      size_t end = std::min(held.size(), begin + kMaxBatchEntries);
      std::vector<DeleteEntry> pending;
      for (size_t i = begin; i < end; ++i) pending.push_back({std::to_string(i - begin), held[i]->receipt_handle});
      auto message_id = [&](const std::string& id) {
        auto i = EntryIndex(id, end - begin);
        return i ? held[begin + *i]->message_id : std::string("?");
      };
      for (int attempt = 0; attempt < options_.delete_attempts && !pending.empty(); ++attempt) {
        if (attempt > 0) clock_.SleepFor(BackoffDelay(kDrainLocalRetry, attempt, rng));
        auto r = sqs_.DeleteMessageBatch(queue_.url, pending);
        if (!r.ok()) {
          Log().Log(LogLevel::kWarn, "archive.delete_retry",
                    {{"queue", queue_.name}, {"attempt", attempt + 1}, {"error", r.status().ToString()}});
          if (!r.status().retryable() && r.status().code() != ErrorCode::kInternal) {
            // Denied, gone or refused: every later batch would be archived and
            // left behind too, and archived again once visible. Stop here.
            // Only a denial is a matter for the role's policy.
            const ErrorCode code = r.status().code();
            const bool denied = code == ErrorCode::kPermissionDenied || code == ErrorCode::kUnauthenticated;
            fail_(Status(code, fmt::format("sqs:DeleteMessage failed on {} ({}): the archived messages stay in the DLQ "
                                           "and will be archived again{}",
                                           queue_.name, r.status().message(),
                                           denied ? "; check the role's policy for sqs:DeleteMessage" : "")));
            break;
          }
          continue;
        }
        for (const std::string& id : r->successful_ids) {
          if (std::any_of(pending.begin(), pending.end(), [&](const DeleteEntry& d) { return d.id == id; })) {
            copies_.Deleted(message_id(id));
          }
        }
        std::vector<DeleteEntry> retry;
        for (const BatchEntryError& e : r->failed) {
          auto it = std::find_if(pending.begin(), pending.end(), [&](const DeleteEntry& d) { return d.id == e.id; });
          if (it == pending.end()) continue;
          if (IsReceiptHandleError(e)) {
            // The message became visible again before we deleted it: unless
            // another of its handles deletes it, it is still in the DLQ and
            // will be archived again (a duplicate).
            if (copies_.NotDeleted(message_id(e.id), /*expired=*/true)) {
              Log().Log(LogLevel::kWarn, "archive.duplicate",
                        {{"queue", queue_.name}, {"message_id", message_id(e.id)}, {"reason", e.code}});
            }
          } else {
            retry.push_back(*it);
          }
        }
        pending = std::move(retry);
      }
      if (!pending.empty()) {
        for (const DeleteEntry& d : pending) {
          if (!copies_.NotDeleted(message_id(d.id), /*expired=*/false)) continue;
          Log().Log(LogLevel::kWarn, "archive.delete_failed",
                    {{"queue", queue_.name},
                     {"message_id", message_id(d.id)},
                     {"note", "archived; stays in the DLQ and will be archived again"}});
        }
      }
    }
  };
  int n = static_cast<int>(std::min<size_t>(chunks, static_cast<size_t>(options_.deleters)));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

void BatchSettler::Release(const std::vector<HeldMessage>& held, bool count_released) {
  for (size_t begin = 0; begin < held.size(); begin += kMaxBatchEntries) {
    size_t end = std::min(held.size(), begin + kMaxBatchEntries);
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < end; ++i) entries.push_back({std::to_string(i - begin), held[i].receipt_handle, 0});
    auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
    if (!r.ok()) {
      // They become visible when their visibility timeout runs out anyway.
      Log().Log(LogLevel::kWarn, "archive.release_failed",
                {{"queue", queue_.name},
                 {"messages", static_cast<int64_t>(entries.size())},
                 {"error", r.status().ToString()}});
    }
    if (count_released) {
      counters_.released += static_cast<uint64_t>(std::count_if(held.begin() + static_cast<std::ptrdiff_t>(begin),
                                                                held.begin() + static_cast<std::ptrdiff_t>(end),
                                                                [](const HeldMessage& h) { return !h.copy; }));
    }
  }
}

std::vector<VisibilityExtension> BatchSettler::Extend(const std::vector<VisibilityDue>& due) {
  const auto timeout = options_.visibility_timeout;
  std::vector<VisibilityExtension> extended;
  for (size_t begin = 0; begin < due.size(); begin += kMaxBatchEntries) {
    size_t end = std::min(due.size(), begin + kMaxBatchEntries);
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < end; ++i) {
      entries.push_back({std::to_string(i - begin), due[i].receipt_handle, due[i].seconds});
    }
    // SQS counts the new timeout from when it handles the call: from
    // the call's start, our deadline is never later than SQS's.
    const auto sent = clock_.SteadyNow();
    auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
    // Applied or not (a lost reply), at most until a timeout after its end.
    ledger_.VisibilityChanged(clock_.SteadyNow(), timeout);
    if (!r.ok()) {
      Log().Log(LogLevel::kWarn, "archive.heartbeat_failed",
                {{"queue", queue_.name}, {"error", r.status().ToString()}});
      continue;
    }
    counters_.visibility_extensions += r->successful_ids.size();
    for (const std::string& id : r->successful_ids) {
      if (auto i = EntryIndex(id, end - begin)) {
        extended.emplace_back(begin + *i, sent + std::chrono::seconds(due[begin + *i].seconds));
      }
    }
  }
  return extended;
}

}  // namespace dlq
