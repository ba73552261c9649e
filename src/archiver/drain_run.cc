#include "archiver/drain_run.h"

#include <algorithm>
#include <utility>

#include "common/log.h"

namespace dlq {

DrainRun::DrainRun(QueueClient& sqs_client, const QueueInfo& queue_info, const DrainOptions& drain_options,
                   BatchPipeline::MakeBuilder make)
    : sqs(sqs_client),
      queue(queue_info),
      options(drain_options),
      ledger(drain_options.receivers),
      pipeline(std::move(make), drain_options.batch.max_messages, drain_options.visibility_timeout),
      selection({.selection = drain_options.selection,
                 .dry_run = drain_options.dry_run,
                 .keep = drain_options.keep,
                 .fifo = queue_info.fifo,
                 .retention = queue_info.retention,
                 .visibility_timeout = drain_options.visibility_timeout,
                 .corrupt_receipts_to_give_up = drain_options.corrupt_receipts_to_give_up,
                 .max_examined_held = drain_options.max_examined_held,
                 .prior_own_receives = drain_options.prior_own_receives}),
      fifo(queue_info.fifo) {}

void DrainRun::RequestStop() {
  stop_requested = true;
  // stop before abort_receives: a receiver whose receive comes back
  // cancelled must find the run stopping, or it could hand a FIFO turn to a
  // receiver that starts a new receive (the stopping thread may be
  // descheduled between the two stores).
  stop = true;
  if (!options.finish_receives_on_stop) abort_receives = true;
  cv.NotifyAll();
}

void DrainRun::Fail(const Status& status) {
  {
    MutexLock lock(mu);
    if (first_error.ok()) first_error = status;
  }
  stop = true;  // before abort_receives, as in RequestStop
  abort_receives = true;
  cv.NotifyAll();
}

void DrainRun::MarkIncomplete(std::string reason) {
  {
    MutexLock lock(mu);
    if (incomplete_reason.empty()) incomplete_reason = std::move(reason);
  }
  stop = true;
  cv.NotifyAll();
}

bool DrainRun::Aborting() const {
  if (stop_requested) return true;
  MutexLock lock(mu);
  return !first_error.ok();
}

void DrainRun::NoteFifoLeave() {
  {
    MutexLock lock(mu);
    fifo.Left();
  }
  cv.NotifyAll();
}

size_t DrainRun::PipelineHeldLocked() const {
  return pipeline.held() + static_cast<size_t>(std::max<int64_t>(0, in_hand.load()));
}

std::optional<QueueDepth> DrainRun::ReadCounts() {
  auto depth = ReadQueueDepth(sqs, queue.url, queue.name);
  if (!depth.ok()) {
    Log().Log(LogLevel::kWarn, "archive.depth_check_failed",
              {{"queue", queue.name}, {"error", depth.status().ToString()}});
    return std::nullopt;
  }
  counters.approximate_remaining = depth->visible;
  counters.approximate_in_flight = depth->in_flight;
  return *depth;
}

}  // namespace dlq
