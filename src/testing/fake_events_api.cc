#include "testing/fake_events_api.h"

#include <fmt/format.h>

#include "events/events_codec.h"

namespace dlq {

void FakeEventsApi::FailEntries(int n, std::string error_code, std::string error_message) {
  MutexLock lock(mu_);
  fail_entries_ = n;
  fail_code_ = std::move(error_code);
  fail_message_ = std::move(error_message);
}

void FakeEventsApi::Deny(const std::string& action) {
  MutexLock lock(mu_);
  denied_ = action;
}

int FakeEventsApi::calls(const std::string& action) const {
  MutexLock lock(mu_);
  auto it = calls_.find(action);
  return it == calls_.end() ? 0 : it->second;
}

std::vector<PutEventsEntry> FakeEventsApi::received() const {
  MutexLock lock(mu_);
  return received_;
}

std::vector<PutEventsEntry> FakeEventsApi::put() const {
  MutexLock lock(mu_);
  return put_;
}

Result<std::vector<PutEventsEntryResult>> FakeEventsApi::PutEvents(const std::vector<PutEventsEntry>& entries) {
  const std::string buses = events::BusesOf(entries);
  DLQ_RETURN_IF_ERROR(events::ValidateEntries(entries, buses));
  MutexLock lock(mu_);
  ++calls_["PutEvents"];
  received_.insert(received_.end(), entries.begin(), entries.end());
  if (!denied_.empty() && denied_ == "PutEvents") {
    AwsErrorInfo info{"AccessDeniedException", 400, "fake-request-id"};
    return PermissionDenied(
               fmt::format("PutEvents {}: AccessDeniedException: User: arn:aws:iam::123456789012:user/test "
                           "is not authorized to perform: events:PutEvents (needs events:PutEvents on {})",
                           buses, buses))
        .WithAws(std::move(info));
  }
  std::vector<PutEventsEntryResult> results;
  for (const PutEventsEntry& e : entries) {
    PutEventsEntryResult r;
    if (fail_entries_ > 0) {
      --fail_entries_;
      r.error_code = fail_code_;
      r.error_message = fail_message_;
    } else {
      put_.push_back(e);
      r.event_id = fmt::format("fake-event-{}", put_.size());
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace dlq
