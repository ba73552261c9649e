#include "dashboard/dashboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>
#include <set>

#include "archive/destination.h"
#include "archive/record.h"
#include "causes/kept_causes.h"
#include "causes/sidecar.h"
#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"
#include "dashboard/overview_html.h"
#include "dashboard/request.h"
#include "dashboard/response.h"
#include "dashboard/web_assets.h"
#include "query/fingerprint.h"
#include "query/read_failure.h"
#include "query/scan.h"
#include "query/stats.h"
#include "replay/audit.h"

namespace dlq {
namespace {

using dashboard_internal::Error;
using dashboard_internal::Header;
using dashboard_internal::JsonResponse;

// The page loads nothing from elsewhere: scripts, styles and requests stay on
// this origin.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

HttpServerResponse ErrorFrom(const Status& st) {
  int status = 500;
  switch (st.code()) {
    case ErrorCode::kInvalidArgument: status = 400; break;
    case ErrorCode::kNotFound: status = 404; break;
    case ErrorCode::kPermissionDenied: status = 403; break;
    case ErrorCode::kUnavailable:
    case ErrorCode::kThrottled: status = 503; break;
    default: break;
  }
  return Error(status, st.ToString());
}

void OptTime(JsonWriter& w, const std::optional<SystemTime>& t) {
  if (t) {
    w.String(FormatIso8601(*t));
  } else {
    w.Null();
  }
}

// Whether an If-None-Match header names `etag` (strong or weak).
bool EtagMatches(const HttpServerRequest& r, const std::string& etag) {
  bool match = false;
  for (std::string_view tag : Split(Header(r, "If-None-Match"), ','))
    match |= Trim(tag) == etag || Trim(tag) == "W/" + etag;
  return match;
}

std::string EtagOf(std::string_view body) {
  return "\"" + Sha256Hex(body).substr(0, 32) + "\"";
}

// Where index.html gets the overview's first window (overview_html.h).
constexpr std::string_view kViewElement = R"(<div id="view"></div>)";

// Who asked for an action, as audit records name them.
std::string Actor(const HttpServerRequest& r) {
  return "dlq-archive dashboard, client " + r.remote_addr;
}

struct ArchiveHandle {
  QueueArchiveAccess access;
  Destination from;
  ArchiveLayouts layouts;
};

// A read of the archive that failed as a whole: the status ErrorFrom gives,
// with what to check (the exact S3 permissions, the bucket, the directory).
HttpServerResponse ArchiveReadError(const Status& st, const ArchiveHandle& archive) {
  HttpServerResponse r = ErrorFrom(st);
  return Error(r.status, ReadFailure(st, archive.from,
                                     fmt::format("group {}'s destination in the config", archive.access.group)));
}

// The archive of `queue` (the group's destination and key template).
Result<ArchiveHandle> OpenArchive(const Daemon& daemon, const std::string& queue) {
  std::optional<QueueArchiveAccess> access = daemon.views().ArchiveAccess(queue);
  if (!access) return NotFound(fmt::format("queue {} is not watched by this daemon", queue));
  if (access->clients.store == nullptr) {
    return FailedPrecondition(fmt::format("the group of queue {} has no usable archive destination", queue));
  }
  DLQ_ASSIGN_OR_RETURN(Destination from, ParseDestination(access->destination));
  ArchiveHandle h{.access = std::move(*access), .from = std::move(from), .layouts = {}};
  h.layouts.templates = {h.access.key_template};
  return h;
}

Result<std::map<std::string, std::string>> Params(const HttpServerRequest& r) {
  return ParseQueryString(r.query);
}

// Holds one of the dashboard's concurrent archive scans while it lives.
class ScanSlot {
 public:
  ScanSlot(std::atomic<int>& running, int max) : running_(running), held_(running.fetch_add(1) < max) {
    if (!held_) running_.fetch_sub(1);
  }
  ~ScanSlot() {
    if (held_) running_.fetch_sub(1);
  }
  ScanSlot(const ScanSlot&) = delete;
  ScanSlot& operator=(const ScanSlot&) = delete;
  bool held() const { return held_; }

 private:
  std::atomic<int>& running_;
  const bool held_;
};

HttpServerResponse Busy(int max) {
  HttpServerResponse r =
      Error(503, fmt::format("the dashboard is already reading the archive for {} requests; try again shortly", max));
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// How far a scan got.
void ScanProgress(JsonWriter& w, const ScanStats& s) {
  w.Key("complete").Bool(!s.stopped);
  w.Key("stopped");
  if (s.stopped) {
    w.String(ScanStopName(s.stop_reason));
  } else {
    w.Null();
  }
  w.Key("objects_scanned").Uint(s.objects_done);
  w.Key("objects_total").Uint(s.objects_listed);
  // Objects whose share of the deadline ran out: the rest of each was not read.
  w.Key("cut_short").BeginArray();
  for (const CutShortObject& c : s.cut_short) {
    w.BeginObject().Key("key").String(c.key).Key("lines_read").Uint(c.lines_read).EndObject();
  }
  w.EndArray();
}

// A scan stopped while still listing the archive (nothing was read): 504
// for the deadline, 503 for a cancelled request. Empty for other errors.
std::optional<HttpServerResponse> StoppedWhileListing(const Status& st) {
  const bool deadline = st.code() == ErrorCode::kDeadlineExceeded;
  if (!deadline && st.code() != ErrorCode::kCancelled) return std::nullopt;
  JsonWriter w;
  w.BeginObject();
  w.Key("error").String(deadline ? "listing the archive took longer than the dashboard's scan deadline"
                                 : "the request was cancelled while the archive was being listed");
  w.Key("complete").Bool(false);
  w.Key("stopped").String(deadline ? "deadline" : "cancelled");
  w.Key("objects_scanned").Uint(0);
  w.Key("objects_total").Null();
  w.EndObject();
  return JsonResponse(deadline ? 504 : 503, w.Take());
}

// At most this many notes about the causes sidecar in one answer.
constexpr size_t kMaxCauseNotes = 10;

// The causes the archive's sidecar keeps for `queue`. A sidecar that cannot be
// read, and its objects or lines that do not parse, are notes for the answer
// (`notes`), never a failed request: the causes are then missing or partial.
CauseIndex KeptCausesOf(const ArchiveHandle& archive, const std::string& queue, std::vector<std::string>& notes) {
  auto index = ReadCauseRecords(*archive.access.clients.store, ArchivePrefix(archive.from), {queue});
  if (!index.ok()) {
    notes.push_back("causes not shown: the causes sidecar could not be read: " + index.status().ToString());
    return {};
  }
  for (const std::string& why : index->unreadable) {
    if (notes.size() == kMaxCauseNotes) {
      notes.push_back(fmt::format("and {} more cause records left out", index->unreadable.size() - kMaxCauseNotes));
      break;
    }
    notes.push_back("cause record left out: " + why);
  }
  return std::move(index).value();
}

void CauseNotes(JsonWriter& w, const std::vector<std::string>& notes) {
  w.Key("cause_notes").BeginArray();
  for (const std::string& n : notes) w.String(n);
  w.EndArray();
}

// "/api/replays/{id}" or "/api/replays/{id}/stop"; an id is 1-64 letters,
// digits and '-' (replay_jobs.h).
struct ReplayPath {
  std::string id;
  bool stop = false;
};
std::optional<ReplayPath> ParseReplayPath(std::string_view path) {
  constexpr std::string_view kPrefix = "/api/replays/";
  if (!path.starts_with(kPrefix)) return std::nullopt;
  std::string_view rest = path.substr(kPrefix.size());
  ReplayPath out;
  if (rest.ends_with("/stop")) {
    out.stop = true;
    rest.remove_suffix(std::string_view("/stop").size());
  }
  if (rest.empty() || rest.size() > 64) return std::nullopt;
  for (char c : rest) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') return std::nullopt;
  }
  out.id = std::string(rest);
  return out;
}

// How a replay ended, from the `replay` command's exit code (doc/replay.md).
std::string_view ReplayOutcome(int exit_code) {
  switch (exit_code) {
    case 0: return "ok";
    case 2: return "refused";
    case 3: return "partial";
    case 5: return "refailures";
    case 130: return "stopped";
    default: return "failed";
  }
}

// One replay job; `detail` adds the re-failures and the command's output.
void ReplayJobJson(JsonWriter& w, const ReplayJobSnapshot& j, bool detail) {
  const ReplayProgress& p = j.progress;
  w.BeginObject();
  w.Key("replay_id").String(j.id);
  w.Key("queue").String(j.spec.queue);
  w.Key("fingerprint");
  if (j.spec.fingerprint.empty()) {
    w.Null();
  } else {
    w.String(j.spec.fingerprint);
  }
  w.Key("ids").Uint(j.spec.ids);
  w.Key("to").String(j.spec.to_origin ? "origin" : "source");
  w.Key("started_by").String(j.spec.actor);
  w.Key("started_at").String(FormatIso8601(j.started_at));
  w.Key("finished_at");
  OptTime(w, j.finished_at);
  w.Key("done").Bool(j.done);
  w.Key("stop_requested").Bool(j.stop_requested);
  w.Key("state").String(j.done ? "finished" : j.stop_requested ? "stopping" : "running");
  w.Key("exit_code");
  if (j.done) {
    w.Int(j.result.exit_code);
  } else {
    w.Null();
  }
  w.Key("outcome");
  if (j.done) {
    w.String(ReplayOutcome(j.result.exit_code));
  } else {
    w.Null();
  }
  // A replay without a canary reports no phase: it is sending, then done.
  w.Key("phase").String(!p.phase.empty() ? std::string_view(p.phase) : j.done ? "done" : "sending");
  w.Key("guarded").Bool(!p.phase.empty());
  w.Key("reason").String(p.reason);
  w.Key("step").Int(p.step);
  w.Key("steps").Int(p.steps);
  w.Key("total").Uint(p.total);
  w.Key("sent").Uint(p.sent);
  w.Key("refailed").Uint(p.refailed);
  w.Key("dlq_receives").Uint(p.dlq_receives);
  w.Key("backlog");
  if (p.backlog >= 0) {
    w.Int(p.backlog);
  } else {
    w.Null();
  }
  w.Key("backlog_age_s");
  if (p.backlog_age) {
    w.Int(p.backlog_age->count());
  } else {
    w.Null();
  }
  w.Key("paused_s").Double(static_cast<double>(p.paused_for.count()) / 1000.0);
  if (detail) {
    w.Key("refailures").BeginArray();
    for (const ReplayRefailure& r : p.refailures) {
      w.BeginObject();
      w.Key("message_id").String(r.message_id);
      w.Key("new_message_id").String(r.new_message_id);
      w.Key("destination").String(r.destination);
      w.Key("dlq").String(r.dlq);
      w.Key("found_at").String(FormatIso8601(r.found_at));
      w.EndObject();
    }
    w.EndArray();
    w.Key("output").String(Trim(j.result.output));
    w.Key("errors").String(Trim(j.result.errors));
    w.Key("summary");
    if (j.result.summary.empty()) {
      w.Null();
    } else {
      w.Raw(Trim(j.result.summary));
    }
  }
  w.EndObject();
}

}  // namespace

Dashboard::Dashboard(Daemon& daemon, Clock& clock, DashboardOptions options)
    : daemon_(daemon),
      clock_(clock),
      options_(std::move(options)),
      access_(options_.read_token, options_.write_token, clock, options_.registry),
      jobs_(clock, options_.max_replay_jobs) {}

void Dashboard::Bound(ScanOptions& scan, const HttpServerRequest& request) const {
  scan.stop = request.cancelled;
  scan.clock = &clock_;
  scan.deadline = clock_.SteadyNow() + options_.scan_deadline;
  // One slow object (billions of short lines) must not hold back the others'
  // results until the deadline: each gets 1/8 of it.
  scan.max_object_time = options_.scan_deadline / 8;
  scan.dedup_memory_bytes = options_.request_memory / 16;
  scan.memory_budget_bytes = options_.request_memory - scan.dedup_memory_bytes;
}

void Dashboard::Register(HttpServer& server) {
  auto handler = [this](const HttpServerRequest& r) { return Handle(r); };
  // A request without the token is refused from its head: its body is never read.
  server.CheckHeads([this](const HttpServerRequest& head) { return access_.RefuseHead(head); });
  for (const WebAsset& a : WebAssets()) server.Handle(std::string(a.path), handler);
  server.Handle("/api/dashboard", handler);
  server.Handle("/api/queues", handler);
  server.Handle("/api/overview", handler);
  server.Handle("/api/search", handler);
  server.Handle("POST", "/api/replay", handler);
  server.Handle("/api/replays", handler);
  server.HandlePrefix("GET", "/api/replays/", handler);
  server.HandlePrefix("POST", "/api/replays/", handler);
  server.HandlePrefix("GET", "/api/queues/", handler);
  server.HandlePrefix("POST", "/api/queues/", handler);
  server.HandlePrefix("GET", "/api/messages/", handler);
}

HttpServerResponse Dashboard::Handle(const HttpServerRequest& request) const {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && !StartsWith(path, "/api/")) return Asset(request);
  if (get && path == "/api/dashboard") return Info();
  if (get && path == "/api/queues") return Queues(request);
  if (get && path == "/api/overview") return OverviewApi(request);
  if (DashboardAccess::IsContentRoute(request)) {
    if (auto refused = access_.RefuseRead(request)) return *refused;
  }
  if (get && path == "/api/search") return Search(request);
  if (request.method == "POST" && path == "/api/replay") return Replay(request);
  if (get && path == "/api/replays") return Replays(request);
  if (StartsWith(path, "/api/replays/")) {
    std::optional<ReplayPath> rp = ParseReplayPath(path);
    if (rp && get && !rp->stop) return ReplayStatus(rp->id);
    if (rp && request.method == "POST" && rp->stop) return StopReplay(rp->id, request);
    return Error(404, "expected GET /api/replays/ID or POST /api/replays/ID/stop");
  }
  if (StartsWith(path, "/api/messages/")) {
    std::optional<std::string> id = ParseMessagePath(path);
    if (!id || !get) return Error(404, "expected GET /api/messages/MESSAGE_ID?queue=NAME");
    return Message(*id, request);
  }
  if (std::optional<QueuePath> qp = ParseQueuePath(path)) {
    if (get && qp->view == "history") return History(qp->queue);
    if (get && qp->view == "failures") return Failures(qp->queue, request);
    if (get && qp->view == "objects") return Objects(qp->queue, request);
    if (request.method == "POST" && qp->view == "archive") return ArchiveNow(qp->queue, request);
  }
  return Error(404, fmt::format("no such API: {} {} (see doc/dashboard.md)", request.method, OneLinePreview(path, 80)));
}

HttpServerResponse Dashboard::Asset(const HttpServerRequest& request) const {
  const std::string path = request.path == "/index.html" ? "/" : request.path;
  for (const WebAsset& a : WebAssets()) {
    if (a.path != path) continue;
    HttpServerResponse r;
    r.content_type = std::string(a.content_type);
    if (path == "/") {
      // The page with the overview's first rows in it: it changes with the
      // data and the clock, so it is revalidated on every load (no-cache)
      // against an ETag of these very bytes.
      r.body = IndexPage(a.body);
      const std::string etag = EtagOf(r.body);
      if (EtagMatches(request, etag)) {
        r.status = 304;
        r.body.clear();
      }
      r.headers.emplace_back("ETag", etag);
    } else {
      r.body = std::string(a.body);
    }
    r.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    r.headers.emplace_back("Cache-Control", "no-cache");
    return r;
  }
  return Error(404, "not found");
}

std::string Dashboard::IndexPage(std::string_view page) const {
  const size_t at = page.find(kViewElement);
  if (at == std::string_view::npos) return std::string(page);
  const std::shared_ptr<const Overview> overview = CachedOverview(/*json=*/false).model;
  const size_t open = at + kViewElement.size() - std::string_view("</div>").size();
  std::string out(page.substr(0, open));
  out += RenderOverviewHtml(*overview, clock_.Now());
  out += page.substr(open);
  return out;
}

Dashboard::OverviewSnapshot Dashboard::CachedOverview(bool json) const {
  MutexLock lock(overview_mu_);
  const uint64_t generation = daemon_.generation();
  if (!overview_.built || overview_.generation != generation) {
    // Built under the lock: concurrent requests of one generation share one
    // build. Most generations change nothing the overview shows (a collection
    // of queues that stay as they were): then the JSON and its ETag are kept.
    Overview fresh = daemon_.views().BuildOverview();
    if (!overview_.built || fresh != *overview_.model) {
      overview_.model = std::make_shared<const Overview>(std::move(fresh));
      overview_.body = nullptr;
      overview_.etag.clear();
    }
    overview_.generation = generation;
    overview_.built = true;
  }
  if (json && overview_.body == nullptr) {
    overview_.body = std::make_shared<const std::string>(OverviewJson(*overview_.model));
    overview_.etag = EtagOf(*overview_.body);
  }
  return {.model = overview_.model, .body = overview_.body, .etag = overview_.etag};
}

HttpServerResponse Dashboard::Info() const {
  JsonWriter w;
  w.BeginObject();
  w.Key("version").String(DLQ_VERSION);
  w.Key("write").Bool(!options_.write_token.empty());
  w.Key("read_token").Bool(!options_.read_token.empty());
  w.Key("poll_interval_s").Int(options_.poll_interval.count());
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::Queues(const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  DaemonView::QueuesJsonOptions options;
  for (const auto& [name, value] : *params) {
    if (name == "history" && (value == "0" || value == "1")) {
      options.history = value == "1";
    } else if (name == "queue" && IsQueueName(value)) {
      options.queue = value;
    } else {
      return Error(400, fmt::format("/api/queues takes history=0|1 and queue=NAME, not {}", OneLinePreview(name, 40)));
    }
  }
  return JsonResponse(200, daemon_.views().QueuesJson(options));
}

HttpServerResponse Dashboard::OverviewApi(const HttpServerRequest& request) const {
  if (!request.query.empty()) return Error(400, "/api/overview takes no parameters");
  const OverviewSnapshot snapshot = CachedOverview(/*json=*/true);
  const bool match = EtagMatches(request, snapshot.etag);
  HttpServerResponse r = JsonResponse(match ? 304 : 200, match ? std::string() : *snapshot.body);
  r.headers.emplace_back("ETag", snapshot.etag);
  return r;
}

HttpServerResponse Dashboard::History(const std::string& queue) const {
  std::optional<std::vector<QueueSample>> samples = daemon_.views().History(queue);
  std::optional<QueueStatus> status = daemon_.views().Queue(queue);
  if (!samples || !status) return Error(404, fmt::format("queue {} is not watched by this daemon", queue));
  JsonWriter w;
  w.BeginObject();
  w.Key("queue").String(queue);
  w.Key("retention_s").Int(status->queue.retention.count());
  w.Key("samples").BeginArray();
  for (const QueueSample& s : *samples) {
    w.BeginObject();
    w.Key("time").String(FormatIso8601(s.time));
    w.Key("visible").Int(s.visible);
    w.Key("not_visible").Int(s.not_visible);
    w.Key("delayed").Int(s.delayed);
    w.Key("expiry_in_s");
    if (s.expiry_in_s) {
      w.Double(*s.expiry_in_s);
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::Failures(const std::string& queue, const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  auto limit = ParseLimit(*params, 10, 100);
  if (!limit.ok()) return ErrorFrom(limit.status());
  auto archive = OpenArchive(daemon_, queue);
  if (!archive.ok()) return ErrorFrom(archive.status());
  ScanSlot slot(scans_, options_.max_concurrent_scans);
  if (!slot.held()) return Busy(options_.max_concurrent_scans);
  ScanOptions scan;
  scan.filter.queues = {queue};
  scan.layouts = archive->layouts;
  Bound(scan, request);
  GroupBy group_by = GroupBy::Parse("fingerprint").value();
  group_by.fingerprint = options_.fingerprint;
  StatsAggregator aggregator(std::move(group_by), TimeField::kSent, options_.max_failure_groups);
  // Failed again after a replay, per group, counted as `stats` counts them
  // (once per message and its archived copy); the audit records are part of
  // the archive, so a read that fails is reported as any archive read. Only
  // records new since the last request are read.
  auto failed_again = failed_again_.Read(*archive->access.clients.store, ArchivePrefix(archive->from));
  if (!failed_again.ok()) {
    return StoppedWhileListing(failed_again.status()).value_or(ArchiveReadError(failed_again.status(), *archive));
  }
  std::set<std::string> counted;
  aggregator.CountFailedAgain(
      [&](const ArchiveRecord& r) { return (*failed_again)->CountOnce(r.message_id, counted); });
  // Each group's cause, as `stats` shows it: only groups with a kept answer
  // are tracked, so what this holds is bounded by the sidecar.
  std::vector<std::string> cause_notes;
  KeptCauses kept(KeptCausesOf(*archive, queue, cause_notes));
  aggregator.ObserveRecords([&](const std::optional<std::string>& key, const ArchiveRecord& r) {
    if (kept.index().Find(r.queue, r.message_id) != nullptr) kept.Observe(key, r);
  });
  auto stats = ScanArchive(*archive->access.clients.store, archive->from, scan,
                           [&](const ArchiveRecord& r, const RecordLocation&) {
                             aggregator.Add(r);
                             return true;
                           });
  if (!stats.ok()) return StoppedWhileListing(stats.status()).value_or(ArchiveReadError(stats.status(), *archive));
  StatsReport report = std::move(aggregator).Finish();
  kept.Apply(report);
  const size_t groups = report.groups.size();
  if (report.groups.size() > *limit) report.groups.resize(*limit);
  JsonWriter w;
  w.BeginObject();
  w.Key("queue").String(queue);
  w.Key("groups_total").Uint(groups);
  w.Key("skipped_objects").Uint(stats->skipped_objects);
  w.Key("skipped_lines").Uint(stats->skipped_lines);
  ScanProgress(w, *stats);
  w.Key("causes").Bool(report.causes);
  CauseNotes(w, cause_notes);
  w.Key("report").Raw(Trim(RenderStatsJson(report)));
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::Objects(const std::string& queue, const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  auto limit = ParseLimit(*params, 20, 200);
  if (!limit.ok()) return ErrorFrom(limit.status());
  auto archive = OpenArchive(daemon_, queue);
  if (!archive.ok()) return ErrorFrom(archive.status());
  ListOptions lo;
  lo.layouts = archive->layouts;
  lo.queues = {queue};
  auto objects = ListArchive(*archive->access.clients.store, archive->from, lo);
  if (!objects.ok()) return ArchiveReadError(objects.status(), *archive);
  // Newest first: the key layouts put the date and time in the key; objects
  // of other queues that pruning could not exclude are left out.
  std::vector<const ArchiveObject*> mine;
  for (const ArchiveObject& o : *objects) {
    if (!o.matched || o.facts.queue == queue) mine.push_back(&o);
  }
  std::sort(mine.begin(), mine.end(), [](const ArchiveObject* a, const ArchiveObject* b) {
    return a->info.last_modified != b->info.last_modified ? a->info.last_modified > b->info.last_modified
                                                          : a->info.key > b->info.key;
  });
  JsonWriter w;
  w.BeginObject();
  w.Key("queue").String(queue);
  w.Key("destination").String(archive->from.uri);
  w.Key("total").Uint(mine.size());
  w.Key("objects").BeginArray();
  for (size_t i = 0; i < mine.size() && i < *limit; ++i) {
    const ObjectInfo& o = mine[i]->info;
    w.BeginObject();
    w.Key("key").String(o.key);
    w.Key("size").Uint(o.size);
    w.Key("last_modified").String(FormatIso8601(o.last_modified));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::Search(const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  auto search = ParseSearchRequest(*params);
  if (!search.ok()) return ErrorFrom(search.status());
  const std::string queue = search->flags.queues.front();
  auto filter = BuildFilter(search->flags, clock_.Now());
  if (!filter.ok()) return ErrorFrom(filter.status());
  filter->fingerprint_options = options_.fingerprint;
  if (Status st = filter->CompileRegex(); !st.ok()) return ErrorFrom(st);
  auto archive = OpenArchive(daemon_, queue);
  if (!archive.ok()) return ErrorFrom(archive.status());
  ScanSlot slot(scans_, options_.max_concurrent_scans);
  if (!slot.held()) return Busy(options_.max_concurrent_scans);
  ScanOptions scan;
  scan.filter = std::move(*filter);
  scan.layouts = archive->layouts;
  Bound(scan, request);
  JsonWriter w;
  w.BeginObject();
  w.Key("queue").String(queue);
  w.Key("messages").BeginArray();
  size_t count = 0;
  bool more = false;
  auto stats = ScanArchive(*archive->access.clients.store, archive->from, scan,
                           [&](const ArchiveRecord& r, const RecordLocation&) {
                             if (count == search->limit) {
                               more = true;
                               return false;
                             }
                             ++count;
                             w.BeginObject();
                             w.Key("message_id").String(r.message_id);
                             w.Key("queue").String(r.queue);
                             w.Key("sent_at");
                             OptTime(w, r.sent_at);
                             w.Key("archived_at").String(FormatIso8601(r.archived_at));
                             w.Key("receive_count").Int(r.receive_count);
                             const std::string group = FailureGroupKey(r, options_.fingerprint);
                             w.Key("fingerprint").String(group);
                             w.Key("fingerprint_id").String(GroupId(group));
                             w.Key("preview").String(OneLinePreview(r.body, 120));
                             w.EndObject();
                             return true;
                           });
  if (!stats.ok()) return StoppedWhileListing(stats.status()).value_or(ArchiveReadError(stats.status(), *archive));
  w.EndArray();
  w.Key("count").Uint(count);
  w.Key("more").Bool(more);
  w.Key("skipped_objects").Uint(stats->skipped_objects);
  w.Key("skipped_lines").Uint(stats->skipped_lines);
  ScanProgress(w, *stats);
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::Message(const std::string& id, const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  auto it = params->find("queue");
  if (it == params->end() || !IsQueueName(it->second)) {
    return Error(400, "queue: name the queue whose archive holds the message (?queue=NAME)");
  }
  const std::string queue = it->second;
  auto archive = OpenArchive(daemon_, queue);
  if (!archive.ok()) return ErrorFrom(archive.status());
  ScanSlot slot(scans_, options_.max_concurrent_scans);
  if (!slot.held()) return Busy(options_.max_concurrent_scans);
  ScanOptions scan;
  scan.filter.ids = {id};
  scan.filter.queues = {queue};
  scan.layouts = archive->layouts;
  scan.deduplicate = false;  // every copy, to say where they all are
  Bound(scan, request);
  std::string record;
  std::vector<std::string> locations;
  const std::string uri = archive->access.clients.store->Describe() + "/";
  auto stats = ScanArchive(*archive->access.clients.store, archive->from, scan,
                           [&](const ArchiveRecord& r, const RecordLocation& loc) {
                             if (record.empty()) AppendRecordJson(r, record);
                             locations.push_back(fmt::format("{}{} line {}", uri, loc.key, loc.line));
                             return locations.size() < 100;
                           });
  if (!stats.ok()) return StoppedWhileListing(stats.status()).value_or(ArchiveReadError(stats.status(), *archive));
  if (record.empty() && stats->stopped) {
    // Not found in the part that was read: say so, not that it is absent.
    JsonWriter w;
    w.BeginObject();
    w.Key("error").String(
        fmt::format("message {} was not found in the part of the archive of {} read before the "
                    "scan was stopped ({})",
                    id, queue, ScanStopName(stats->stop_reason)));
    ScanProgress(w, *stats);
    w.EndObject();
    return JsonResponse(stats->stop_reason == ScanStop::kDeadline ? 504 : 503, w.Take());
  }
  if (record.empty()) return Error(404, fmt::format("message {} is not in the archive of {}", id, queue));
  // Why it failed, as the causes sidecar keeps it (null: not looked up).
  std::vector<std::string> cause_notes;
  const CauseIndex causes = KeptCausesOf(*archive, queue, cause_notes);
  std::string cause;
  if (const CauseRecord* c = causes.Find(queue, id)) AppendCauseRecordJson(*c, cause);
  JsonWriter w;
  w.BeginObject();
  w.Key("record").Raw(Trim(record));
  w.Key("locations").BeginArray();
  for (const std::string& l : locations) w.String(l);
  w.EndArray();
  w.Key("cause");
  if (cause.empty()) {
    w.Null();
  } else {
    w.Raw(Trim(cause));
  }
  CauseNotes(w, cause_notes);
  ScanProgress(w, *stats);
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::ArchiveNow(const std::string& queue, const HttpServerRequest& request) const {
  if (auto refused = access_.RefuseWrite(request)) return *refused;
  Status st = daemon_.ArchiveNow(queue, Actor(request));
  Log().Log(st.ok() ? LogLevel::kInfo : LogLevel::kWarn, "dashboard_action",
            {{"action", "archive_now"},
             {"queue", queue},
             {"client", request.remote_addr},
             {"result", st.ok() ? std::string("requested") : st.ToString()}});
  if (!st.ok()) return ErrorFrom(st);
  return JsonResponse(202, JsonWriter()
                               .BeginObject()
                               .Key("queue")
                               .String(queue)
                               .Key("requested")
                               .Bool(true)
                               .Key("note")
                               .String("an archive run of every message starts at the next collection")
                               .EndObject()
                               .Take());
}

HttpServerResponse Dashboard::Replay(const HttpServerRequest& request) const {
  if (auto refused = access_.RefuseWrite(request)) return *refused;
  auto parsed = ParseReplayRequest(request.body);
  if (!parsed.ok()) return ErrorFrom(parsed.status());
  if (!options_.replay) return Error(501, "replay is not available in this daemon");
  auto archive = OpenArchive(daemon_, parsed->queue);
  if (!archive.ok()) return ErrorFrom(archive.status());
  DashboardReplaySelection what;
  what.ids = parsed->ids;
  what.fingerprint = parsed->fingerprint;
  what.fingerprint_options = options_.fingerprint;
  what.dry_run = parsed->dry_run;
  what.to_origin = parsed->to_origin;
  what.function = parsed->function;
  if (what.dry_run) return DryRun(*parsed, archive->access, what, request);
  return StartReplay(*parsed, archive->access, std::move(what), request);
}

HttpServerResponse Dashboard::DryRun(const ReplayRequest& parsed, const QueueArchiveAccess& access,
                                     const DashboardReplaySelection& what, const HttpServerRequest& request) const {
  const std::atomic<bool> never{false};
  ReplayJobControl control;
  control.stop = request.cancelled != nullptr ? request.cancelled : &never;
  DashboardReplayResult result = options_.replay(access, what, Actor(request), control);
  Log().Log(result.exit_code == 0 ? LogLevel::kInfo : LogLevel::kWarn, "dashboard_action",
            {{"action", "replay_dry_run"},
             {"queue", parsed.queue},
             {"to", std::string(parsed.to_origin ? "origin" : "source")},
             {"messages", static_cast<int64_t>(parsed.ids.size())},
             {"fingerprint", parsed.fingerprint},
             {"client", request.remote_addr},
             {"exit_code", result.exit_code},
             {"result", std::string(Trim(result.output))}});
  JsonWriter w;
  w.BeginObject();
  w.Key("queue").String(parsed.queue);
  if (!parsed.fingerprint.empty()) w.Key("fingerprint").String(parsed.fingerprint);
  w.Key("to").String(parsed.to_origin ? "origin" : "source");
  w.Key("dry_run").Bool(true);
  w.Key("ok").Bool(result.exit_code == 0);
  w.Key("exit_code").Int(result.exit_code);
  w.Key("output").String(Trim(result.output));
  w.Key("errors").String(Trim(result.errors));
  uint64_t total = 0;
  w.Key("destinations").BeginArray();
  for (const auto& [url, n] : result.destinations) {
    // "queue_url" as before origins: a function, topic or bus ARN, an endpoint URL there too.
    w.BeginObject().Key("destination").String(url).Key("queue_url").String(url).Key("count").Uint(n).EndObject();
    total += n;
  }
  w.EndArray();
  w.Key("count").Uint(total);
  w.Key("summary");
  if (result.summary.empty()) {
    w.Null();
  } else {
    w.Raw(Trim(result.summary));
  }
  w.EndObject();
  const int status = result.exit_code == 0 ? 200 : result.exit_code == 2 ? 400 : 502;
  return JsonResponse(status, w.Take());
}

HttpServerResponse Dashboard::StartReplay(const ReplayRequest& parsed, const QueueArchiveAccess& access,
                                          DashboardReplaySelection what, const HttpServerRequest& request) const {
  ReplayJobSpec spec{.queue = parsed.queue,
                     .fingerprint = parsed.fingerprint,
                     .ids = parsed.ids.size(),
                     .actor = Actor(request),
                     .to_origin = parsed.to_origin};
  // The job keeps what it needs: the group's clients (their keepalive holds
  // them), the selection, and who asked.
  ReplayJobWork work = [replay = options_.replay, access, what = std::move(what), actor = spec.actor,
                        queue = parsed.queue](const ReplayJobControl& control) {
    DashboardReplayResult result = replay(access, what, actor, control);
    Log().Log(result.exit_code == 0 ? LogLevel::kInfo : LogLevel::kWarn, "dashboard_replay_finished",
              {{"replay_id", control.id},
               {"queue", queue},
               {"exit_code", result.exit_code},
               {"result", std::string(Trim(result.output))}});
    return result;
  };
  Result<std::string> id = jobs_.Start(std::move(spec), std::move(work));
  Log().Log(id.ok() ? LogLevel::kInfo : LogLevel::kWarn, "dashboard_action",
            {{"action", "replay"},
             {"queue", parsed.queue},
             {"to", std::string(parsed.to_origin ? "origin" : "source")},
             {"messages", static_cast<int64_t>(parsed.ids.size())},
             {"fingerprint", parsed.fingerprint},
             {"client", request.remote_addr},
             {"result", id.ok() ? "started " + *id : id.status().ToString()}});
  if (!id.ok()) {
    HttpServerResponse r = ErrorFrom(id.status());
    r.headers.emplace_back("Retry-After", "5");
    return r;
  }
  JsonWriter w;
  w.BeginObject();
  w.Key("replay_id").String(*id);
  w.Key("queue").String(parsed.queue);
  if (!parsed.fingerprint.empty()) w.Key("fingerprint").String(parsed.fingerprint);
  w.Key("to").String(parsed.to_origin ? "origin" : "source");
  w.Key("dry_run").Bool(false);
  w.Key("status_url").String("/api/replays/" + *id);
  w.EndObject();
  HttpServerResponse r = JsonResponse(202, w.Take());
  r.headers.emplace_back("Location", "/api/replays/" + *id);
  return r;
}

HttpServerResponse Dashboard::Replays(const HttpServerRequest& request) const {
  auto params = Params(request);
  if (!params.ok()) return ErrorFrom(params.status());
  std::optional<std::string> queue;
  for (const auto& [name, value] : *params) {
    if (name == "queue" && IsQueueName(value)) {
      queue = value;
    } else {
      return Error(400, fmt::format("/api/replays takes queue=NAME, not {}", OneLinePreview(name, 40)));
    }
  }
  JsonWriter w;
  w.BeginObject();
  w.Key("replays").BeginArray();
  for (const ReplayJobSnapshot& j : jobs_.List()) {
    if (!queue || j.spec.queue == *queue) ReplayJobJson(w, j, /*detail=*/false);
  }
  w.EndArray();
  w.Key("kept").Uint(options_.max_replay_jobs);
  w.EndObject();
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::ReplayStatus(const std::string& id) const {
  std::optional<ReplayJobSnapshot> job = jobs_.Get(id);
  if (!job) {
    return Error(404, fmt::format("no replay {} (this daemon keeps its last {} replays, until it stops)", id,
                                  options_.max_replay_jobs));
  }
  JsonWriter w;
  ReplayJobJson(w, *job, /*detail=*/true);
  return JsonResponse(200, w.Take());
}

HttpServerResponse Dashboard::StopReplay(const std::string& id, const HttpServerRequest& request) const {
  if (auto refused = access_.RefuseWrite(request)) return *refused;
  Status st = jobs_.Stop(id);
  Log().Log(st.ok() ? LogLevel::kInfo : LogLevel::kWarn, "dashboard_action",
            {{"action", "replay_stop"},
             {"replay_id", id},
             {"client", request.remote_addr},
             {"result", st.ok() ? std::string("requested") : st.ToString()}});
  if (st.code() == ErrorCode::kFailedPrecondition) return Error(409, st.message());
  if (!st.ok()) return ErrorFrom(st);
  return JsonResponse(202, JsonWriter()
                               .BeginObject()
                               .Key("replay_id")
                               .String(id)
                               .Key("stop_requested")
                               .Bool(true)
                               .Key("note")
                               .String("the replay finishes the batch it has in flight, then stops (exit 130)")
                               .EndObject()
                               .Take());
}

}  // namespace dlq
