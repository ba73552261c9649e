#include "dashboard/overview_html.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include "common/time_util.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const SystemTime kNow = *ParseIso8601("2026-11-23T12:00:00Z");

OverviewQueue Queue(std::string name, std::optional<SystemTime> expiry = std::nullopt) {
  OverviewQueue q;
  q.group = "orders";
  q.queue = std::move(name);
  q.region = "us-east-1";
  q.retention_s = 345600;
  q.visible = 0;
  q.not_visible = 0;
  q.delayed = 0;
  q.nearest_expiry = expiry;
  q.alarms = {{.kind = "expiry", .state = "OK"}, {.kind = "depth", .state = "OK"}};
  return q;
}

// The data-queue attributes of the rendered rows, in order.
std::vector<std::string> RowNames(const std::string& html) {
  std::vector<std::string> out;
  static const std::regex kRow(R"re(<tr data-queue="([^"]*)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), kRow), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

// The text of the one row named `name` (from its <tr to its </tr>).
std::string RowOf(const std::string& html, const std::string& name) {
  const size_t at = html.find("<tr data-queue=\"" + name + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</tr>", at) + 5 - at);
}

TEST(OverviewHtmlTest, EscapesEveryTextFromTheOverview) {
  Overview o;
  OverviewQueue q = Queue(R"(<script>alert("q")</script>&'x)", kNow + hours(2));
  q.group = R"(g"><img src=x onerror=alert(1)>)";
  q.region = "<b>r&amp;</b>";
  q.failing = true;
  q.error_code = "<svg onload=alert(2)>";
  q.alarms = {{.kind = "<i>expiry</i>", .state = "<ALARM>"}};
  o.queues.push_back(q);
  o.groups.push_back({.name = "<g>", .error = true, .problem = R"(denied: "<script>x</script>" & more)"});
  const std::string html = RenderOverviewHtml(o, kNow);

  // No markup from the data survives; only the renderer's own tags.
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("<img"), std::string::npos) << html;
  EXPECT_EQ(html.find("<svg"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<i>"), std::string::npos) << html;
  EXPECT_EQ(html.find("\"><img"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;&amp;&#39;x"), std::string::npos) << html;
  EXPECT_NE(html.find("g&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;b&gt;r&amp;amp;&lt;/b&gt;"), std::string::npos) << html;
  EXPECT_NE(html.find("<span class=\"state alarm\">ERROR</span> &lt;svg onload=alert(2)&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;i&gt;expiry&lt;/i&gt;: <span class=\"state insufficient\">&lt;ALARM&gt;</span>"),
            std::string::npos);
  EXPECT_NE(
      html.find(
          R"(<p class="error">Group &lt;g&gt;: denied: &quot;&lt;script&gt;x&lt;/script&gt;&quot; &amp; more</p>)"),
      std::string::npos)
      << html;
  // The link is the name, URI-encoded (as encodeURIComponent), then escaped.
  EXPECT_NE(html.find(R"(href="#/queue/%3Cscript%3Ealert(%22q%22)%3C%2Fscript%3E%26&#39;x")"), std::string::npos)
      << html;
  // And the data-queue attribute that app.js and the tests look rows up by.
  EXPECT_EQ(RowNames(html), std::vector<std::string>{"&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;&amp;&#39;x"});
}

TEST(OverviewHtmlTest, AnUnknownExpiryShowsItsReasonAsTheQueuePageDoes) {
  Overview o;
  OverviewQueue unknown = Queue("learning-dlq", kNow);
  unknown.visible = 3;
  unknown.expiry_unknown = "not yet observed: messages arrived since the last look <&>";
  OverviewQueue known = Queue("known-dlq", kNow + hours(30));
  known.visible = 2;
  o.queues = {unknown, known};
  const std::string html = RenderOverviewHtml(o, kNow);

  const std::string row = RowOf(html, "learning-dlq");
  EXPECT_NE(
      row.find("<td title=\"any moment (not yet observed): not yet observed: messages arrived since the last "
               "look &lt;&amp;&gt;\"><span class=\"state warn\">any moment</span><br><span class=\"muted\">not yet "
               "observed: messages arrived since the last look &lt;&amp;&gt;</span></td>"),
      std::string::npos)
      << row;
  EXPECT_EQ(row.find("<meter"), std::string::npos) << row;  // no countdown bar for an unknown expiry
  const std::string other = RowOf(html, "known-dlq");
  EXPECT_NE(other.find("<meter"), std::string::npos) << other;
  EXPECT_EQ(other.find("not yet observed"), std::string::npos) << other;

  // The JSON carries the reason only while there is one.
  const std::string json = OverviewJson(o);
  EXPECT_NE(json.find(R"("expiry_unknown":"not yet observed: messages arrived since the last look <&>")"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("expiry_unknown"), json.rfind("expiry_unknown")) << json;
}

TEST(OverviewHtmlTest, EscapeAndEncodeMatchTheScriptsHelpers) {
  EXPECT_EQ(EscapeHtml(R"(a<b>&"c"'d')"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(EscapeHtml("plain-name_1.fifo"), "plain-name_1.fifo");
  // encodeURIComponent keeps A-Z a-z 0-9 - _ . ! ~ * ' ( ) and encodes UTF-8 bytes.
  EXPECT_EQ(EncodeUriComponent("orders-dlq_1.fifo"), "orders-dlq_1.fifo");
  EXPECT_EQ(EncodeUriComponent("a b/c?d#e&f=!~*'()"), "a%20b%2Fc%3Fd%23e%26f%3D!~*'()");
  EXPECT_EQ(EncodeUriComponent("\xC3\xA9"), "%C3%A9");
}

TEST(OverviewHtmlTest, CountdownsAreRoundedLikeTheScripts) {
  EXPECT_EQ(FormatCountdown(0), "0s");
  EXPECT_EQ(FormatCountdown(59.4), "59s");
  EXPECT_EQ(FormatCountdown(59.5), "1m 0s");  // Math.round: halves up
  EXPECT_EQ(FormatCountdown(3599), "59m 59s");
  EXPECT_EQ(FormatCountdown(3600), "1h 0m");
  EXPECT_EQ(FormatCountdown(86400 * 3 + 3600 * 4 + 60 * 5 + 59), "3d 4h 5m");
  EXPECT_EQ(FormatCountdown(-90), "expired 1m 30s ago");
  EXPECT_EQ(FormatCountdown(-2.5), "expired 2s ago");  // Math.round(-2.5) is -2
}

TEST(OverviewHtmlTest, CountdownsAreRelativeToTheRequestTime) {
  Overview o;
  o.queues.push_back(Queue("soon", kNow + hours(3) + minutes(20) + seconds(5)));
  o.queues.push_back(Queue("later", kNow + hours(24 * 3) + minutes(1)));
  o.queues.push_back(Queue("past", kNow - seconds(30)));
  o.queues.push_back(Queue("empty"));
  const std::string at_now = RenderOverviewHtml(o, kNow);
  // Under 24 h: marked; the cell's title says "in ..."; the bar's label how
  // much of the retention is left.
  EXPECT_NE(RowOf(at_now, "soon").find(R"(<td title="in 3h 20m"><span class="state warn">in 3h 20m</span><br>)"),
            std::string::npos)
      << RowOf(at_now, "soon");
  EXPECT_NE(RowOf(at_now, "soon").find(R"(max="345600" value="12005" low="86400" optimum="345600")"),
            std::string::npos);
  EXPECT_NE(RowOf(at_now, "soon").find(R"(aria-label="3h 20m left of 4d 0h 0m retention")"), std::string::npos);
  EXPECT_NE(RowOf(at_now, "later").find(R"(<span class="">in 3d 0h 1m</span>)"), std::string::npos);
  // A nearest possible expiry in the past: not yet observed.
  EXPECT_NE(RowOf(at_now, "past")
                .find(R"x(<td title="any moment (not yet observed)"><span class="state warn">any moment</span>)x"),
            std::string::npos)
      << RowOf(at_now, "past");
  EXPECT_NE(RowOf(at_now, "past").find(R"(value="0")"), std::string::npos);
  EXPECT_NE(RowOf(at_now, "empty").find(R"(<td><span class="muted">nothing queued</span></td>)"), std::string::npos);

  // Ten minutes later, the same overview says ten minutes less.
  const std::string later = RenderOverviewHtml(o, kNow + minutes(10));
  EXPECT_NE(RowOf(later, "soon").find(">in 3h 10m<"), std::string::npos) << RowOf(later, "soon");
  EXPECT_NE(RowOf(later, "later").find(">in 2d 23h 51m<"), std::string::npos);
  // A source queue that keeps messages longer sets the bar's scale.
  o.queues[0].source_retention_s = 1209600;
  EXPECT_NE(RenderOverviewHtml(o, kNow).find(R"(max="1209600" value="12005" low="302400")"), std::string::npos);
}

TEST(OverviewHtmlTest, DefaultOrderIsNearestExpiryThenNameThenOverviewOrder) {
  Overview o;
  o.queues.push_back(Queue("none-b"));
  o.queues.push_back(Queue("d", kNow + hours(5)));
  o.queues.push_back(Queue("none-a"));
  o.queues.push_back(Queue("c", kNow + hours(1)));
  o.queues.push_back(Queue("b", kNow + hours(1)));  // same moment as c: by name
  o.queues.push_back(Queue("expired", kNow - hours(1)));
  o.queues.push_back(Queue("b", kNow + hours(1)));  // same name (another group): overview order
  o.queues.back().group = "second";
  EXPECT_EQ(OverviewDefaultOrder(o), (std::vector<size_t>{5, 4, 6, 3, 1, 2, 0}));
  const std::string html = RenderOverviewHtml(o, kNow);
  EXPECT_EQ(RowNames(html), (std::vector<std::string>{"expired", "b", "b", "c", "d", "none-a", "none-b"}));
  const size_t first_b = html.find("<tr data-queue=\"b\"");
  EXPECT_LT(html.find(">orders<", first_b), html.find(">second<", first_b));
  // The header says how the rows are sorted.
  EXPECT_NE(html.find(R"(data-key="expiry" aria-sort="ascending")"), std::string::npos);
  EXPECT_NE(html.find(R"(data-key="queue" aria-sort="none")"), std::string::npos);
}

TEST(OverviewHtmlTest, RendersTheFirstWindowAndCountsEveryQueue) {
  Overview o;
  for (int i = 0; i < 50; ++i) o.queues.push_back(Queue(fmt::format("q{:02}", i), kNow + hours(100 - i)));
  const std::string html = RenderOverviewHtml(o, kNow);
  const std::vector<std::string> names = RowNames(html);
  ASSERT_EQ(names.size(), kOverviewFirstRows);
  EXPECT_EQ(names.front(), "q49");  // the soonest expiry
  EXPECT_EQ(names.back(), fmt::format("q{:02}", 50 - kOverviewFirstRows));
  EXPECT_NE(html.find(R"(<table id="queues" aria-rowcount="51">)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span id="shown" class="muted">50 of 50 queues shown</span>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<tr data-queue="q49" aria-rowindex="2">)"), std::string::npos);
  EXPECT_NE(html.find(fmt::format(R"(aria-rowindex="{}">)", kOverviewFirstRows + 1)), std::string::npos);
  EXPECT_EQ(html.find(fmt::format(R"(aria-rowindex="{}">)", kOverviewFirstRows + 2)), std::string::npos);
  EXPECT_EQ(RowNames(RenderOverviewHtml(o, kNow, 3)).size(), 3u);
  // Between the two (empty) spacer rows app.js keeps around its window.
  constexpr std::string_view kSpacer = R"(<tr class="spacer" aria-hidden="true"><td colspan="9"></td></tr>)";
  EXPECT_NE(html.find(std::string(R"(<tbody id="queues-body">)") + std::string(kSpacer) + "<tr data-queue=\"q49\""),
            std::string::npos);
  EXPECT_TRUE(html.ends_with(std::string(kSpacer) + "</tbody></table>"));
  // No action controls: the overview has none, and no form posts anything.
  EXPECT_EQ(html.find("<form"), std::string::npos);
  EXPECT_EQ(html.find("Archive now"), std::string::npos);
  // An empty overview: the table without rows, "0 of 0".
  const std::string none = RenderOverviewHtml(Overview{}, kNow);
  EXPECT_TRUE(RowNames(none).empty());
  EXPECT_NE(none.find("0 of 0 queues shown"), std::string::npos);
  EXPECT_NE(none.find(R"(<span class="n">0</span>queues watched)"), std::string::npos);
}

TEST(OverviewHtmlTest, SummaryCountsAlarmsMessagesAtRiskAndErrors) {
  Overview o;
  OverviewQueue a = Queue("alarming", kNow + hours(2));
  a.visible = 5;
  a.not_visible = 2;
  a.alarms[0].state = "ALARM";
  o.queues.push_back(a);
  OverviewQueue b = Queue("far", kNow + hours(30));  // beyond 24 h: not at risk
  b.visible = 100;
  o.queues.push_back(b);
  OverviewQueue c = Queue("failing", kNow + hours(1));
  c.visible = -1;  // not collected: counts as 0
  c.not_visible = 4;
  c.failing = true;
  c.error_code = "AccessDenied";
  o.queues.push_back(c);
  OverviewQueue d = Queue("uncollected");
  d.collect_error = true;
  d.running = true;
  d.visible = d.not_visible = d.delayed = -1;
  o.queues.push_back(d);
  o.groups.push_back({.name = "ok", .error = false, .problem = ""});
  o.groups.push_back({.name = "warned", .error = false, .problem = "the group's selectors match no queue"});
  o.groups.push_back({.name = "broken", .error = true, .problem = "ListQueues: AccessDenied"});
  const std::string html = RenderOverviewHtml(o, kNow);
  EXPECT_NE(html.find(R"(<span class="n" id="sum-alarm">1</span>queue in ALARM)"), std::string::npos) << html;
  EXPECT_NE(html.find(R"(<span class="n" id="sum-risk">11</span>messages at risk within 24 h)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span class="n" id="sum-errors">3</span>errors)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span class="n">4</span>queues watched)"), std::string::npos);
  EXPECT_NE(html.find(R"(<p class="error">Group warned: the group&#39;s selectors match no queue</p>)"),
            std::string::npos);
  EXPECT_NE(html.find(R"(<p class="error">Group broken: ListQueues: AccessDenied</p>)"), std::string::npos);
  EXPECT_EQ(html.find("Group ok"), std::string::npos);
  // Figures not collected yet are a dash; the flags follow the last run.
  EXPECT_NE(RowOf(html, "uncollected").find(R"(<td class="num">—</td><td class="num">—</td><td class="num">—</td>)"),
            std::string::npos);
  EXPECT_NE(RowOf(html, "uncollected")
                .find(R"(<td title="no run yet, RUNNING, COLLECT ERROR"><span class="muted">no run yet</span><br>)"
                      R"(<span class="state warn">RUNNING</span> <span class="state alarm">COLLECT ERROR</span></td>)"),
            std::string::npos)
      << RowOf(html, "uncollected");
}

TEST(OverviewHtmlTest, LastRunShowsWhenHowManyAndFailure) {
  Overview o;
  OverviewQueue q = Queue("ran.fifo");
  q.fifo = true;
  q.archived = 12;
  q.last_run = OverviewLastRun{.time = kNow - minutes(3) + milliseconds(250), .archived = 7, .ok = false};
  q.failing = true;
  q.error_code = "SlowDown";
  o.queues.push_back(q);
  const std::string row = RowOf(RenderOverviewHtml(o, kNow), "ran.fifo");
  EXPECT_NE(row.find(R"(<a href="#/queue/ran.fifo">ran.fifo</a><span class="muted"> FIFO</span></th>)"),
            std::string::npos)
      << row;
  EXPECT_NE(
      row.find(R"(<td title="2026-11-23 11:57:00Z, 7 archived (failed), ERROR SlowDown">)"
               R"(2026-11-23 11:57:00Z<br>7 archived (failed) <span class="state alarm">ERROR</span> SlowDown</td>)"
               R"(<td class="num">12</td></tr>)"),
      std::string::npos)
      << row;
  EXPECT_NE(row.find(R"(<td title="orders / us-east-1">orders<br><span class="muted">us-east-1</span></td>)"),
            std::string::npos);
  EXPECT_NE(
      row.find(
          R"(<td class="alarms">expiry: <span class="state ok">OK</span><br>depth: <span class="state ok">OK</span></td>)"),
      std::string::npos);
}

TEST(OverviewHtmlTest, OneOfEachIsSingular) {
  Overview o;
  OverviewQueue q = Queue("only");
  q.failing = true;
  q.error_code = "AccessDenied";
  o.queues.push_back(q);
  const std::string html = RenderOverviewHtml(o, kNow);
  EXPECT_NE(html.find("1 of 1 queue shown"), std::string::npos) << html;
  EXPECT_NE(html.find(R"(<span class="n">1</span>queue watched)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span class="n" id="sum-errors">1</span>error<)"), std::string::npos);
  EXPECT_EQ(html.find("queues shown"), std::string::npos) << html;
  EXPECT_EQ(html.find("queues watched"), std::string::npos);
}

}  // namespace
}  // namespace dlq
