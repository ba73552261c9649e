#include "monitor/daemon_view.h"

#include <algorithm>
#include <utility>

#include "monitor/daemon_internal.h"
#include "monitor/daemon_json.h"

namespace dlq {

std::vector<QueueStatus> DaemonView::Queues() const {
  std::vector<QueueStatus> out;
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    for (const auto& [url, q] : g->queues) {
      MutexLock l(q->mu);
      QueueStatus s;
      s.group = q->id.group;
      s.queue = q->id.dq;
      s.visible = q->seen.visible;
      s.not_visible = q->seen.not_visible;
      s.delayed = q->seen.delayed;
      s.nearest_expiry = q->seen.nearest_expiry;
      s.expiry_unknown = q->seen.expiry_unknown;
      s.ledger_messages = q->seen.ledger.size();
      s.learning_passes = q->seen.learning_passes;
      s.oldest_sent = q->seen.oldest_sent;
      s.last_empty = q->seen.last_empty;
      s.expiry_threshold_s = q->id.expiry_threshold;
      if (q->alarms.expiry) s.alarms.emplace_back(q->alarms.expiry->spec(), q->alarms.expiry->state());
      if (q->alarms.depth) s.alarms.emplace_back(q->alarms.depth->spec(), q->alarms.depth->state());
      static_cast<ArchiveTotals&>(s) = q->archive;
      s.running = q->archive.queued;
      s.failing = q->archive.consecutive_failures > 0;
      s.collect_error = q->seen.collect_error;
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::optional<std::vector<QueueSample>> DaemonView::History(const std::string& queue) const {
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    for (const auto& [url, q] : g->queues) {
      MutexLock l(q->mu);
      if (q->id.dq.name == queue) return q->seen.history.Samples();
    }
  }
  return std::nullopt;
}

std::optional<QueueStatus> DaemonView::Queue(const std::string& queue) const {
  for (QueueStatus& s : Queues()) {
    if (s.queue.name == queue) return std::move(s);
  }
  return std::nullopt;
}

std::optional<QueueArchiveAccess> DaemonView::ArchiveAccess(const std::string& queue) const {
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    for (const auto& [url, q] : g->queues) {
      MutexLock l(q->mu);
      if (q->id.dq.name != queue) continue;
      QueueArchiveAccess a{.group = g->config.name,
                           .queue = q->id.dq,
                           .clients = q->id.clients,
                           .destination = g->config.destination,
                           .key_template = g->config.key_template};
      return a;
    }
  }
  return std::nullopt;
}

std::optional<DestinationStatus> DaemonView::Destination(const std::string& group) const {
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    if (g->config.name == group) return g->destination;
  }
  return std::nullopt;
}

std::string DaemonView::QueuesJson(const QueuesJsonOptions& options) const {
  QueuesJsonWriter writer(options.history);
  std::vector<QueuesJsonGroup> groups;
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    for (const auto& [url, q] : g->queues) {
      MutexLock l(q->mu);
      if (!options.queue.empty() && q->id.dq.name != options.queue) continue;
      writer.AddQueue(q->id, q->seen, q->alarms, q->archive);
    }
    groups.push_back({.name = g->config.name,
                      .error = g->error,
                      .queues = g->queues.size(),
                      .other_shards = g->other_shards,
                      .empty = g->empty,
                      .destination_uri = g->config.destination,
                      .destination = g->destination});
  }
  return writer.Finish(groups, watched_.shard);
}

Overview DaemonView::BuildOverview() const {
  Overview out;
  MutexLock lock(watched_.mu);
  for (const auto& g : watched_.groups) {
    for (const auto& [url, q] : g->queues) {
      MutexLock l(q->mu);
      out.queues.push_back(OverviewRow(q->id, q->seen, q->alarms, q->archive));
    }
  }
  for (const auto& g : watched_.groups) {
    OverviewGroup& o = out.groups.emplace_back();
    o.name = g->config.name;
    o.error = !g->error.empty() || !g->destination.ok;
    o.problem = !g->error.empty() ? g->error : g->destination.error;
    if (!o.error && g->empty) o.problem = "the group's selectors match no queue";
  }
  return out;
}

std::string DaemonView::OverviewJson() const {
  return dlq::OverviewJson(BuildOverview());
}

}  // namespace dlq
