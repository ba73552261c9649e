#include "dashboard/dashboard.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "app/dashboard_replay.h"
#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "causes/sidecar.h"
#include "common/time_util.h"
#include "dashboard/request.h"
#include "dashboard/web_assets.h"
#include "monitor/daemon_metrics.h"
#include "monitor/queue_history.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"
#include "unit/raw_http_client.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr char kToken[] = "correct-horse-battery-staple";

// ---- QueueHistory.

QueueSample Sample(int64_t visible) {
  return QueueSample{.time = SystemTime() + seconds(visible), .visible = visible};
}

TEST(QueueHistoryTest, KeepsTheNewestSamplesOldestFirst) {
  QueueHistory h(3);
  EXPECT_TRUE(h.Samples().empty());
  h.Add(Sample(1));
  h.Add(Sample(2));
  ASSERT_EQ(h.Samples().size(), 2u);
  EXPECT_EQ(h.Samples()[0].visible, 1);
  h.Add(Sample(3));
  h.Add(Sample(4));
  h.Add(Sample(5));
  std::vector<QueueSample> s = h.Samples();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].visible, 3);
  EXPECT_EQ(s[1].visible, 4);
  EXPECT_EQ(s[2].visible, 5);
  EXPECT_EQ(h.capacity(), 3u);
}

TEST(QueueHistoryTest, ZeroCapacityKeepsNothing) {
  QueueHistory h(0);
  h.Add(Sample(1));
  EXPECT_EQ(h.size(), 0u);
  EXPECT_TRUE(h.Samples().empty());
}

// ---- Request parsers.

TEST(DashboardRequestTest, QueryStringIsDecodedAndRepeatsAreRejected) {
  auto p = ParseQueryString("queue=orders-dlq&q=time%20out+now&flag&&limit=5");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->at("queue"), "orders-dlq");
  EXPECT_EQ(p->at("q"), "time out now");
  EXPECT_EQ(p->at("flag"), "");
  EXPECT_EQ(p->at("limit"), "5");
  EXPECT_EQ(ParseQueryString("a=1&a=2").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseQueryString("=x").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseQueryString(std::string(kMaxQueryBytes + 1, 'a')).status().code(), ErrorCode::kInvalidArgument);
  std::string many;
  for (size_t i = 0; i <= kMaxQueryParams; ++i) many += "p" + std::to_string(i) + "=1&";
  EXPECT_EQ(ParseQueryString(many).status().code(), ErrorCode::kInvalidArgument);
}

TEST(DashboardRequestTest, PathsNameOneQueueOrMessage) {
  auto qp = ParseQueuePath("/api/queues/orders-dlq.fifo/history");
  ASSERT_TRUE(qp);
  EXPECT_EQ(qp->queue, "orders-dlq.fifo");
  EXPECT_EQ(qp->view, "history");
  EXPECT_FALSE(ParseQueuePath("/api/queues//history"));
  EXPECT_FALSE(ParseQueuePath("/api/queues/a%2Fb/history"));
  EXPECT_FALSE(ParseQueuePath("/api/queues/q/history/more"));
  EXPECT_FALSE(ParseQueuePath("/api/queues/" + std::string(81, 'q')));
  EXPECT_EQ(ParseMessagePath("/api/messages/abc-123"), "abc-123");
  EXPECT_FALSE(ParseMessagePath("/api/messages/"));
  EXPECT_FALSE(ParseMessagePath("/api/messages/a%20b"));
}

TEST(DashboardRequestTest, ReplayBodyNeedsQueueAndIdsAndNothingElse) {
  auto r = ParseReplayRequest(R"({"queue":"orders-dlq","ids":["m1","m2","m1"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->queue, "orders-dlq");
  EXPECT_EQ(r->ids, (std::vector<std::string>{"m1", "m2"}));
  for (const char* bad : {"", "[]", "{", R"({"queue":"q"})", R"({"ids":["m"]})", R"({"queue":"q","ids":[]})",
                          R"({"queue":"q","ids":[1]})", R"({"queue":"bad name","ids":["m"]})",
                          R"({"queue":"q","ids":["m"],"to":"elsewhere"})"}) {
    EXPECT_EQ(ParseReplayRequest(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  std::string many = R"({"queue":"q","ids":[)";
  for (size_t i = 0; i <= kMaxReplayIds; ++i) many += (i ? ",\"m" : "\"m") + std::to_string(i) + "\"";
  EXPECT_EQ(ParseReplayRequest(many + "]}").status().code(), ErrorCode::kInvalidArgument);
}

TEST(DashboardRequestTest, AGroupReplayNamesTheGroupAndSaysWhetherItIsADryRun) {
  auto dry = ParseReplayRequest(R"({"queue":"orders-dlq","fingerprint":"ba7816bf8f01","dry_run":true})");
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->fingerprint, "ba7816bf8f01");
  EXPECT_TRUE(dry->dry_run);
  EXPECT_TRUE(dry->ids.empty());
  auto send = ParseReplayRequest(R"({"queue":"orders-dlq","fingerprint":"ba7816bf8f01","dry_run":false})");
  ASSERT_TRUE(send.ok());
  EXPECT_FALSE(send->dry_run);
  EXPECT_TRUE(ParseReplayRequest(R"({"queue":"q","ids":["m"],"dry_run":true})")->dry_run);
  for (const char* bad : {R"({"queue":"q","fingerprint":"ba7816bf8f01"})",  // a group needs dry_run spelled out
                          R"({"queue":"q","fingerprint":"ba7816bf8f01","ids":["m"],"dry_run":true})",
                          R"({"queue":"q","fingerprint":"BA7816BF8F01","dry_run":true})",
                          R"({"queue":"q","fingerprint":"ba7816","dry_run":true})",
                          R"({"queue":"q","fingerprint":"ba7816bf8f01","dry_run":"yes"})"}) {
    EXPECT_EQ(ParseReplayRequest(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(DashboardRequestTest, AReplayGoesToTheSourceUnlessToSaysOrigin) {
  auto plain = ParseReplayRequest(R"({"queue":"q","ids":["m"]})");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->to_origin);
  EXPECT_FALSE(ParseReplayRequest(R"({"queue":"q","ids":["m"],"to":"source"})")->to_origin);
  auto origin = ParseReplayRequest(
      R"({"queue":"q","fingerprint":"ba7816bf8f01","dry_run":true,"to":"origin","function":"orders-fn:live"})");
  ASSERT_TRUE(origin.ok()) << origin.status().ToString();
  EXPECT_TRUE(origin->to_origin);
  EXPECT_EQ(origin->function, "orders-fn:live");
  EXPECT_EQ(ParseReplayRequest(R"({"queue":"q","ids":["m"],"to":"origin","function":"arn:aws:lambda:us-east-1:)"
                               R"(123456789012:function:orders-fn"})")
                ->function,
            "arn:aws:lambda:us-east-1:123456789012:function:orders-fn");
  for (const char* bad : {R"({"queue":"q","ids":["m"],"to":"queue"})", R"({"queue":"q","ids":["m"],"to":"ORIGIN"})",
                          R"({"queue":"q","ids":["m"],"to":true})"}) {
    auto r = ParseReplayRequest(bad);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(R"(to must be "source")"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(R"(or "origin")"), std::string::npos) << r.status().ToString();
  }
  for (const char* bad : {R"({"queue":"q","ids":["m"],"function":"orders-fn"})",
                          R"({"queue":"q","ids":["m"],"to":"source","function":"orders-fn"})"}) {
    auto r = ParseReplayRequest(bad);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(R"(give it with "to": "origin")"), std::string::npos) << r.status().ToString();
  }
  for (const char* bad : {R"({"queue":"q","ids":["m"],"to":"origin","function":""})",
                          R"({"queue":"q","ids":["m"],"to":"origin","function":"a b"})",
                          R"({"queue":"q","ids":["m"],"to":"origin","function":7})"}) {
    EXPECT_EQ(ParseReplayRequest(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(DashboardRequestTest, SearchNeedsAQueueAndKnownParameters) {
  auto ok = ParseSearchRequest({{"queue", "orders-dlq"}, {"q", "timeout"}, {"limit", "7"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->flags.queues, std::vector<std::string>{"orders-dlq"});
  EXPECT_EQ(ok->flags.body_contains, "timeout");
  EXPECT_EQ(ok->limit, 7u);
  EXPECT_EQ(ParseSearchRequest({{"q", "x"}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseSearchRequest({{"queue", "q"}, {"limit", "0"}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseSearchRequest({{"queue", "q"}, {"limit", "501"}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseSearchRequest({{"queue", "q"}, {"fingerprint", "ba7816bf8f01"}})->flags.fingerprint, "ba7816bf8f01");
  auto unknown = ParseSearchRequest({{"queue", "q"}, {"bodyy", "x"}});
  EXPECT_NE(unknown.status().message().find("unknown search parameter 'bodyy'"), std::string::npos);
}

// ---- The API over a daemon on fakes.

class DashboardTest : public DaemonFixture {
 protected:
  DashboardTest() {
    dlq_url_ = url_;
    source_url_ = *sqs_.CreateQueue(
        "orders",
        {{"RedrivePolicy",
          R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"})"}});
    daemon_ = NewDaemon(notifier_, {});
  }

  Dashboard Make(std::string token) {
    DashboardOptions o;
    o.write_token = std::move(token);
    o.replay = MakeDashboardReplay(clock_);
    return Dashboard(*daemon_, clock_, o);
  }

  void Inject(const std::string& body, SystemTime sent_at, const std::string& tenant = "acme") {
    SendEntry e;
    e.id = "x";
    e.body = body;
    e.message_attributes["tenant"] = MessageAttributeValue{.data_type = "String", .string_value = tenant};
    ASSERT_TRUE(sqs_.InjectMessage(dlq_url_, e, sent_at).ok());
  }

  void Cycle() { CollectOnce(clock_, *daemon_); }

  // Messages about to expire: the expiry alarm archives them within two cycles.
  void ArchiveSome() {
    const SystemTime old = clock_.Now() - hours(95);
    for (int i = 0; i < 3; ++i) Inject("timeout after " + std::to_string(100 + i) + " ms", old);
    Inject("null pointer in handler 7", old, "globex");
    Inject("null pointer in handler 9", old, "globex");
    daemon_->RunOnce();
    daemon_->WaitIdle();  // a learning pass may run
    for (int i = 0; i < 3; ++i) Cycle();
    ASSERT_EQ(sqs_.Depth(dlq_url_), 0u);
  }

  static HttpServerRequest Get(std::string path, std::string query = "") {
    HttpServerRequest r;
    r.method = "GET";
    r.path = std::move(path);
    r.query = std::move(query);
    r.remote_addr = "127.0.0.1";
    return r;
  }
  static HttpServerRequest Post(std::string path, std::string body, std::string auth = "") {
    HttpServerRequest r = Get(std::move(path));
    r.method = "POST";
    r.body = std::move(body);
    if (!auth.empty()) r.headers.emplace_back("authorization", std::move(auth));
    return r;
  }

  std::vector<std::string> AuditKeys() {
    std::vector<std::string> out;
    for (const std::string& key : store_.Keys()) {
      if (key.starts_with("dlq-archive/_audit/") && key.ends_with(".json")) out.push_back(key);
    }
    return out;
  }

  static std::string HeaderOf(const HttpServerResponse& r, std::string_view name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  static simdjson::dom::element Json(simdjson::dom::parser& parser, const HttpServerResponse& r) {
    EXPECT_EQ(r.content_type, "application/json") << r.body;
    simdjson::dom::element doc;
    EXPECT_EQ(parser.parse(r.body).get(doc), simdjson::SUCCESS) << r.body;
    return doc;
  }
  static std::string ErrorOf(const HttpServerResponse& r) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view e;
    if (parser.parse(r.body).get(doc) != simdjson::SUCCESS || doc["error"].get_string().get(e) != simdjson::SUCCESS) {
      return "(no error field) " + r.body;
    }
    return std::string(e);
  }

  // POST /api/replay that sends: 202 with the job's id, then its status once
  // it has finished (the fake clock moves on while it runs, so a guarded
  // replay's windows pass).
  std::string ReplayToEnd(Dashboard& d, const std::string& body, int* http_status = nullptr) {
    HttpServerResponse started = d.Handle(Post("/api/replay", body, std::string("Bearer ") + kToken));
    if (http_status != nullptr) *http_status = started.status;
    EXPECT_EQ(started.status, 202) << started.body;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view id;
    if (parser.parse(started.body).get(doc) != simdjson::SUCCESS || doc["replay_id"].get_string().get(id)) {
      return started.body;
    }
    const std::string path = "/api/replays/" + std::string(id);
    for (int i = 0; i < 5000; ++i) {
      HttpServerResponse status = d.Handle(Get(path));
      if (status.body.find(R"("done":true)") != std::string::npos) return status.body;
      clock_.Advance(seconds(5));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "replay " << id << " did not finish";
    return d.Handle(Get(path)).body;
  }

  FakeNotifier notifier_;
  std::unique_ptr<Daemon> daemon_;
  std::string dlq_url_, source_url_;
};

TEST_F(DashboardTest, ServesTheEmbeddedPageWithAStrictContentSecurityPolicy) {
  Dashboard d = Make("");
  HttpServerResponse page = d.Handle(Get("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/app.js\""), std::string::npos);
  // The page preloads the overview's first answer (app.js takes it with the
  // same plain GET), and that request is answered as it is made.
  EXPECT_NE(page.body.find(R"(<link rel="preload" href="/api/overview" as="fetch" crossorigin="anonymous">)"),
            std::string::npos);
  EXPECT_EQ(d.Handle(Get("/api/overview")).status, 200);
  bool csp = false;
  for (const auto& [k, v] : page.headers) {
    if (k == "Content-Security-Policy") {
      csp = true;
      EXPECT_NE(v.find("default-src 'none'"), std::string::npos);
      EXPECT_NE(v.find("connect-src 'self'"), std::string::npos);
    }
  }
  EXPECT_TRUE(csp);
  // Every embedded asset is served, and none refers to another host.
  ASSERT_GE(WebAssets().size(), 3u);
  size_t total = 0;
  for (const WebAsset& a : WebAssets()) {
    HttpServerResponse r = d.Handle(Get(std::string(a.path)));
    EXPECT_EQ(r.status, 200) << a.path;
    if (a.path != "/") {
      EXPECT_EQ(r.body, a.body);  // the page gets the overview's rows (below)
    }
    EXPECT_EQ(r.body.find("https://"), std::string::npos) << a.path;
    total += a.body.size();
  }
  EXPECT_LT(total, 200u * 1024);  // the page weight target
  EXPECT_EQ(d.Handle(Get("/nope.js")).status, 404);
}

TEST_F(DashboardTest, InfoSaysWhetherActionsExistButNeverTheToken) {
  simdjson::dom::parser parser;
  Dashboard ro = Make("");
  HttpServerResponse r = ro.Handle(Get("/api/dashboard"));
  EXPECT_FALSE(Json(parser, r)["write"].get_bool().value());
  Dashboard rw = Make(kToken);
  r = rw.Handle(Get("/api/dashboard"));
  EXPECT_TRUE(Json(parser, r)["write"].get_bool().value());
  EXPECT_EQ(r.body.find(kToken), std::string::npos);
}

TEST_F(DashboardTest, QueuesCanLeaveOutAlarmHistoryAndOtherQueues) {
  ASSERT_TRUE(sqs_.CreateQueue("other-dlq", {}).ok());
  config_.groups[0].queues.push_back("other-dlq");
  daemon_->Reload(config_);
  Inject("a", clock_.Now() - hours(95));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Cycle();
  Dashboard d = Make("");
  HttpServerResponse full = d.Handle(Get("/api/queues"));
  ASSERT_EQ(full.status, 200);
  EXPECT_EQ(full.body, daemon_->views().QueuesJson());
  EXPECT_NE(full.body.find("\"history\":[{"), std::string::npos);
  EXPECT_NE(full.body.find("other-dlq"), std::string::npos);
  HttpServerResponse light = d.Handle(Get("/api/queues", "history=0"));
  EXPECT_EQ(light.body.find("\"history\""), std::string::npos);
  EXPECT_NE(light.body.find("\"state\":\"OK\""), std::string::npos);  // the states stay
  EXPECT_LT(light.body.size(), full.body.size());
  HttpServerResponse one = d.Handle(Get("/api/queues", "queue=other-dlq"));
  EXPECT_NE(one.body.find("\"queue\":\"other-dlq\""), std::string::npos);
  EXPECT_EQ(one.body.find("\"queue\":\"orders-dlq\""), std::string::npos);
  EXPECT_EQ(d.Handle(Get("/api/queues", "history=no")).status, 400);
  EXPECT_EQ(d.Handle(Get("/api/queues", "queue=bad/name")).status, 400);
}

TEST_F(DashboardTest, HistoryHasOneSamplePerCollection) {
  Dashboard d = Make("");
  Inject("a", clock_.Now() - hours(1));
  Inject("b", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Cycle();
  Cycle();
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/history"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["retention_s"].get_int64().value(), 345600);
  simdjson::dom::array samples = doc["samples"].get_array().value();
  ASSERT_EQ(samples.size(), 3u);
  for (simdjson::dom::element s : samples) {
    EXPECT_EQ(s["visible"].get_int64().value(), 2);
    EXPECT_TRUE(s["expiry_in_s"].is_double() || s["expiry_in_s"].is_int64());
  }
  HttpServerResponse missing = d.Handle(Get("/api/queues/other-dlq/history"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(ErrorOf(missing), "queue other-dlq is not watched by this daemon");
}

TEST_F(DashboardTest, SearchFindsAnArchivedMessageAndItsDetailShowsItsAttributes) {
  ArchiveSome();
  Dashboard d = Make("");
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/search", "queue=orders-dlq&q=timeout+after+101"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  ASSERT_EQ(doc["count"].get_uint64().value(), 1u);
  std::string id(doc["messages"].at(0)["message_id"].get_string().value());
  EXPECT_EQ(doc["messages"].at(0)["preview"].get_string().value(), "timeout after 101 ms");

  HttpServerResponse all = d.Handle(Get("/api/search", "queue=orders-dlq&limit=2"));
  auto all_doc = Json(parser, all);
  EXPECT_EQ(all_doc["count"].get_uint64().value(), 2u);
  EXPECT_TRUE(all_doc["more"].get_bool().value());

  HttpServerResponse detail = d.Handle(Get("/api/messages/" + id, "queue=orders-dlq"));
  ASSERT_EQ(detail.status, 200) << detail.body;
  auto rec = Json(parser, detail)["record"];
  EXPECT_EQ(rec["message_id"].get_string().value(), id);
  EXPECT_EQ(rec["body"].get_string().value(), "timeout after 101 ms");
  EXPECT_EQ(rec["message_attributes"]["tenant"]["StringValue"].get_string().value(), "acme");

  HttpServerResponse nothing = d.Handle(Get("/api/messages/no-such-id", "queue=orders-dlq"));
  EXPECT_EQ(nothing.status, 404);
  EXPECT_EQ(ErrorOf(nothing), "message no-such-id is not in the archive of orders-dlq");
}

TEST_F(DashboardTest, FailureGroupsComeFromTheFingerprintStats) {
  ArchiveSome();
  Dashboard d = Make("");
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/failures"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["groups_total"].get_uint64().value(), 2u);
  auto groups = doc["report"]["groups"].get_array().value();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups.at(0)["count"].get_uint64().value(), 3u);
  EXPECT_EQ(groups.at(1)["count"].get_uint64().value(), 2u);
  HttpServerResponse one = d.Handle(Get("/api/queues/orders-dlq/failures", "limit=1"));
  EXPECT_EQ(Json(parser, one)["report"]["groups"].get_array().value().size(), 1u);
}

TEST_F(DashboardTest, ACancelledSearchAnswersWhatItReadAndSaysItWasCutShort) {
  ArchiveSome();
  Dashboard d = Make("");
  std::atomic<bool> cancelled{false};
  // The client goes away as soon as the first object is fetched.
  store_.SetGetHook([&](const std::string&) { cancelled = true; });
  HttpServerRequest request = Get("/api/search", "queue=orders-dlq");
  request.cancelled = &cancelled;
  HttpServerResponse r = d.Handle(request);
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser parser;
  auto doc = Json(parser, r);
  EXPECT_FALSE(doc["complete"].get_bool().value());
  EXPECT_EQ(doc["stopped"].get_string().value(), "cancelled");
  EXPECT_EQ(doc["objects_scanned"].get_uint64().value(), 0u);
  EXPECT_GT(doc["objects_total"].get_uint64().value(), 0u);
  EXPECT_EQ(doc["count"].get_uint64().value(), 0u);

  // Not found in what was read is not "not in the archive".
  cancelled = false;
  HttpServerRequest detail = Get("/api/messages/some-id", "queue=orders-dlq");
  detail.cancelled = &cancelled;
  HttpServerResponse m = d.Handle(detail);
  EXPECT_EQ(m.status, 503) << m.body;
  EXPECT_NE(ErrorOf(m).find("not found in the part of the archive"), std::string::npos) << m.body;

  // Uncancelled, the same search reads everything and says so.
  store_.SetGetHook(nullptr);
  cancelled = false;
  auto full = Json(parser, d.Handle(request));
  EXPECT_TRUE(full["complete"].get_bool().value());
  EXPECT_TRUE(full["stopped"].is_null());
  EXPECT_EQ(full["objects_scanned"].get_uint64().value(), full["objects_total"].get_uint64().value());
  EXPECT_EQ(full["count"].get_uint64().value(), 5u);
}

TEST_F(DashboardTest, AScanPastItsDeadlineAnswersWhatItReadAndSaysSo) {
  ArchiveSome();
  DashboardOptions o;
  o.scan_deadline = std::chrono::seconds(10);
  Dashboard d(*daemon_, clock_, o);
  // Fetching takes 11 s: the deadline passes while the first object is read.
  store_.SetGetHook([&](const std::string&) { clock_.Advance(seconds(11)); });
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/failures"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_FALSE(doc["complete"].get_bool().value());
  EXPECT_EQ(doc["stopped"].get_string().value(), "deadline");
  EXPECT_LT(doc["objects_scanned"].get_uint64().value(), doc["objects_total"].get_uint64().value());

  // A deadline that passes while listing: 504, nothing read.
  DashboardOptions none;
  none.scan_deadline = std::chrono::seconds(0);
  Dashboard late(*daemon_, clock_, none);
  HttpServerResponse l = late.Handle(Get("/api/search", "queue=orders-dlq"));
  EXPECT_EQ(l.status, 504) << l.body;
  auto ldoc = Json(parser, l);
  EXPECT_EQ(ldoc["stopped"].get_string().value(), "deadline");
  EXPECT_EQ(ldoc["objects_scanned"].get_uint64().value(), 0u);
}

TEST_F(DashboardTest, HostileObjectsAreCountedAsSkippedLinesAndTheSearchStillCompletes) {
  ArchiveSome();
  // Beside the real objects: a gzip bomb (64 MiB without a newline, ~64 KiB)
  // and an object holding one 20 MiB line. (That neither is held whole is
  // ScanTest's to show: it can count reserved bytes.)
  auto key = [&](const std::string& batch) {
    return KeyTemplate::Default().Render({"dlq-archive", "orders-dlq", "", "", clock_.Now(), batch});
  };
  store_.Insert(key("00000000000000b1"), GzipCompress(std::string(size_t{64} << 20, 'z'), 9).value());
  store_.Insert(key("00000000000000b2"),
                GzipCompress("{\"schema\":1,\"body\":\"" + std::string(size_t{20} << 20, 'a') + "\"}\n", 9).value());
  DashboardOptions o;
  o.request_memory = size_t{8} << 20;  // the smallest the config allows: lines over 768 KiB are skipped
  Dashboard d(*daemon_, clock_, o);
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/search", "queue=orders-dlq"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["count"].get_uint64().value(), 5u);  // every real message
  EXPECT_EQ(doc["skipped_lines"].get_uint64().value(), 2u);
  EXPECT_TRUE(doc["complete"].get_bool().value());
  EXPECT_EQ(doc["objects_scanned"].get_uint64().value(), doc["objects_total"].get_uint64().value());
}

TEST_F(DashboardTest, ScansBeyondTheConcurrentLimitGet503WithRetryAfter) {
  ArchiveSome();
  DashboardOptions o;
  o.max_concurrent_scans = 1;
  Dashboard d(*daemon_, clock_, o);
  // While one search is inside the archive, a second one is turned away.
  HttpServerResponse second;
  std::atomic<bool> nested{false};
  store_.SetGetHook([&](const std::string&) {
    if (nested.exchange(true)) return;
    second = d.Handle(Get("/api/search", "queue=orders-dlq"));
  });
  HttpServerResponse first = d.Handle(Get("/api/search", "queue=orders-dlq"));
  store_.SetGetHook(nullptr);
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_EQ(HeaderOf(second, "Retry-After"), "1");
  EXPECT_NE(ErrorOf(second).find("already reading the archive"), std::string::npos) << second.body;
  // The slot is given back.
  EXPECT_EQ(d.Handle(Get("/api/search", "queue=orders-dlq")).status, 200);
}

TEST_F(DashboardTest, RecentObjectsAreTheQueuesArchiveObjects) {
  ArchiveSome();
  Dashboard d = Make("");
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/objects"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["total"].get_uint64().value(), store_.Keys().size());
  simdjson::dom::array objects = doc["objects"].get_array().value();
  ASSERT_GT(objects.size(), 0u);
  for (auto o : objects) {
    EXPECT_TRUE(std::string_view(o["key"].get_string().value()).starts_with("dlq-archive/orders-dlq/"));
  }
}

TEST_F(DashboardTest, ArchiveFailuresAreJsonErrorsNotCrashes) {
  ArchiveSome();
  Dashboard d = Make("");
  store_.FailNextList(Unavailable("S3 is down"));
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/objects"));
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(ErrorOf(r).find("S3 is down"), std::string::npos);
}

// Reads the archive cannot make say what to check, like the CLI's reading
// commands: the exact S3 permissions, or the group whose bucket is missing.
TEST_F(DashboardTest, ArchiveReadsThatAreRefusedNameThePermissionAndTheArns) {
  ArchiveSome();
  Dashboard d = Make("");
  const std::string denied_hint =
      "s3:ListBucket on arn:aws:s3:::archive-bucket and s3:GetObject on arn:aws:s3:::archive-bucket/dlq-archive/*";
  for (const std::string path : {"/api/queues/orders-dlq/objects", "/api/queues/orders-dlq/failures",
                                 "/api/search?queue=orders-dlq&q=timeout"}) {
    store_.FailNextList(
        PermissionDenied("AccessDenied: Access Denied").WithAws(AwsErrorInfo{"AccessDenied", 403, "R1"}));
    const size_t q = path.find('?');
    HttpServerResponse r =
        q == std::string::npos ? d.Handle(Get(path)) : d.Handle(Get(path.substr(0, q), path.substr(q + 1)));
    EXPECT_EQ(r.status, 403) << path;
    EXPECT_NE(ErrorOf(r).find(denied_hint), std::string::npos) << path << ": " << ErrorOf(r);
  }
  store_.FailNextList(
      NotFound("NoSuchBucket: The specified bucket does not exist").WithAws(AwsErrorInfo{"NoSuchBucket", 404, "R2"}));
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/objects"));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(ErrorOf(r).find("bucket archive-bucket does not exist: check the name in group orders's destination"),
            std::string::npos)
      << ErrorOf(r);
  // The message detail reads the same way.
  store_.FailNextList(PermissionDenied("AccessDenied: Access Denied").WithAws(AwsErrorInfo{"AccessDenied", 403, "R3"}));
  HttpServerResponse m = d.Handle(Get("/api/messages/no-such-id", "queue=orders-dlq"));
  EXPECT_EQ(m.status, 403);
  EXPECT_NE(ErrorOf(m).find(denied_hint), std::string::npos) << ErrorOf(m);
}

// Issue 28: `re=(a|b)*c` on a 200 KB body killed the daemon (std::regex
// recursion). Over a 1 MiB body the search answers, with the right match.
TEST_F(DashboardTest, SearchWithABacktrackingRegexOverAOneMebibyteBodyAnswers) {
  std::string ab;
  while (ab.size() < (size_t{1} << 20) - 64) ab += "ab";  // with its attribute, within 1 MiB
  Inject(ab, clock_.Now() - hours(95));
  Inject(ab + "c", clock_.Now() - hours(95));
  ArchiveSome();
  Dashboard d = Make("");
  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/search", "queue=orders-dlq&re=(a%7Cb)*c"));
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  EXPECT_EQ(Json(parser, r)["count"].get_uint64().value(), 1u);
}

TEST_F(DashboardTest, BadRequestsAre400WithTheReason) {
  Dashboard d = Make(kToken);
  HttpServerResponse r = d.Handle(Get("/api/search", "q=x"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find("queue"), std::string::npos);
  r = d.Handle(Get("/api/search", "queue=orders-dlq&since=yesterday-ish"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find("--since"), std::string::npos);
  r = d.Handle(Get("/api/search", "queue=orders-dlq&re=(unclosed"));
  EXPECT_EQ(r.status, 400);
  r = d.Handle(Get("/api/search", "queue=orders-dlq&re=(a)%5C1"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find(R"(--body-regex '(a)\1': backreferences (\1) are not supported)"), std::string::npos)
      << ErrorOf(r);
  r = d.Handle(Get("/api/queues/orders-dlq/objects", "limit=abc"));
  EXPECT_EQ(r.status, 400);
  r = d.Handle(Post("/api/replay", "{not json", std::string("Bearer ") + kToken));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find("not JSON"), std::string::npos);
  r = d.Handle(Get("/api/unknown"));
  EXPECT_EQ(r.status, 404);
}

TEST_F(DashboardTest, WithoutATokenActionsAreRefusedAndNothingHappens) {
  Inject("a", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Dashboard d = Make("");
  HttpServerResponse r = d.Handle(Post("/api/queues/orders-dlq/archive", "", std::string("Bearer ") + kToken));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(ErrorOf(r).find("no dashboard.write_token"), std::string::npos);
  r = d.Handle(Post("/api/replay", R"({"queue":"orders-dlq","ids":["m"]})"));
  EXPECT_EQ(r.status, 403);
  Cycle();
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 1u);  // not archived: an hour old, far from expiry
  EXPECT_TRUE(store_.Keys().empty());
}

TEST_F(DashboardTest, AMissingOrWrongTokenIs401) {
  Inject("a", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Dashboard d = Make(kToken);
  for (std::string auth :
       {std::string(), std::string("Bearer wrong-token-but-long-enough"), std::string("Basic ") + kToken,
        std::string("Bearer ") + kToken + "x", std::string("Bearer ")}) {
    HttpServerResponse r = d.Handle(Post("/api/queues/orders-dlq/archive", "", auth));
    EXPECT_EQ(r.status, 401) << auth;
    EXPECT_EQ(r.body.find(kToken), std::string::npos);
    bool challenge = false;
    for (const auto& [k, v] : r.headers) challenge |= k == "WWW-Authenticate" && v == "Bearer";
    EXPECT_TRUE(challenge);
  }
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 1u);
}

// A client posting without the token as fast as it can writes one log line
// per 10 s, each saying how many were held back; every refusal is counted.
TEST_F(DashboardTest, RefusalsAreCountedAndLoggedAtMostOncePer10Seconds) {
  metrics::Registry registry;
  DashboardOptions o;
  o.write_token = kToken;
  o.replay = MakeDashboardReplay(clock_);
  o.registry = &registry;
  Dashboard d(*daemon_, clock_, o);
  ScopedCapturingLogger log;
  auto lines = [&](std::string_view event) {
    std::vector<std::string> found;
    for (const auto& e : log->entries()) {
      if (e.event == event) found.push_back(e.line);
    }
    return found;
  };
  for (int i = 0; i < 50; ++i) EXPECT_EQ(d.Handle(Post("/api/queues/orders-dlq/archive", "")).status, 401);
  EXPECT_EQ(lines("dashboard_action_refused").size(), 1u);
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_EQ(d.Handle(Post("/api/replay", "{}", "Bearer wrong-token-but-long-enough")).status, 401);
  auto written = lines("dashboard_action_refused");
  ASSERT_EQ(written.size(), 2u);
  EXPECT_NE(written[1].find(R"("suppressed_since_last":49)"), std::string::npos) << written[1];
  EXPECT_NE(written[1].find(R"("reason":"wrong_token")"), std::string::npos) << written[1];
  // Reads of message content have a throttle of their own.
  Dashboard reads = [&] {
    DashboardOptions ro = o;
    ro.read_token = "read-token-long-enough-1234";
    return Dashboard(*daemon_, clock_, ro);
  }();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(reads.Handle(Get("/api/search")).status, 401);
  EXPECT_EQ(lines("dashboard_read_refused").size(), 1u);
  const std::string text = registry.Render();
  EXPECT_NE(text.find(R"(dlq_archive_dashboard_refusals_total{access="write",reason="no_token"} 50)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(dlq_archive_dashboard_refusals_total{access="write",reason="wrong_token"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(dlq_archive_dashboard_refusals_total{access="read",reason="no_token"} 3)"), std::string::npos);
}

// Over HTTP the token is checked from the head: a 1 MiB body announced
// without the token is refused before it is sent, and the connection closed.
TEST_F(DashboardTest, WithoutTheTokenABodyIsNeverRead) {
  Dashboard d = Make(kToken);
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(options);
  d.Register(server);
  ASSERT_TRUE(server.Start().ok());
  for (const char* path : {"/api/replay", "/api/queues/orders-dlq/archive"}) {
    std::string refused = RawHttpExchange(
        server.port(), std::string("POST ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n");
    EXPECT_EQ(refused.find("HTTP/1.1 401"), 0u) << path << ": " << refused;
    EXPECT_NE(refused.find("Connection: close"), std::string::npos) << refused;
  }
  server.Stop();
}

TEST_F(DashboardTest, ArchiveNowArchivesEveryMessageAtTheNextCollection) {
  for (int i = 0; i < 4; ++i) Inject("fresh " + std::to_string(i), clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 4u);  // no alarm: nothing archived by itself
  Dashboard d = Make(kToken);
  HttpServerResponse r = d.Handle(Post("/api/queues/orders-dlq/archive", "", std::string("Bearer ") + kToken));
  EXPECT_EQ(r.status, 202) << r.body;
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 0u);
  EXPECT_EQ(daemon_->views().Queue("orders-dlq")->archived, 4u);
  EXPECT_EQ(d.Handle(Post("/api/queues/nope-dlq/archive", "", std::string("Bearer ") + kToken)).status, 404);

  // The run wrote one audit record: who asked, what it did.
  std::vector<std::string> audits = AuditKeys();
  ASSERT_EQ(audits.size(), 1u);
  auto text = store_.Get(audits[0]);
  ASSERT_TRUE(text.ok());
  simdjson::dom::parser parser;
  simdjson::dom::element audit;
  ASSERT_EQ(parser.parse(*text).get(audit), simdjson::SUCCESS) << *text;
  EXPECT_EQ(audit["kind"].get_string().value(), "archive");
  EXPECT_EQ(audit["outcome"].get_string().value(), "done");
  EXPECT_EQ(audit["caller_arn"].get_string().value(), "dlq-archive dashboard, client 127.0.0.1");
  EXPECT_EQ(audit["source"].get_string().value(), dlq_url_);
  EXPECT_EQ(audit["destination"].get_string().value(), "s3://archive-bucket/dlq-archive");
  EXPECT_EQ(audit["counts"]["archived"].get_uint64().value(), 4u);
  EXPECT_EQ(audit["counts"]["deleted"].get_uint64().value(), 4u);
  EXPECT_GE(audit["counts"]["objects"].get_uint64().value(), 1u);
  EXPECT_EQ(text->find(kToken), std::string::npos);
}

// Over HTTP, as `curl -X POST` sends it: no body and no Content-Length.
TEST_F(DashboardTest, ArchiveNowWithoutABodyOverHttpIsAcceptedOrAJsonError) {
  Inject("fresh", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Dashboard d = Make(kToken);
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(options);
  d.Register(server);
  ASSERT_TRUE(server.Start().ok());
  const std::string request =
      "POST /api/queues/orders-dlq/archive HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  std::string refused = RawHttpExchange(server.port(), request + "\r\n");
  EXPECT_EQ(refused.find("HTTP/1.1 401"), 0u) << refused;
  EXPECT_NE(refused.find(R"({"error":"this action needs the dashboard's write token)"), std::string::npos) << refused;
  std::string accepted =
      RawHttpExchange(server.port(), request + "Authorization: Bearer " + std::string(kToken) + "\r\n\r\n");
  EXPECT_EQ(accepted.find("HTTP/1.1 202"), 0u) << accepted;
  EXPECT_NE(accepted.find(R"({"queue":"orders-dlq","requested":true,)"), std::string::npos) << accepted;
  server.Stop();
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 0u);
}

TEST_F(DashboardTest, ArchiveNowThatFailsWritesAFailedAuditRecord) {
  Inject("fresh", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Dashboard d = Make(kToken);
  ASSERT_EQ(d.Handle(Post("/api/queues/orders-dlq/archive", "", std::string("Bearer ") + kToken)).status, 202);
  store_.FailNextPut(PermissionDenied("AccessDenied: not allowed to write"), 1);
  Cycle();
  EXPECT_EQ(sqs_.Depth(dlq_url_), 1u);  // not archived, so not deleted
  std::vector<std::string> audits = AuditKeys();
  ASSERT_EQ(audits.size(), 1u);
  auto text = store_.Get(audits[0]);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find(R"("outcome":"failed")"), std::string::npos) << *text;
  EXPECT_NE(text->find(R"("archived":0)"), std::string::npos) << *text;

  // Nothing retries it by itself: later collections write no more records.
  Cycle();
  EXPECT_EQ(AuditKeys().size(), 1u);
  EXPECT_EQ(sqs_.Depth(dlq_url_), 1u);
}

TEST_F(DashboardTest, OverviewIsSmallCachedPerGenerationAndAnswers304WhenUnchanged) {
  for (int i = 0; i < 2; ++i) Inject("fresh " + std::to_string(i), clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  daemon_->RunOnce();   // its expiries are known
  Dashboard d = Make("");
  HttpServerResponse first = d.Handle(Get("/api/overview"));
  ASSERT_EQ(first.status, 200) << first.body;
  std::string etag = HeaderOf(first, "ETag");
  ASSERT_EQ(etag.size(), 34u) << etag;  // a quoted digest
  simdjson::dom::parser parser;
  auto doc = Json(parser, first);
  auto q = doc["queues"].at(0);
  EXPECT_EQ(q["queue"].get_string().value(), "orders-dlq");
  EXPECT_EQ(q["group"].get_string().value(), "orders");
  EXPECT_EQ(q["visible"].get_int64().value(), 2);
  EXPECT_EQ(q["retention_s"].get_int64().value(), 345600);
  EXPECT_FALSE(q["nearest_expiry"].is_null());
  EXPECT_EQ(q["alarms"].at(0)["kind"].get_string().value(), "expiry");
  EXPECT_EQ(q["alarms"].at(0)["state"].get_string().value(), "INSUFFICIENT_DATA");
  EXPECT_TRUE(q["last_run"].is_null());
  EXPECT_EQ(doc["groups"].at(0)["name"].get_string().value(), "orders");
  EXPECT_FALSE(doc["groups"].at(0)["error"].get_bool().value());
  // No reasons, no history: smaller than the lightest /api/queues.
  EXPECT_EQ(first.body.find("reason"), std::string::npos);
  EXPECT_LT(first.body.size() * 2, daemon_->views().QueuesJson({.history = false, .queue = ""}).size());

  // Same generation: the same bytes; the ETag back gives 304 with no body.
  HttpServerRequest again = Get("/api/overview");
  again.headers.emplace_back("if-none-match", etag);
  HttpServerResponse not_modified = d.Handle(again);
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_TRUE(not_modified.body.empty());
  EXPECT_EQ(HeaderOf(not_modified, "ETag"), etag);
  HttpServerRequest other = Get("/api/overview");
  other.headers.emplace_back("If-None-Match", "\"0123\", W/" + etag);
  EXPECT_EQ(d.Handle(other).status, 304);
  other.headers.back().second = "\"0123\"";
  EXPECT_EQ(d.Handle(other).status, 200);

  // A collection with nothing new: a new generation, the same bytes, still 304.
  const uint64_t generation = daemon_->generation();
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  EXPECT_GT(daemon_->generation(), generation);
  EXPECT_EQ(d.Handle(again).status, 304);

  // A change shows at the next generation, under a new ETag.
  Inject("third", clock_.Now() - hours(1));
  clock_.Advance(seconds(60));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  HttpServerResponse changed = d.Handle(again);
  ASSERT_EQ(changed.status, 200);
  EXPECT_NE(HeaderOf(changed, "ETag"), etag);
  EXPECT_EQ(Json(parser, changed)["queues"].at(0)["visible"].get_int64().value(), 3);

  // ArchiveNow moves the generation too (the page shows the request at once).
  const uint64_t before = daemon_->generation();
  ASSERT_TRUE(daemon_->ArchiveNow("orders-dlq").ok());
  EXPECT_GT(daemon_->generation(), before);

  EXPECT_EQ(d.Handle(Get("/api/overview", "history=0")).status, 400);
}

TEST_F(DashboardTest, ThePageCarriesTheOverviewsFirstRowsAsOfEachRequest) {
  // The source keeps messages 1 day, the DLQ 4: a message seen arriving after
  // the queue was empty expires 3 days after that at the soonest.
  ASSERT_TRUE(sqs_.SetQueueAttributes(source_url_, {{"MessageRetentionPeriod", "86400"}}).ok());
  daemon_->RunOnce();  // empty
  clock_.Advance(std::chrono::minutes(1));
  for (int i = 0; i < 2; ++i) Inject("fresh " + std::to_string(i), clock_.Now());
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  Dashboard d = Make("");
  HttpServerResponse page = d.Handle(Get("/"));
  ASSERT_EQ(page.status, 200);
  // The rows are inside <div id="view">, in the page as embedded around them.
  std::string_view embedded;
  for (const WebAsset& a : WebAssets()) {
    if (a.path == "/") embedded = a.body;
  }
  ASSERT_FALSE(embedded.empty());
  const size_t view = page.body.find(R"(<div id="view"><h1>Dead-letter queues</h1>)");
  ASSERT_NE(view, std::string::npos) << page.body;
  EXPECT_EQ(page.body.substr(0, view), embedded.substr(0, embedded.find(R"(<div id="view">)")));
  EXPECT_TRUE(page.body.ends_with(embedded.substr(embedded.find(R"(<div id="view">)") + 15)));
  EXPECT_NE(page.body.find(R"(<tr data-queue="orders-dlq" aria-rowindex="2">)"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find(R"(<td class="num">2</td>)"), std::string::npos);  // visible, as collected
  EXPECT_NE(page.body.find("1 of 1 queue shown"), std::string::npos);
  EXPECT_NE(page.body.find(">in 2d 23h 59m<"), std::string::npos) << page.body;
  // Still the strict policy: the rows are plain HTML, nothing inline runs.
  EXPECT_NE(HeaderOf(page, "Content-Security-Policy").find("script-src 'self'; style-src 'self'"), std::string::npos);
  EXPECT_EQ(HeaderOf(page, "Cache-Control"), "no-cache");
  const std::string etag = HeaderOf(page, "ETag");
  ASSERT_EQ(etag.size(), 34u);

  // The same bytes: 304 for the ETag.
  HttpServerRequest again = Get("/");
  again.headers.emplace_back("If-None-Match", etag);
  HttpServerResponse not_modified = d.Handle(again);
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_TRUE(not_modified.body.empty());
  // Time passes: the countdowns move, so the page is new (no stale rows).
  clock_.Advance(std::chrono::minutes(10));
  HttpServerResponse later = d.Handle(again);
  ASSERT_EQ(later.status, 200);
  EXPECT_NE(HeaderOf(later, "ETag"), etag);
  EXPECT_NE(later.body.find(">in 2d 23h 49m<"), std::string::npos);
  // New data shows at the next collection.
  Inject("third", clock_.Now() - hours(1));
  daemon_->RunOnce();
  daemon_->WaitIdle();  // a learning pass may run
  EXPECT_NE(d.Handle(Get("/index.html")).body.find(R"(<td class="num">3</td>)"), std::string::npos);
  // HEAD and the other assets are unchanged.
  HttpServerRequest head = Get("/");
  head.method = "HEAD";
  EXPECT_EQ(d.Handle(head).status, 200);
}

TEST_F(DashboardTest, ReplayWithTheTokenSendsToTheSourceAndWritesTheAuditRecord) {
  ArchiveSome();
  Dashboard d = Make(kToken);
  simdjson::dom::parser parser;
  auto found = Json(parser, d.Handle(Get("/api/search", "queue=orders-dlq&q=null+pointer")));
  ASSERT_EQ(found["count"].get_uint64().value(), 2u);
  std::string id(found["messages"].at(0)["message_id"].get_string().value());
  std::string body(found["messages"].at(0)["preview"].get_string().value());

  const std::string status = ReplayToEnd(d, R"({"queue":"orders-dlq","ids":[")" + id + R"("]})");
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(status).get(doc), simdjson::SUCCESS) << status;
  EXPECT_EQ(doc["exit_code"].get_int64().value(), 0) << status;
  EXPECT_EQ(std::string_view(doc["outcome"].get_string().value()), "ok");
  EXPECT_NE(std::string_view(doc["output"].get_string().value()).find("sent 1"), std::string_view::npos) << status;
  // To the source, guarded by default: the guard's last status reached the job.
  EXPECT_TRUE(doc["guarded"].get_bool().value()) << status;
  EXPECT_EQ(std::string_view(doc["phase"].get_string().value()), "done") << status;
  EXPECT_EQ(doc["total"].get_uint64().value(), 1u) << status;
  EXPECT_EQ(doc["sent"].get_uint64().value(), 1u) << status;
  EXPECT_EQ(doc["refailed"].get_uint64().value(), 0u) << status;
  std::vector<Message> on_source = sqs_.Messages(source_url_);
  ASSERT_EQ(on_source.size(), 1u);
  EXPECT_EQ(on_source[0].body, body);
  EXPECT_EQ(on_source[0].message_attributes.at("tenant").string_value, "globex");
  size_t audits = 0;
  for (const std::string& key : store_.Keys()) {
    if (!key.starts_with("dlq-archive/_audit/") || !key.ends_with(".json")) continue;  // not the replay ledger
    ++audits;
    auto text = store_.Get(key);
    ASSERT_TRUE(text.ok());
    EXPECT_NE(text->find(id), std::string::npos);
    EXPECT_NE(text->find("dlq-archive dashboard, client 127.0.0.1"), std::string::npos);
  }
  EXPECT_EQ(audits, 1u);

  // An id that is not archived: nothing selected, nothing sent, and the
  // status says so (the summary's "selected 0", or why the guard could not
  // start).
  const std::string none = ReplayToEnd(d, R"({"queue":"orders-dlq","ids":["not-archived"]})");
  simdjson::dom::parser parser3;
  simdjson::dom::element none_doc;
  ASSERT_EQ(parser3.parse(none).get(none_doc), simdjson::SUCCESS) << none;
  const std::string said = std::string(none_doc["output"].get_string().value()) + "\n" +
                           std::string(none_doc["errors"].get_string().value());
  EXPECT_TRUE(said.find("selected 0") != std::string::npos || said.find("nothing was sent") != std::string::npos)
      << none;
  EXPECT_EQ(sqs_.Messages(source_url_).size(), 1u);
}

TEST_F(DashboardTest, FailureGroupsHaveIdsThatTheSearchTakes) {
  ArchiveSome();
  Dashboard d = Make("");
  simdjson::dom::parser parser;
  auto failures = Json(parser, d.Handle(Get("/api/queues/orders-dlq/failures")));
  auto group = failures["report"]["groups"].at(0);
  const std::string key(group["key"].get_string().value());
  const std::string id(group["id"].get_string().value());
  EXPECT_EQ(key, "timeout after <num> ms");
  EXPECT_EQ(id, GroupId(key));
  simdjson::dom::parser parser2;
  auto found = Json(parser2, d.Handle(Get("/api/search", "queue=orders-dlq&fingerprint=" + id)));
  EXPECT_EQ(found["count"].get_uint64().value(), 3u);
  simdjson::dom::array messages = found["messages"].get_array().value();
  for (auto m : messages) {
    EXPECT_EQ(std::string_view(m["fingerprint_id"].get_string().value()), id);
    EXPECT_EQ(std::string_view(m["fingerprint"].get_string().value()), key);
  }
  HttpServerResponse bad = d.Handle(Get("/api/search", "queue=orders-dlq&fingerprint=nothex"));
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(DashboardTest, ReplayThisGroupDryRunShowsCountAndDestinationsThenSendsOnlyThatGroup) {
  ArchiveSome();
  Dashboard d = Make(kToken);
  const std::string id = GroupId("null pointer in handler <num>");
  const std::string auth = std::string("Bearer ") + kToken;
  simdjson::dom::parser parser;
  HttpServerResponse dry =
      d.Handle(Post("/api/replay", R"({"queue":"orders-dlq","fingerprint":")" + id + R"(","dry_run":true})", auth));
  ASSERT_EQ(dry.status, 200) << dry.body;
  auto doc = Json(parser, dry);
  EXPECT_TRUE(doc["dry_run"].get_bool().value());
  EXPECT_EQ(std::string_view(doc["fingerprint"].get_string().value()), id);
  EXPECT_EQ(doc["count"].get_uint64().value(), 2u);
  auto destinations = doc["destinations"].get_array().value();
  ASSERT_EQ(destinations.size(), 1u);
  EXPECT_EQ(std::string_view(destinations.at(0)["queue_url"].get_string().value()), source_url_);
  EXPECT_EQ(destinations.at(0)["count"].get_uint64().value(), 2u);
  EXPECT_EQ(std::string_view(doc["output"].get_string().value()).find("would send m"), std::string_view::npos)
      << "per-message lines are counted, not listed: " << doc["output"].get_string().value();
  EXPECT_NE(std::string_view(doc["output"].get_string().value()).find("would send 2, failed 0"), std::string_view::npos)
      << dry.body;
  EXPECT_TRUE(sqs_.Messages(source_url_).empty());  // a dry run sends nothing
  EXPECT_TRUE(AuditKeys().empty());

  // Without the token: refused, nothing sent.
  EXPECT_EQ(
      d.Handle(Post("/api/replay", R"({"queue":"orders-dlq","fingerprint":")" + id + R"(","dry_run":false})")).status,
      401);
  EXPECT_TRUE(sqs_.Messages(source_url_).empty());

  simdjson::dom::parser parser2;
  const std::string sent = ReplayToEnd(d, R"({"queue":"orders-dlq","fingerprint":")" + id + R"(","dry_run":false})");
  simdjson::dom::element sent_doc;
  ASSERT_EQ(parser2.parse(sent).get(sent_doc), simdjson::SUCCESS) << sent;
  EXPECT_EQ(std::string_view(sent_doc["fingerprint"].get_string().value()), id);
  EXPECT_EQ(sent_doc["exit_code"].get_int64().value(), 0) << sent;
  EXPECT_NE(std::string_view(sent_doc["output"].get_string().value()).find("sent 2"), std::string_view::npos) << sent;
  std::vector<Message> on_source = sqs_.Messages(source_url_);
  ASSERT_EQ(on_source.size(), 2u);
  for (const Message& m : on_source) EXPECT_TRUE(m.body.starts_with("null pointer in handler")) << m.body;
  EXPECT_EQ(AuditKeys().size(), 1u);
}

// The dashboard renders the replay's structured result (the `summary`, as
// `replay --output json` gives it), not the command's text.
TEST_F(DashboardTest, AGroupReplayAnswersItsStructuredSummary) {
  ArchiveSome();
  Dashboard d = Make(kToken);
  const std::string id = GroupId("null pointer in handler <num>");
  const std::string auth = std::string("Bearer ") + kToken;
  simdjson::dom::parser parser;
  HttpServerResponse dry =
      d.Handle(Post("/api/replay", R"({"queue":"orders-dlq","fingerprint":")" + id + R"(","dry_run":true})", auth));
  ASSERT_EQ(dry.status, 200) << dry.body;
  auto summary = Json(parser, dry)["summary"];
  EXPECT_TRUE(summary["dry_run"].get_bool().value()) << dry.body;
  EXPECT_EQ(summary["buckets"]["selected"].get_uint64().value(), 2u) << dry.body;
  EXPECT_EQ(summary["buckets"]["would_send"].get_uint64().value(), 2u) << dry.body;
  EXPECT_EQ(summary["dry_run_lines"].get_array().value().size(), 2u) << dry.body;
  EXPECT_EQ(summary["exit_code"].get_int64().value(), 0) << dry.body;

  simdjson::dom::parser parser2;
  const std::string sent = ReplayToEnd(d, R"({"queue":"orders-dlq","fingerprint":")" + id + R"(","dry_run":false})");
  simdjson::dom::element doc;
  ASSERT_EQ(parser2.parse(sent).get(doc), simdjson::SUCCESS) << sent;
  auto done = doc["summary"];
  EXPECT_FALSE(done["dry_run"].get_bool().value()) << sent;
  EXPECT_EQ(done["buckets"]["sent"].get_uint64().value(), 2u) << sent;
  EXPECT_EQ(done["sent_by_destination"][source_url_].get_uint64().value(), 2u) << sent;
  EXPECT_NE(std::string_view(done["audit"].get_string().value()).find("_audit/"), std::string_view::npos) << sent;
  EXPECT_EQ(std::string_view(done["guard"]["phase"].get_string().value()), "done") << sent;
}

// "to" reaches the replay function as the selection's to_origin (and
// "function" with it), for the dry run and for the job; refusals are 400s
// and reach nothing.
TEST_F(DashboardTest, ToOriginReachesTheReplayAndABadToIsA400NamingTheChoices) {
  Cycle();  // the daemon watches orders-dlq
  Mutex mu;
  std::vector<DashboardReplaySelection> seen;
  DashboardOptions o;
  o.write_token = kToken;
  o.replay = [&](const QueueArchiveAccess&, const DashboardReplaySelection& what, const std::string&,
                 const ReplayJobControl&) {
    MutexLock lock(mu);
    seen.push_back(what);
    return DashboardReplayResult{};
  };
  Dashboard d(*daemon_, clock_, o);
  const std::string auth = std::string("Bearer ") + kToken;
  const std::string group = R"({"queue":"orders-dlq","fingerprint":"ba7816bf8f01",)";
  HttpServerResponse dry =
      d.Handle(Post("/api/replay", group + R"("dry_run":true,"to":"origin","function":"orders-fn"})", auth));
  ASSERT_EQ(dry.status, 200) << dry.body;
  simdjson::dom::parser parser;
  EXPECT_EQ(std::string_view(Json(parser, dry)["to"].get_string().value()), "origin") << dry.body;
  const std::string job = ReplayToEnd(d, group + R"("dry_run":false,"to":"origin"})");
  EXPECT_NE(job.find(R"("to":"origin")"), std::string::npos) << job;
  ASSERT_EQ(d.Handle(Post("/api/replay", group + R"("dry_run":true})", auth)).status, 200);
  {
    MutexLock lock(mu);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_TRUE(seen[0].to_origin);
    EXPECT_TRUE(seen[0].dry_run);
    EXPECT_EQ(seen[0].function, "orders-fn");
    EXPECT_TRUE(seen[1].to_origin);
    EXPECT_FALSE(seen[1].dry_run);
    EXPECT_TRUE(seen[1].function.empty());
    EXPECT_FALSE(seen[2].to_origin);  // the default: the source queue
  }

  HttpServerResponse bad = d.Handle(Post("/api/replay", group + R"("dry_run":true,"to":"lambda"})", auth));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(ErrorOf(bad).find(R"(to must be "source" (each message's source queue) or "origin")"), std::string::npos)
      << bad.body;
  HttpServerResponse lone = d.Handle(Post("/api/replay", group + R"("dry_run":true,"function":"orders-fn"})", auth));
  EXPECT_EQ(lone.status, 400) << lone.body;
  EXPECT_NE(ErrorOf(lone).find(R"(give it with "to": "origin")"), std::string::npos) << lone.body;
  MutexLock lock(mu);
  EXPECT_EQ(seen.size(), 3u);  // the refused requests reached nothing
}

// The daemon's group clients with a Lambda function whose DeadLetterConfig
// targets orders-dlq: MakeDashboardReplay's replay back to the origin.
class DashboardOriginTest : public DashboardTest {
 protected:
  static constexpr char kFunctionArn[] = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn";

  DashboardOriginTest() {
    FunctionConfiguration fn;
    fn.function_name = "orders-fn";
    fn.function_arn = kFunctionArn;
    fn.dead_letter_target_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq";
    fn.timeout_seconds = 3;
    lambda_.AddFunction(fn);
    DaemonOptions options;
    options.serve_http = false;
    auto factory = [this](const GroupConfig&) -> Result<GroupClients> {
      GroupClients c;
      c.sqs = &sqs_;
      c.store = &store_;
      c.lambda = &lambda_;
      c.default_region = "us-east-1";
      return c;
    };
    daemon_ = std::make_unique<Daemon>(config_, factory, notifier_, clock_, registry_, metrics_, options);
  }
  ~DashboardOriginTest() override { daemon_.reset(); }  // before the fake Lambda goes

  // Failed asynchronous invocations of orders-fn as Lambda leaves them in its
  // DLQ, about to expire: archived within two cycles.
  void ArchiveLambdaFailures(int n) {
    const SystemTime old = clock_.Now() - hours(95);
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = R"({"order":)" + std::to_string(i) + "}";
      e.message_attributes = {{"RequestID", {"String", "req-" + std::to_string(i), ""}},
                              {"ErrorCode", {"Number", "200", ""}},
                              {"ErrorMessage", {"String", "boom", ""}}};
      ASSERT_TRUE(sqs_.InjectMessage(dlq_url_, e, old).ok());
    }
    daemon_->RunOnce();
    daemon_->WaitIdle();
    for (int i = 0; i < 3; ++i) Cycle();
    ASSERT_EQ(sqs_.Depth(dlq_url_), 0u);
  }

  std::string AllIds(Dashboard& d) {
    simdjson::dom::parser parser;
    auto found = Json(parser, d.Handle(Get("/api/search", "queue=orders-dlq&q=order")));
    std::string ids;
    simdjson::dom::array messages = found["messages"].get_array().value();
    for (auto m : messages)
      ids += (ids.empty() ? "\"" : ",\"") + std::string(m["message_id"].get_string().value()) + "\"";
    return ids;
  }

  FakeLambdaApi lambda_;
};

TEST_F(DashboardOriginTest, ADryRunToTheOriginListsTheFunctionAsTheDestinationAndSendsNothing) {
  ArchiveLambdaFailures(3);
  Dashboard d = Make(kToken);
  const std::string ids = AllIds(d);
  const std::string auth = std::string("Bearer ") + kToken;
  HttpServerResponse dry = d.Handle(
      Post("/api/replay", R"({"queue":"orders-dlq","ids":[)" + ids + R"(],"dry_run":true,"to":"origin"})", auth));
  ASSERT_EQ(dry.status, 200) << dry.body;
  simdjson::dom::parser parser;
  auto doc = Json(parser, dry);
  EXPECT_EQ(doc["count"].get_uint64().value(), 3u) << dry.body;
  auto destinations = doc["destinations"].get_array().value();
  ASSERT_EQ(destinations.size(), 1u) << dry.body;
  EXPECT_EQ(std::string_view(destinations.at(0)["destination"].get_string().value()), kFunctionArn);
  EXPECT_EQ(destinations.at(0)["count"].get_uint64().value(), 3u);
  EXPECT_EQ(std::string_view(doc["summary"]["destination"].get_string().value()), "origin") << dry.body;
  EXPECT_EQ(doc["summary"]["would_send_by_destination"][kFunctionArn].get_uint64().value(), 3u) << dry.body;
  EXPECT_TRUE(lambda_.invocations().empty());
  EXPECT_TRUE(sqs_.Messages(source_url_).empty());
  EXPECT_TRUE(AuditKeys().empty());

  // The same messages to the source queue: the SQS source, not the function.
  simdjson::dom::parser parser2;
  HttpServerResponse to_source =
      d.Handle(Post("/api/replay", R"({"queue":"orders-dlq","ids":[)" + ids + R"(],"dry_run":true})", auth));
  ASSERT_EQ(to_source.status, 200) << to_source.body;
  auto source_destinations = Json(parser2, to_source)["destinations"].get_array().value();
  ASSERT_EQ(source_destinations.size(), 1u) << to_source.body;
  EXPECT_EQ(std::string_view(source_destinations.at(0)["destination"].get_string().value()), source_url_);
}

// "function" is --function: the function of messages that do not name
// theirs (a Lambda DLQ's). Two functions whose DeadLetterConfig targets the
// DLQ: without it the dry run is refused (400) pointing at the field; with
// it, the function named; one that does not exist is refused, named.
TEST_F(DashboardOriginTest, TheRequestsFunctionIsWhereMessagesThatDoNotNameTheirsGo) {
  FunctionConfiguration fixed;
  fixed.function_name = "orders-fn-v2";
  fixed.function_arn = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn-v2";
  fixed.dead_letter_target_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq";  // a guarded run watches it
  fixed.timeout_seconds = 3;
  lambda_.AddFunction(fixed);
  ArchiveLambdaFailures(2);
  Dashboard d = Make(kToken);
  const std::string selection = R"({"queue":"orders-dlq","ids":[)" + AllIds(d) + R"(],"dry_run":true,"to":"origin")";
  const std::string auth = std::string("Bearer ") + kToken;
  HttpServerResponse which = d.Handle(Post("/api/replay", selection + "}", auth));
  EXPECT_EQ(which.status, 400) << which.body;
  simdjson::dom::parser parser0;
  EXPECT_NE(std::string_view(Json(parser0, which)["errors"].get_string().value())
                .find("target of 2 functions (orders-fn, orders-fn-v2); name one with the function field"),
            std::string_view::npos)
      << which.body;
  HttpServerResponse dry = d.Handle(Post("/api/replay", selection + R"(,"function":"orders-fn-v2"})", auth));
  ASSERT_EQ(dry.status, 200) << dry.body;
  simdjson::dom::parser parser;
  auto destinations = Json(parser, dry)["destinations"].get_array().value();
  ASSERT_EQ(destinations.size(), 1u) << dry.body;
  EXPECT_EQ(std::string_view(destinations.at(0)["destination"].get_string().value()), fixed.function_arn);
  EXPECT_EQ(destinations.at(0)["count"].get_uint64().value(), 2u);

  HttpServerResponse gone = d.Handle(Post("/api/replay", selection + R"(,"function":"orders-fn-gone"})", auth));
  EXPECT_EQ(gone.status, 400) << gone.body;
  simdjson::dom::parser parser2;
  EXPECT_NE(std::string_view(Json(parser2, gone)["errors"].get_string().value()).find("orders-fn-gone"),
            std::string_view::npos)
      << gone.body;
  EXPECT_TRUE(lambda_.invocations().empty());
}

TEST_F(DashboardOriginTest, AReplayToTheOriginInvokesTheFunctionWithEachBodyAndWritesTheAuditRecord) {
  ArchiveLambdaFailures(3);
  Dashboard d = Make(kToken);
  const std::string status =
      ReplayToEnd(d, R"({"queue":"orders-dlq","ids":[)" + AllIds(d) + R"(],"dry_run":false,"to":"origin"})");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(status).get(doc), simdjson::SUCCESS) << status;
  EXPECT_EQ(doc["exit_code"].get_int64().value(), 0) << status;
  EXPECT_EQ(std::string_view(doc["to"].get_string().value()), "origin") << status;
  EXPECT_EQ(doc["summary"]["sent_by_destination"][kFunctionArn].get_uint64().value(), 3u) << status;
  std::vector<std::string> payloads;
  for (const InvokeRequest& rq : lambda_.invocations()) payloads.push_back(rq.payload);
  std::sort(payloads.begin(), payloads.end());
  EXPECT_EQ(payloads, (std::vector<std::string>{R"({"order":0})", R"({"order":1})", R"({"order":2})"}));
  EXPECT_TRUE(sqs_.Messages(source_url_).empty());
  EXPECT_EQ(AuditKeys().size(), 1u);
}

// ---- Causes (issue 40): the archive's `_causes/` sidecar on the failure
// groups and the message page.

class DashboardCausesTest : public DashboardTest {
 protected:
  // The ids of the archived messages whose body contains `q`, in the
  // search's order.
  std::vector<std::string> IdsOf(Dashboard& d, const std::string& q) {
    simdjson::dom::parser parser;
    auto doc = Json(parser, d.Handle(Get("/api/search", "queue=orders-dlq&q=" + q)));
    std::vector<std::string> ids;
    simdjson::dom::array messages = doc["messages"].get_array().value();
    for (auto m : messages) ids.emplace_back(m["message_id"].get_string().value());
    return ids;
  }

  CauseRecord Found(const std::string& id) const {
    CauseRecord r;
    r.queue = "orders-dlq";
    r.message_id = id;
    r.looked_up_at = clock_.Now();
    r.status = CauseStatus::kFound;
    r.log_groups = {"/aws/lambda/orders-worker"};
    Cause c;
    c.type = "Runtime.ExitError";
    c.message = "RequestId: req-1 Error: Runtime exited with error: exit status 1";
    c.key = "Runtime.ExitError: RequestId: <id> Error: Runtime exited with error: exit status <num>";
    c.stack = "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 9, in handler";
    c.request_id = "req-1";
    c.log_group = "/aws/lambda/orders-worker";
    c.log_stream = "2026/11/29/[$LATEST]abc";
    c.timestamp_ms = 1'700'000'000'123;
    c.context_lines = {"START RequestId: req-1 Version: $LATEST", "handling " + id,
                       "<script>alert('from the logs')</script><b>bold</b>"};
    r.cause = std::move(c);
    return r;
  }

  CauseRecord NotMentioned(const std::string& id) const {
    CauseRecord r;
    r.queue = "orders-dlq";
    r.message_id = id;
    r.looked_up_at = clock_.Now();
    r.status = CauseStatus::kNotMentioned;
    r.reason = "no log line of /aws/lambda/orders-worker mentions the message id: log the SQS message id";
    r.log_groups = {"/aws/lambda/orders-worker"};
    return r;
  }

  void Keep(const std::vector<CauseRecord>& records) {
    ASSERT_TRUE(WriteCauseRecords(store_, "dlq-archive", records, clock_.Now()).ok());
  }
};

TEST_F(DashboardCausesTest, FailureGroupsCarryTheirKeptCauseOrWhyNoneWasFound) {
  ArchiveSome();
  Dashboard d = Make("");
  const std::vector<std::string> timeouts = IdsOf(d, "timeout"), nulls = IdsOf(d, "null+pointer");
  ASSERT_EQ(timeouts.size(), 3u);
  ASSERT_EQ(nulls.size(), 2u);
  // Two of the three timeouts have a found cause, the third was never looked
  // up; both null pointers were looked up and not mentioned.
  Keep({Found(timeouts[0]), Found(timeouts[1]), NotMentioned(nulls[0]), NotMentioned(nulls[1])});

  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/failures"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["cause_notes"].get_array().value().size(), 0u);
  EXPECT_TRUE(doc["causes"].get_bool().value()) << r.body;
  auto groups = doc["report"]["groups"].get_array().value();
  ASSERT_EQ(groups.size(), 2u);
  auto found = groups.at(0)["cause"];
  EXPECT_EQ(groups.at(0)["key"].get_string().value(), "timeout after <num> ms");
  EXPECT_EQ(found["type"].get_string().value(), "Runtime.ExitError");
  EXPECT_EQ(found["message"].get_string().value(), "RequestId: req-1 Error: Runtime exited with error: exit status 1");
  EXPECT_EQ(found["found"].get_uint64().value(), 2u);
  EXPECT_EQ(found["answered"].get_uint64().value(), 2u);
  EXPECT_TRUE(found["absence"].error() == simdjson::NO_SUCH_FIELD);
  auto absent = groups.at(1)["cause"];
  EXPECT_EQ(absent["key"].get_string().value(), "");
  EXPECT_EQ(absent["absence"].get_string().value(), "not_mentioned");
  EXPECT_EQ(absent["reason"].get_string().value(), NotMentioned("x").reason);
  EXPECT_EQ(absent["answered"].get_uint64().value(), 2u);
}

TEST_F(DashboardCausesTest, AMessageAnswerCarriesWhereItWasLoggedAndTheLogLinesOrWhyNone) {
  ArchiveSome();
  Dashboard d = Make("");
  const std::vector<std::string> timeouts = IdsOf(d, "timeout"), nulls = IdsOf(d, "null+pointer");
  ASSERT_EQ(timeouts.size(), 3u);
  ASSERT_EQ(nulls.size(), 2u);
  Keep({Found(timeouts[0]), NotMentioned(nulls[0])});

  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/messages/" + timeouts[0], "queue=orders-dlq"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  EXPECT_EQ(doc["cause_notes"].get_array().value().size(), 0u);
  auto cause = doc["cause"];
  EXPECT_EQ(cause["status"].get_string().value(), "found");
  EXPECT_EQ(cause["message_id"].get_string().value(), timeouts[0]);
  auto c = cause["cause"];
  EXPECT_EQ(c["type"].get_string().value(), "Runtime.ExitError");
  EXPECT_EQ(c["log_group"].get_string().value(), "/aws/lambda/orders-worker");
  EXPECT_EQ(c["log_stream"].get_string().value(), "2026/11/29/[$LATEST]abc");
  EXPECT_EQ(c["request_id"].get_string().value(), "req-1");
  EXPECT_EQ(c["time"].get_string().value(), FormatIso8601(FromUnixMillis(1'700'000'000'123)));
  EXPECT_NE(std::string_view(c["stack"].get_string().value()).find("app.py"), std::string_view::npos);
  auto lines = c["context"].get_array().value();
  ASSERT_EQ(lines.size(), 3u);
  // The lines are data, exactly as logged: the page sets them as text.
  EXPECT_EQ(lines.at(2).get_string().value(), "<script>alert('from the logs')</script><b>bold</b>");

  auto none = Json(parser, d.Handle(Get("/api/messages/" + nulls[0], "queue=orders-dlq")))["cause"];
  EXPECT_EQ(none["status"].get_string().value(), "not_mentioned");
  EXPECT_EQ(none["reason"].get_string().value(), NotMentioned("x").reason);
  EXPECT_TRUE(none["cause"].error() == simdjson::NO_SUCH_FIELD);

  // Never looked up: null.
  auto never = Json(parser, d.Handle(Get("/api/messages/" + timeouts[1], "queue=orders-dlq")));
  EXPECT_TRUE(never["cause"].is_null());
}

TEST_F(DashboardCausesTest, AnUnreadableSidecarIsANoteAndThePagesStillAnswer) {
  ArchiveSome();
  Dashboard d = Make("");
  const std::vector<std::string> timeouts = IdsOf(d, "timeout");
  ASSERT_EQ(timeouts.size(), 3u);
  Keep({Found(timeouts[0])});
  const std::string bad = "dlq-archive/_causes/orders-dlq/20261129T000000Z-00000000000000ff.jsonl.gz";
  store_.Insert(bad, "not gzip at all");

  simdjson::dom::parser parser;
  HttpServerResponse r = d.Handle(Get("/api/queues/orders-dlq/failures"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json(parser, r);
  auto notes = doc["cause_notes"].get_array().value();
  ASSERT_EQ(notes.size(), 1u) << r.body;
  EXPECT_NE(std::string_view(notes.at(0).get_string().value()).find(bad), std::string_view::npos) << r.body;
  // The readable object still gives the group its cause.
  EXPECT_EQ(doc["report"]["groups"].at(0)["cause"]["found"].get_uint64().value(), 1u) << r.body;
  HttpServerResponse m = d.Handle(Get("/api/messages/" + timeouts[0], "queue=orders-dlq"));
  ASSERT_EQ(m.status, 200) << m.body;
  auto mdoc = Json(parser, m);
  EXPECT_EQ(mdoc["cause_notes"].get_array().value().size(), 1u);
  EXPECT_EQ(mdoc["cause"]["status"].get_string().value(), "found");

  // A sidecar that cannot be read at all: the groups and the message answer
  // without causes, and say why.
  store_.SetGetHook([&](const std::string& key) {
    if (key.find("/_causes/") != std::string::npos) store_.FailNextGet(Unavailable("S3 is down for the sidecar"));
  });
  HttpServerResponse down = d.Handle(Get("/api/queues/orders-dlq/failures"));
  ASSERT_EQ(down.status, 200) << down.body;
  auto ddoc = Json(parser, down);
  auto dnotes = ddoc["cause_notes"].get_array().value();
  ASSERT_EQ(dnotes.size(), 1u) << down.body;
  EXPECT_NE(std::string_view(dnotes.at(0).get_string().value()).find("S3 is down for the sidecar"),
            std::string_view::npos);
  EXPECT_FALSE(ddoc["causes"].get_bool().value()) << down.body;
  EXPECT_EQ(ddoc["report"]["groups"].get_array().value().size(), 2u);
  HttpServerResponse mdown = d.Handle(Get("/api/messages/" + timeouts[0], "queue=orders-dlq"));
  ASSERT_EQ(mdown.status, 200) << mdown.body;
  auto mddoc = Json(parser, mdown);
  EXPECT_TRUE(mddoc["cause"].is_null());
  EXPECT_EQ(mddoc["cause_notes"].get_array().value().size(), 1u);
  store_.SetGetHook(nullptr);
}

}  // namespace
}  // namespace dlq
