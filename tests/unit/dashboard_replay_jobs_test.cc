// The dashboard's replay jobs: POST /api/replay starts one (202 and an id),
// /api/replays/{id} follows it, .../stop stops it; over a daemon on fakes and
// a fake replay function that reports statuses and blocks until released.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "app/dashboard_replay.h"
#include "dashboard/dashboard.h"
#include "dashboard/replay_jobs.h"
#include "replay/redrive_guard.h"
#include "testing/fake_notifier.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::seconds;

constexpr char kWrite[] = "write-token-for-the-replay-tests";
constexpr char kRead[] = "read-token-for-the-replay-tests";

// Polls `pred` for up to 10 s of real time (the jobs run on threads of their own).
bool Eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// A replay function that reports what the test tells it to and returns when
// released (exit 0) or stopped (exit 130), whichever comes first.
class FakeReplay {
 public:
  DashboardReplayFn Fn() {
    return [this](const QueueArchiveAccess& access, const DashboardReplaySelection& what, const std::string& actor,
                  const ReplayJobControl& control) {
      {
        std::unique_lock lock(mu_);
        ++calls_;
        last_queue_ = access.queue.name;
        last_actor_ = actor;
        last_dry_run_ = what.dry_run;
        last_id_ = control.id;
        if (what.dry_run) {
          DashboardReplayResult dry;
          dry.output = "dry run: would send 2";
          dry.destinations["https://sqs/orders"] = 2;
          return dry;
        }
        report_ = control.report;
        stop_ = control.stop;
      }
      cv_.notify_all();
      std::unique_lock lock(mu_);
      while (!released_ && !control.stop->load()) cv_.wait_for(lock, std::chrono::milliseconds(2));
      report_ = nullptr;
      // The flag belongs to the job, which may be gone once this returns.
      saw_stop_ = control.stop->load();
      stop_ = nullptr;
      DashboardReplayResult r;
      r.exit_code = released_ ? release_code_ : 130;
      r.output = released_ ? "sent 40, failed 0\naudit: s3://archive-bucket/dlq-archive/_audit/x.json" : "stopped";
      r.errors = released_ ? "" : "stopped by request after the batch in flight";
      return r;
    };
  }
  // Waits until a job is inside the function, then reports `p` through it.
  void Report(const ReplayProgress& p) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return report_ != nullptr; });
    report_(p);
  }
  void Release(int exit_code = 0) {
    {
      std::lock_guard lock(mu_);
      released_ = true;
      release_code_ = exit_code;
    }
    cv_.notify_all();
  }
  bool SawStop() {
    std::lock_guard lock(mu_);
    return saw_stop_ || (stop_ != nullptr && stop_->load());
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  bool last_dry_run() {
    std::lock_guard lock(mu_);
    return last_dry_run_;
  }
  std::string last_actor() {
    std::lock_guard lock(mu_);
    return last_actor_;
  }
  std::string last_id() {
    std::lock_guard lock(mu_);
    return last_id_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void(const ReplayProgress&)> report_;
  const std::atomic<bool>* stop_ = nullptr;  // the running job's flag; null once it returned
  bool saw_stop_ = false;                    // the job returned because it was stopped
  bool released_ = false;
  int release_code_ = 0;
  int calls_ = 0;
  bool last_dry_run_ = false;
  std::string last_queue_, last_actor_, last_id_;
};

class DashboardReplayJobsTest : public DaemonFixture {
 protected:
  DashboardReplayJobsTest() {
    daemon_ = NewDaemon(notifier_, {});
    daemon_->RunOnce();
    daemon_->WaitIdle();
  }

  std::unique_ptr<Dashboard> Make(std::string write, std::string read = "", size_t keep = 50) {
    DashboardOptions o;
    o.write_token = std::move(write);
    o.read_token = std::move(read);
    o.replay = fake_.Fn();
    o.max_replay_jobs = keep;
    return std::make_unique<Dashboard>(*daemon_, clock_, o);
  }

  static HttpServerRequest Request(std::string method, std::string path, std::string auth = "", std::string body = "") {
    HttpServerRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.body = std::move(body);
    r.remote_addr = "127.0.0.1";
    if (!auth.empty()) r.headers.emplace_back("Authorization", "Bearer " + auth);
    return r;
  }
  static HttpServerRequest StartGroup(std::string auth = kWrite) {
    return Request("POST", "/api/replay", std::move(auth),
                   R"({"queue":"orders-dlq","fingerprint":"ba7816bf8f01","dry_run":false})");
  }

  simdjson::dom::element Json(const HttpServerResponse& r) {
    EXPECT_EQ(r.content_type, "application/json") << r.body;
    bodies_.push_back(r.body);
    simdjson::dom::element doc;
    EXPECT_EQ(parser_.parse(bodies_.back()).get(doc), simdjson::SUCCESS) << r.body;
    return doc;
  }
  std::string Started(Dashboard& d, std::string auth = kWrite) {
    HttpServerResponse r = d.Handle(StartGroup(std::move(auth)));
    EXPECT_EQ(r.status, 202) << r.body;
    auto doc = Json(r);
    std::string_view id;
    EXPECT_EQ(doc["replay_id"].get_string().get(id), simdjson::SUCCESS) << r.body;
    return std::string(id);
  }
  std::string StatusBody(Dashboard& d, const std::string& id, const std::string& auth = "") {
    return d.Handle(Request("GET", "/api/replays/" + id, auth)).body;
  }
  bool Done(Dashboard& d, const std::string& id) {
    return StatusBody(d, id).find(R"("done":true)") != std::string::npos;
  }

  FakeReplay fake_;
  FakeNotifier notifier_;
  std::unique_ptr<Daemon> daemon_;
  simdjson::dom::parser parser_;
  std::vector<std::string> bodies_;
};

TEST_F(DashboardReplayJobsTest, AReplayThatSendsAnswers202AtOnceAndItsStatusFollowsTheGuard) {
  auto d = Make(kWrite);
  HttpServerResponse r = d->Handle(StartGroup());
  ASSERT_EQ(r.status, 202) << r.body;
  auto started = Json(r);
  const std::string id(started["replay_id"].get_string().value());
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(std::string_view(started["status_url"].get_string().value()), "/api/replays/" + id);
  bool location = false;
  for (const auto& [k, v] : r.headers) location |= k == "Location" && v == "/api/replays/" + id;
  EXPECT_TRUE(location);

  // The canary found a re-failure and waits out its window.
  ReplayProgress p;
  p.phase = "waiting";
  p.reason = "canary window 95 s left";
  p.total = 1000;
  p.sent = 10;
  p.refailed = 1;
  p.dlq_receives = 4;
  p.backlog = 37;
  p.backlog_age = seconds(12);
  p.paused_for = std::chrono::milliseconds(2500);
  p.refailures.push_back({.message_id = "orig-1",
                          .new_message_id = "new-1",
                          .destination = "https://sqs/orders",
                          .dlq = "https://sqs/orders-dlq",
                          .found_at = clock_.Now()});
  fake_.Report(p);
  ASSERT_TRUE(Eventually([&] { return StatusBody(*d, id).find("canary window") != std::string::npos; }));
  auto running = Json(d->Handle(Request("GET", "/api/replays/" + id)));
  EXPECT_FALSE(running["done"].get_bool().value());
  EXPECT_EQ(std::string_view(running["state"].get_string().value()), "running");
  EXPECT_TRUE(running["exit_code"].is_null());
  EXPECT_TRUE(running["outcome"].is_null());
  EXPECT_EQ(std::string_view(running["phase"].get_string().value()), "waiting");
  EXPECT_TRUE(running["guarded"].get_bool().value());
  EXPECT_EQ(std::string_view(running["reason"].get_string().value()), "canary window 95 s left");
  EXPECT_EQ(running["total"].get_uint64().value(), 1000u);
  EXPECT_EQ(running["sent"].get_uint64().value(), 10u);
  EXPECT_EQ(running["refailed"].get_uint64().value(), 1u);
  EXPECT_EQ(running["dlq_receives"].get_uint64().value(), 4u);
  EXPECT_EQ(running["backlog"].get_int64().value(), 37);
  EXPECT_EQ(running["backlog_age_s"].get_int64().value(), 12);
  EXPECT_DOUBLE_EQ(running["paused_s"].get_double().value(), 2.5);
  EXPECT_EQ(std::string_view(running["queue"].get_string().value()), "orders-dlq");
  EXPECT_EQ(std::string_view(running["fingerprint"].get_string().value()), "ba7816bf8f01");
  auto refailures = running["refailures"].get_array().value();
  ASSERT_EQ(refailures.size(), 1u);
  EXPECT_EQ(std::string_view(refailures.at(0)["message_id"].get_string().value()), "orig-1");
  EXPECT_EQ(std::string_view(refailures.at(0)["new_message_id"].get_string().value()), "new-1");
  EXPECT_EQ(std::string_view(refailures.at(0)["dlq"].get_string().value()), "https://sqs/orders-dlq");
  EXPECT_EQ(std::string_view(refailures.at(0)["found_at"].get_string().value()), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(fake_.last_actor(), "dlq-archive dashboard, client 127.0.0.1");
  EXPECT_EQ(fake_.last_id(), id);

  // The list has it, without the message ids.
  auto list = Json(d->Handle(Request("GET", "/api/replays")));
  auto replays = list["replays"].get_array().value();
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(std::string_view(replays.at(0)["replay_id"].get_string().value()), id);
  EXPECT_EQ(replays.at(0)["refailed"].get_uint64().value(), 1u);
  EXPECT_EQ(replays.at(0)["refailures"].error(), simdjson::NO_SUCH_FIELD);

  clock_.Advance(seconds(30));
  fake_.Release();
  ASSERT_TRUE(Eventually([&] { return Done(*d, id); }));
  auto done = Json(d->Handle(Request("GET", "/api/replays/" + id)));
  EXPECT_EQ(done["exit_code"].get_int64().value(), 0);
  EXPECT_EQ(std::string_view(done["outcome"].get_string().value()), "ok");
  EXPECT_EQ(std::string_view(done["state"].get_string().value()), "finished");
  EXPECT_NE(std::string_view(done["output"].get_string().value()).find("audit: s3://"), std::string_view::npos);
  EXPECT_EQ(std::string_view(done["started_at"].get_string().value()), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(std::string_view(done["finished_at"].get_string().value()), "2023-11-14T22:13:50.000Z");
}

TEST_F(DashboardReplayJobsTest, AReplayWithoutAGuardSaysItIsSendingThenDone) {
  auto d = Make(kWrite);
  const std::string id = Started(*d);
  ASSERT_TRUE(Eventually([&] { return fake_.calls() == 1; }));
  auto running = Json(d->Handle(Request("GET", "/api/replays/" + id)));
  EXPECT_EQ(std::string_view(running["phase"].get_string().value()), "sending");
  EXPECT_FALSE(running["guarded"].get_bool().value());
  EXPECT_TRUE(running["backlog"].is_null());
  EXPECT_TRUE(running["backlog_age_s"].is_null());
  fake_.Release(5);
  ASSERT_TRUE(Eventually([&] { return Done(*d, id); }));
  auto done = Json(d->Handle(Request("GET", "/api/replays/" + id)));
  EXPECT_EQ(std::string_view(done["phase"].get_string().value()), "done");
  EXPECT_EQ(std::string_view(done["outcome"].get_string().value()), "refailures");
}

TEST_F(DashboardReplayJobsTest, StopEndsTheReplayWith130AndOnlyOnce) {
  auto d = Make(kWrite);
  const std::string id = Started(*d);
  ASSERT_TRUE(Eventually([&] { return fake_.calls() == 1; }));
  // The write token only.
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/" + id + "/stop")).status, 401);
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/" + id + "/stop", "wrong-token-of-some-length")).status, 401);
  EXPECT_FALSE(fake_.SawStop());
  HttpServerResponse stop = d->Handle(Request("POST", "/api/replays/" + id + "/stop", kWrite));
  ASSERT_EQ(stop.status, 202) << stop.body;
  EXPECT_TRUE(Json(stop)["stop_requested"].get_bool().value());
  ASSERT_TRUE(Eventually([&] { return Done(*d, id); }));
  EXPECT_TRUE(fake_.SawStop());
  auto done = Json(d->Handle(Request("GET", "/api/replays/" + id)));
  EXPECT_EQ(done["exit_code"].get_int64().value(), 130);
  EXPECT_EQ(std::string_view(done["outcome"].get_string().value()), "stopped");
  EXPECT_TRUE(done["stop_requested"].get_bool().value());
  EXPECT_NE(std::string_view(done["errors"].get_string().value()).find("batch in flight"), std::string_view::npos);
  // Finished: a second stop is a conflict, not a success.
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/" + id + "/stop", kWrite)).status, 409);
}

TEST_F(DashboardReplayJobsTest, TheRoutesKeepTheDashboardsTokenRules) {
  // A read token: the status (message ids) and the list need it or the write token.
  auto d = Make(kWrite, kRead);
  EXPECT_EQ(d->Handle(StartGroup(kRead)).status, 401);  // starting is an action
  EXPECT_EQ(fake_.calls(), 0);
  const std::string id = Started(*d);
  for (const std::string& path : {std::string("/api/replays"), "/api/replays/" + id}) {
    HttpServerResponse anon = d->Handle(Request("GET", path));
    EXPECT_EQ(anon.status, 401) << path;
    EXPECT_EQ(anon.body.find(id + "\""), std::string::npos) << anon.body;
    EXPECT_EQ(d->Handle(Request("GET", path, "not-the-read-token")).status, 401) << path;
    EXPECT_EQ(d->Handle(Request("GET", path, kRead)).status, 200) << path;
    EXPECT_EQ(d->Handle(Request("GET", path, kWrite)).status, 200) << path;
  }
  // The read token does not stop a replay.
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/" + id + "/stop", kRead)).status, 401);
  EXPECT_FALSE(fake_.SawStop());
  fake_.Release();
  ASSERT_TRUE(Eventually([&] { return StatusBody(*d, id, kRead).find(R"("done":true)") != std::string::npos; }));

  // No write token: nothing starts or stops (403), and the list is empty.
  auto ro = Make("");
  EXPECT_EQ(ro->Handle(StartGroup()).status, 403);
  EXPECT_EQ(ro->Handle(Request("POST", "/api/replays/" + id + "/stop", kWrite)).status, 403);
  auto list = Json(ro->Handle(Request("GET", "/api/replays")));
  EXPECT_EQ(list["replays"].get_array().value().size(), 0u);
  EXPECT_EQ(fake_.calls(), 1);
}

TEST_F(DashboardReplayJobsTest, AnUnknownReplayIs404) {
  auto d = Make(kWrite);
  HttpServerResponse r = d->Handle(Request("GET", "/api/replays/20231114T221320Z-9"));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("keeps its last 50 replays"), std::string::npos) << r.body;
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/20231114T221320Z-9/stop", kWrite)).status, 404);
  for (const char* bad : {"/api/replays/", "/api/replays/a%2Fb", "/api/replays/a/b", "/api/replays/x/stop/now"}) {
    EXPECT_EQ(d->Handle(Request("GET", bad)).status, 404) << bad;
  }
  EXPECT_EQ(d->Handle(Request("POST", "/api/replays/x/pause", kWrite)).status, 404);
  EXPECT_EQ(d->Handle(Request("GET", "/api/replays", "", "")).status, 200);
  HttpServerRequest q = Request("GET", "/api/replays");
  q.query = "queue=bad%20name";
  EXPECT_EQ(d->Handle(q).status, 400);
}

TEST_F(DashboardReplayJobsTest, KeepsTheLastJobsAndRefusesANewOneWhileAllOfThemRun) {
  auto d = Make(kWrite, "", /*keep=*/2);
  const std::string first = Started(*d);
  ASSERT_TRUE(Eventually([&] { return fake_.calls() == 1; }));
  const std::string second = Started(*d);
  ASSERT_TRUE(Eventually([&] { return fake_.calls() == 2; }));
  EXPECT_NE(first, second);
  HttpServerResponse full = d->Handle(StartGroup());
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_NE(full.body.find("2 replays are running"), std::string::npos) << full.body;
  EXPECT_EQ(fake_.calls(), 2);
  // Once they finish, a new one drops the oldest.
  fake_.Release();
  ASSERT_TRUE(Eventually([&] { return Done(*d, first) && Done(*d, second); }));
  const std::string third = Started(*d);
  EXPECT_EQ(d->Handle(Request("GET", "/api/replays/" + first)).status, 404);
  EXPECT_EQ(d->Handle(Request("GET", "/api/replays/" + second)).status, 200);
  auto list = Json(d->Handle(Request("GET", "/api/replays")));
  auto replays = list["replays"].get_array().value();
  ASSERT_EQ(replays.size(), 2u);
  EXPECT_EQ(std::string_view(replays.at(0)["replay_id"].get_string().value()), third);  // newest first
  EXPECT_EQ(std::string_view(replays.at(1)["replay_id"].get_string().value()), second);
  ASSERT_TRUE(Eventually([&] { return Done(*d, third); }));
}

TEST_F(DashboardReplayJobsTest, ADryRunStillAnswersInTheRequest) {
  auto d = Make(kWrite);
  HttpServerResponse r = d->Handle(
      Request("POST", "/api/replay", kWrite, R"({"queue":"orders-dlq","fingerprint":"ba7816bf8f01","dry_run":true})"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(r);
  EXPECT_EQ(doc["count"].get_uint64().value(), 2u);
  EXPECT_EQ(doc["replay_id"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_TRUE(fake_.last_dry_run());
  EXPECT_EQ(Json(d->Handle(Request("GET", "/api/replays")))["replays"].get_array().value().size(), 0u);
}

TEST_F(DashboardReplayJobsTest, TheDashboardStopsItsRunningReplaysWhenItGoes) {
  auto d = Make(kWrite);
  Started(*d);
  ASSERT_TRUE(Eventually([&] { return fake_.calls() == 1; }));
  d.reset();  // returns once the job has returned
  EXPECT_TRUE(fake_.SawStop());
}

TEST(ReplayJobsTest, AJobThatThrowsEndsAsFailedWithTheReason) {
  FakeClock clock;
  ReplayJobs jobs(clock, 4);
  auto id = jobs.Start({.queue = "q"}, [](const ReplayJobControl&) -> DashboardReplayResult {
    throw std::runtime_error("out of luck");
  });
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Eventually([&] { return jobs.Get(*id)->done; }));
  EXPECT_EQ(jobs.Get(*id)->result.exit_code, 1);
  EXPECT_NE(jobs.Get(*id)->result.errors.find("out of luck"), std::string::npos);
  jobs.Shutdown();
  EXPECT_FALSE(jobs.Get(*id).has_value());
  EXPECT_EQ(jobs.Start({.queue = "q"}, [](const ReplayJobControl&) { return DashboardReplayResult{}; }).status().code(),
            ErrorCode::kUnavailable);
}

TEST(DashboardReplayTest, TheGuardsStatusReachesThePageWithEveryFieldAndThePhaseByName) {
  RedriveStatus s;
  s.phase = RedrivePhase::kFinalCheck;
  s.reason = "final window 40 s left";
  s.step = 3;
  s.steps = 3;
  s.total = 500;
  s.sent = 500;
  s.refailed = 2;
  s.dlq_receives = 9;
  s.backlog = 17;
  s.backlog_age = seconds(33);
  s.paused_for = std::chrono::milliseconds(1500);
  s.refailures.push_back({.message_id = "a",
                          .new_message_id = "A",
                          .destination = "d",
                          .dlq = "q",
                          .found_at = SystemTime(seconds(1700000000))});
  s.refailures.push_back({.message_id = "b",
                          .new_message_id = "B",
                          .destination = "d",
                          .dlq = "q",
                          .found_at = SystemTime(seconds(1700000001))});
  ReplayProgress p = ToDashboardProgress(s);
  EXPECT_EQ(p.phase, "final-check");
  EXPECT_EQ(p.reason, "final window 40 s left");
  EXPECT_EQ(p.step, 3);
  EXPECT_EQ(p.steps, 3);
  EXPECT_EQ(p.total, 500u);
  EXPECT_EQ(p.sent, 500u);
  EXPECT_EQ(p.refailed, 2u);
  EXPECT_EQ(p.dlq_receives, 9u);
  EXPECT_EQ(p.backlog, 17);
  EXPECT_EQ(p.backlog_age, seconds(33));
  EXPECT_EQ(p.paused_for, std::chrono::milliseconds(1500));
  ASSERT_EQ(p.refailures.size(), 2u);
  EXPECT_EQ(p.refailures[1].message_id, "b");
  EXPECT_EQ(p.refailures[1].new_message_id, "B");
  EXPECT_EQ(p.refailures[1].destination, "d");
  EXPECT_EQ(p.refailures[1].dlq, "q");
  EXPECT_EQ(p.refailures[1].found_at, SystemTime(seconds(1700000001)));
  s.phase = RedrivePhase::kPaused;
  EXPECT_EQ(ToDashboardProgress(s).phase, "paused");
}

}  // namespace
}  // namespace dlq
