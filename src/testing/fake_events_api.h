// An EventsApi for tests: every entry recorded, calls counted, with failures
// on command ("the next 2 entries fail with InternalFailure", "deny
// PutEvents"). An entry that is not failed is put and given the event id
// "fake-event-<n>". Thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "events/events_api.h"

namespace dlq {

class FakeEventsApi final : public EventsApi {
 public:
  // kInvalidArgument as AwsEventsApi (more than 10 entries, an entry without
  // source, detail-type or detail) before anything is recorded.
  Result<std::vector<PutEventsEntryResult>> PutEvents(const std::vector<PutEventsEntry>& entries) override;

  // The next `n` entries (across calls) fail on their own with `error_code`;
  // the call itself succeeds, as EventBridge's FailedEntryCount does.
  void FailEntries(int n, std::string error_code = "InternalFailure",
                   std::string error_message = "Failed to put the event (fake)");
  // Every call needing IAM action `action` ("PutEvents") fails with
  // kPermissionDenied (AccessDeniedException); "" stops denying.
  void Deny(const std::string& action);

  int calls(const std::string& action) const;
  // Every entry of every valid call, in order: failed and denied ones included.
  std::vector<PutEventsEntry> received() const;
  // The entries that were put (the events a bus got), in order.
  std::vector<PutEventsEntry> put() const;

 private:
  mutable Mutex mu_;
  int fail_entries_ DLQ_GUARDED_BY(mu_) = 0;
  std::string fail_code_ DLQ_GUARDED_BY(mu_);
  std::string fail_message_ DLQ_GUARDED_BY(mu_);
  std::string denied_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ DLQ_GUARDED_BY(mu_);
  std::vector<PutEventsEntry> received_ DLQ_GUARDED_BY(mu_);
  std::vector<PutEventsEntry> put_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
