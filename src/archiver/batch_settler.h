// BatchSettler: the drainer's calls that settle what it holds. Upload: the
// create-only Put of a sealed batch. Delete (only once its object is
// stored), Release (visibility 0) and Extend: the SQS batch calls on receipt
// handles, 10 entries a call, every entry of a reply accounted for.
//
// Counts into DrainCounters as it goes (deletes per distinct message,
// through the CopyLedger). Thread-safe: no state of its own; Delete runs up
// to `deleters` calls of one batch side by side. sqs, store, clock,
// counters, ledger and copies must outlive it.
#pragma once

#include <functional>
#include <vector>

#include "archive/batch_builder.h"
#include "archiver/copy_ledger.h"
#include "archiver/drain_options.h"
#include "archiver/drain_stats.h"
#include "archiver/held_batch.h"
#include "archiver/visibility_ledger.h"
#include "common/clock.h"
#include "common/status.h"
#include "s3/object_store.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

class BatchSettler {
 public:
  // Uses options.put, visibility_timeout, delete_attempts and deleters.
  // `fail` is told at once of a delete error that should end the run
  // (denied, queue gone), while the batch's other calls go on.
  BatchSettler(QueueClient& sqs, ObjectStore& store, Clock& clock, const QueueInfo& queue, const DrainOptions& options,
               DrainCounters& counters, VisibilityLedger& ledger, CopyLedger& copies,
               std::function<void(const Status&)> fail);

  // The error says what failed where (and never overwrites an object).
  Status Upload(const SealedBatch& batch) const;
  // Deletes `held`, retrying failed entries up to delete_attempts. A
  // message counts deleted once whichever of its handles deleted it; one
  // whose every handle was stale is a duplicate (archived again later), one
  // that still fails stays in the DLQ (delete_failures).
  void Delete(const std::vector<HeldMessage>& held);
  // Makes `held` visible again; count_released: they were meant to be
  // archived (stats.released, copies not counted), not skipped by choice.
  void Release(const std::vector<HeldMessage>& held, bool count_released = true);
  // Extends each due entry; returns those SQS applied.
  std::vector<VisibilityExtension> Extend(const std::vector<VisibilityDue>& due);

 private:
  QueueClient& sqs_;
  ObjectStore& store_;
  Clock& clock_;
  const QueueInfo& queue_;
  const DrainOptions& options_;
  DrainCounters& counters_;
  VisibilityLedger& ledger_;
  CopyLedger& copies_;
  const std::function<void(const Status&)> fail_;
};

}  // namespace dlq
