#include "dashboard/replay_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "common/time_util.h"

namespace dlq {

struct ReplayJobs::Job {
  std::string id;
  ReplayJobSpec spec;
  SystemTime started_at;
  std::atomic<bool> stop{false};
  std::thread thread;  // joined by whoever takes the job out of jobs_

  mutable Mutex mu;
  ReplayProgress progress DLQ_GUARDED_BY(mu);
  bool done DLQ_GUARDED_BY(mu) = false;
  std::optional<SystemTime> finished_at DLQ_GUARDED_BY(mu);
  DashboardReplayResult result DLQ_GUARDED_BY(mu);
};

ReplayJobs::ReplayJobs(Clock& clock, size_t keep) : clock_(clock), keep_(keep < 1 ? 1 : keep) {}

ReplayJobs::~ReplayJobs() {
  Shutdown();
}

Result<std::string> ReplayJobs::Start(ReplayJobSpec spec, ReplayJobWork work) {
  std::shared_ptr<Job> dropped;
  std::string id;
  {
    MutexLock lock(mu_);
    if (closed_) return Unavailable("the dashboard is shutting down: no new replay starts");
    if (jobs_.size() >= keep_) {
      auto oldest_done = std::find_if(jobs_.begin(), jobs_.end(), [](const std::shared_ptr<Job>& j) {
        MutexLock l(j->mu);
        return j->done;
      });
      if (oldest_done == jobs_.end()) {
        return Unavailable(
            fmt::format("{} replays are running, the most this dashboard keeps; stop one or wait", keep_));
      }
      dropped = std::move(*oldest_done);
      jobs_.erase(oldest_done);
    }
    auto job = std::make_shared<Job>();
    job->started_at = clock_.Now();
    job->id = fmt::format("{}-{}", FormatAmzDate(job->started_at), next_++);
    job->spec = std::move(spec);
    // The thread holds the job (its stop flag and state) while it runs; the
    // registry, which joins every thread before it goes, holds the clock.
    job->thread = std::thread([job, clock = &clock_, work = std::move(work)] {
      Job* j = job.get();
      ReplayJobControl control;
      control.id = j->id;
      control.stop = &j->stop;
      control.report = [j](const ReplayProgress& p) {
        MutexLock l(j->mu);
        j->progress = p;
      };
      DashboardReplayResult result;
      try {
        result = work(control);
      } catch (const std::exception& e) {
        result.exit_code = 1;
        result.errors = fmt::format("the replay failed: {}", e.what());
      }
      const SystemTime now = clock->Now();
      MutexLock l(j->mu);
      j->result = std::move(result);
      j->finished_at = now;
      j->done = true;
    });
    id = job->id;
    jobs_.push_back(std::move(job));
  }
  if (dropped && dropped->thread.joinable()) dropped->thread.join();
  return id;
}

ReplayJobSnapshot ReplayJobs::Snap(const Job& job) {
  ReplayJobSnapshot s;
  s.id = job.id;
  s.spec = job.spec;
  s.started_at = job.started_at;
  s.stop_requested = job.stop.load();
  MutexLock l(job.mu);
  s.done = job.done;
  s.finished_at = job.finished_at;
  s.result = job.result;
  s.progress = job.progress;
  return s;
}

std::optional<ReplayJobSnapshot> ReplayJobs::Get(const std::string& id) const {
  MutexLock lock(mu_);
  for (const auto& j : jobs_) {
    if (j->id == id) return Snap(*j);
  }
  return std::nullopt;
}

std::vector<ReplayJobSnapshot> ReplayJobs::List() const {
  MutexLock lock(mu_);
  std::vector<ReplayJobSnapshot> out;
  out.reserve(jobs_.size());
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) out.push_back(Snap(**it));
  return out;
}

Status ReplayJobs::Stop(const std::string& id) {
  MutexLock lock(mu_);
  for (const auto& j : jobs_) {
    if (j->id != id) continue;
    MutexLock l(j->mu);
    if (j->done) return FailedPrecondition(fmt::format("replay {} has already finished", id));
    j->stop.store(true);
    return Status::Ok();
  }
  return NotFound(fmt::format("no replay {} (the dashboard keeps the last {})", id, keep_));
}

void ReplayJobs::Shutdown() {
  std::vector<std::shared_ptr<Job>> all;
  {
    MutexLock lock(mu_);
    closed_ = true;
    all.swap(jobs_);
  }
  for (const auto& j : all) j->stop.store(true);
  for (const auto& j : all) {
    if (j->thread.joinable()) j->thread.join();
  }
}

}  // namespace dlq
