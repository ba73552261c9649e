// DrainOptions: how a QueueDrainer (archiver/drainer.h) runs, with the
// defaults the CLI, the daemon and the Lambda runtime start from. A value
// type; Validate() before a run.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "archive/batch_builder.h"
#include "archive/key_layout.h"
#include "archiver/selection_pass.h"
#include "common/status.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct DrainOptions {
  Selection selection;
  uint64_t max_messages = 0;  // 0: no limit
  BatchLimits batch = DefaultBatchLimits();
  KeyTemplate key_template = KeyTemplate::Default();
  std::string prefix = std::string(kDefaultKeyPrefix);
  PutOptions put = DefaultPutOptions();
  // Visibility timeout for received messages; the heartbeat extends it.
  std::chrono::seconds visibility_timeout{120};
  bool keep = false;              // archive without deleting
  bool dry_run = false;           // receive, select and count; upload and delete nothing
  int receivers = 4;              // concurrent ReceiveMessage loops, at most
  int deleters = 4;               // concurrent DeleteMessageBatch calls
  int max_batches_in_flight = 2;  // sealed batches waiting for or in upload
  int wait_time_seconds = 2;      // long poll per receive
  // Standard queues: receive with only as many of `receivers` as raise the
  // rate (ReceiverGovernor: 2, then doubling while it pays). Off: all of
  // them, always. FIFO queues take turns instead (see above).
  bool adaptive_receivers = true;
  // Consecutive receives without progress before checking depth (an empty
  // long poll also checks at once, without counting towards giving up).
  int empty_receives_to_drain = 3;
  int depth_checks_before_incomplete = 20;  // depth checks that still see messages before giving up
  int corrupt_receipts_to_give_up = 3;      // MD5 failures of one message before it is set aside
  // Messages examined but not taken, held invisible (with heartbeat) so the
  // pass reaches the rest; beyond this they are released early and the pass
  // may end incomplete.
  size_t max_examined_held = 20000;
  int delete_attempts = 4;  // per failed DeleteMessageBatch entry
  // On RequestStop, let receives in flight return and release what they
  // bring, instead of abandoning them (faster, but SQS then keeps those
  // messages invisible for visibility_timeout). The Lambda runtime sets it:
  // its deadline margin covers a long poll.
  bool finish_receives_on_stop = false;
  std::chrono::milliseconds heartbeat_interval{500};
  // Receives of a message by dlq-archive before this run (the daemon's
  // arrival ledger); each record's own_receive_count adds this run's
  // receives to it. Unset: this run's only. Called under the drainer's lock.
  std::function<int(const std::string& message_id)> prior_own_receives;

  static BatchLimits DefaultBatchLimits();
  static PutOptions DefaultPutOptions();
  Status Validate() const;
};

// Local retries of receives and deletes (after AwsClient's own retries):
// full jitter, cap 100 ms doubling to 5 s.
inline const RetryOptions kDrainLocalRetry{
    .max_attempts = 6, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(5000)};

}  // namespace dlq
