// Dashboard: the web UI and JSON API that `dlq-archive run` serves at / on
// its listener (doc/dashboard.md). Reads come from the Daemon (status, the
// per-queue sample history, alarm history) and from each queue's archive
// through the query engine (search, message detail, failure groups by
// fingerprint, recent objects), with the causes the archive's `_causes/`
// sidecar keeps on the failure groups and the message detail (read only; a
// sidecar that cannot be read is a note in the answer, never an error). Two actions, archive now and replay to
// source, exist only when a write token is configured; who may read content
// and act, and how refusals are answered, counted and logged: access.h. Each
// action is logged (dashboard_action, with the client address, never the
// token). Over HTTP, the token is checked from the request's head, before
// its body is read (HttpServer::CheckHeads). A replay that sends runs as a job
// (replay_jobs.h): POST /api/replay answers 202 with its id at once, and
// /api/replays/{id} says how far it got.
//
// Thread-safety: Handle may be called from many threads at once (the HTTP
// pool). The Daemon and the Clock must outlive the Dashboard; its destructor
// stops the replays still running and waits for them (each finishes the
// batch it has in flight).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "dashboard/access.h"
#include "dashboard/replay_jobs.h"
#include "monitor/daemon.h"
#include "query/fingerprint.h"
#include "replay/audit.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace dlq {

struct ScanOptions;
struct ReplayRequest;

// Which archived messages of one queue a dashboard replay takes: `ids`, or
// every message of the failure group `fingerprint` (as grouped with
// `fingerprint_options`). A dry run sends nothing and says what would go where.
// The messages go to their source queues, or with `to_origin` back where each
// came from (`replay --to-origin`, doc/origins.md; `function` as its
// `--function`).
struct DashboardReplaySelection {
  std::vector<std::string> ids;
  std::string fingerprint;
  FingerprintOptions fingerprint_options;
  bool dry_run = false;
  bool to_origin = false;
  std::string function;  // to_origin: the function of messages that do not name theirs
};
// Replays the selected archived messages of `access`'s queue to their source
// queues (or origins), writing the same audit record as `dlq-archive replay`; `actor`
// names who asked (for the audit record's caller). Stops (exit 130) soon
// after *control.stop is set; reports a guarded replay's status through
// control.report when it is set.
using DashboardReplayFn =
    std::function<DashboardReplayResult(const QueueArchiveAccess& access, const DashboardReplaySelection& what,
                                        const std::string& actor, const ReplayJobControl& control)>;

// Requests that read the archive (search, message detail, failure groups)
// are bounded: each scan ends at scan_deadline, or as soon as the request's
// `cancelled` flag is set (client gone, server stopping), and then answers
// what it found with "complete": false, "stopped": "deadline"|"cancelled",
// "objects_scanned" and "objects_total"; one object may take 1/8 of
// scan_deadline, then the rest of it is skipped and its key listed in
// "cut_short"; each may reserve request_memory
// (1/8 of it for de-duplication, the rest the scan's memory budget); at most
// max_concurrent_scans run at once, and a request beyond that gets 503 with
// Retry-After. With the defaults the scans reserve at most 128 MiB on top of
// the daemon's ~26 MiB, and 64 MiB reads ordinary archive objects 16 at a
// time.
struct DashboardOptions {
  std::string write_token;  // empty: read-only (no actions)
  // Required (or the write token) on every route that returns message
  // content: search, message detail, failure groups (they carry examples),
  // archive object listings. Empty: those routes are open. The overview,
  // queue counts and history, /metrics and the probes never need it.
  std::string read_token;
  DashboardReplayFn replay;                // required for the replay action when write_token is set
  std::chrono::seconds poll_interval{60};  // how often the page refreshes (the collection interval)
  size_t max_failure_groups = 1000;        // stats groups kept per request
  FingerprintOptions fingerprint;          // how failure groups are told apart (dashboard.fingerprint_fields)
  std::chrono::milliseconds scan_deadline{10000};
  size_t request_memory = size_t{64} << 20;  // at least 8 MiB
  int max_concurrent_scans = 2;              // at least 1
  size_t max_replay_jobs = 50;               // replays kept (running or finished) for /api/replays
  metrics::Registry* registry = nullptr;     // where refusals are counted; null: not counted
};

class Dashboard {
 public:
  Dashboard(Daemon& daemon, Clock& clock, DashboardOptions options);

  // Registers / (the page and its assets) and /api/... on `server`; the page
  // at / carries the overview's first rows (overview_html.h), rendered per
  // request from the cached overview at the clock's time, with an ETag of its
  // bytes (If-None-Match with it: 304) and Cache-Control: no-cache;
  // replaces /api/queues with one that also takes ?history=0 and ?queue=NAME.
  // /api/overview answers OverviewJson, built at most once per daemon
  // generation whose overview differs from the last one, and shared by every
  // request, with an ETag (a digest of the bytes): a request whose
  // If-None-Match names it gets 304 and no body.
  void Register(HttpServer& server);
  // Answers one request (what the registered routes call).
  HttpServerResponse Handle(const HttpServerRequest& request) const;

 private:
  // The overview as of the daemon's current generation: taken at most once
  // per generation and shared; its JSON and the JSON's ETag are built when
  // first asked for (`json`; else body is null), and kept while the overview
  // stays the same across generations.
  struct OverviewSnapshot {
    std::shared_ptr<const Overview> model;
    std::shared_ptr<const std::string> body;
    std::string etag;
  };
  OverviewSnapshot CachedOverview(bool json) const;
  // index.html (`page`) with the overview's first window in <div id="view">.
  std::string IndexPage(std::string_view page) const;
  HttpServerResponse Asset(const HttpServerRequest& request) const;
  HttpServerResponse Info() const;
  HttpServerResponse Queues(const HttpServerRequest& request) const;
  HttpServerResponse OverviewApi(const HttpServerRequest& request) const;
  HttpServerResponse History(const std::string& queue) const;
  HttpServerResponse Failures(const std::string& queue, const HttpServerRequest& request) const;
  HttpServerResponse Objects(const std::string& queue, const HttpServerRequest& request) const;
  HttpServerResponse Search(const HttpServerRequest& request) const;
  HttpServerResponse Message(const std::string& id, const HttpServerRequest& request) const;
  HttpServerResponse ArchiveNow(const std::string& queue, const HttpServerRequest& request) const;
  HttpServerResponse Replay(const HttpServerRequest& request) const;
  // A dry run answers at once; a replay that sends starts a job (202).
  HttpServerResponse DryRun(const ReplayRequest& parsed, const QueueArchiveAccess& access,
                            const DashboardReplaySelection& what, const HttpServerRequest& request) const;
  HttpServerResponse StartReplay(const ReplayRequest& parsed, const QueueArchiveAccess& access,
                                 DashboardReplaySelection what, const HttpServerRequest& request) const;
  // The replay jobs: GET /api/replays, GET /api/replays/{id}, POST .../stop.
  HttpServerResponse Replays(const HttpServerRequest& request) const;
  HttpServerResponse ReplayStatus(const std::string& id) const;
  HttpServerResponse StopReplay(const std::string& id, const HttpServerRequest& request) const;
  // The bounds above on one request's scan.
  void Bound(ScanOptions& scan, const HttpServerRequest& request) const;

  Daemon& daemon_;
  Clock& clock_;
  const DashboardOptions options_;
  mutable std::atomic<int> scans_{0};  // scans running now
  // The last overview and the generation it was built at.
  struct OverviewCache {
    bool built = false;
    uint64_t generation = 0;
    std::shared_ptr<const Overview> model;
    std::shared_ptr<const std::string> body;  // null until asked for
    std::string etag;
  };
  DashboardAccess access_;                 // the tokens: who may read content and act
  mutable FailedAgainCache failed_again_;  // the audit records read so far, per archive
  mutable Mutex overview_mu_;
  mutable OverviewCache overview_ DLQ_GUARDED_BY(overview_mu_);
  // Last: destroyed first, so the replays stop while what they use still exists.
  mutable ReplayJobs jobs_;
};

}  // namespace dlq
