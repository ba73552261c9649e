#include "dashboard/overview_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "common/markup.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr double kDay = 86400;

struct Column {
  std::string_view key, label;
  bool num;
};
// app.js's `columns`, in order.
constexpr Column kColumns[] = {
    {"queue", "Queue", false},       {"group", "Group / region", false},     {"visible", "Visible", true},
    {"inflight", "In flight", true}, {"delayed", "Delayed", true},           {"expiry", "Nearest expiry", false},
    {"alarms", "Alarms", false},     {"lastrun", "Last archive run", false}, {"archived", "Archived", true},
};

int64_t Millis(SystemTime t) {
  return ToUnixMillis(t);
}

// Seconds from `now_ms` to the queue's nearest expiry (app.js's secondsToExpiry).
std::optional<double> SecondsToExpiry(const OverviewQueue& q, int64_t now_ms) {
  if (!q.nearest_expiry) return std::nullopt;
  return static_cast<double>(Millis(*q.nearest_expiry) - now_ms) / 1000;
}

// A number as JavaScript's String(n) writes it, for the values used here
// (shortest round trip, no exponent below 1e21).
std::string JsNumber(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// app.js's count(): "—" for a figure not collected yet.
std::string Count(int64_t n) {
  return n < 0 ? "—" : std::to_string(n);
}

// app.js's fmtTime: "2026-11-23 12:30:00Z".
std::string FormatTime(SystemTime t) {
  std::string iso = FormatIso8601(t);  // 2026-11-23T12:30:00.123Z
  iso[10] = ' ';
  return iso.substr(0, 19) + "Z";
}

std::string FormatExpiry(double seconds) {
  return seconds <= 0 ? "any moment (not yet observed)" : "in " + FormatCountdown(seconds);
}

std::string_view StateClass(std::string_view state) {
  return state == "ALARM" ? "alarm" : state == "OK" ? "ok" : "insufficient";
}

void AppendExpiryCell(const OverviewQueue& q, int64_t now_ms, std::string& out) {
  const std::optional<double> t = SecondsToExpiry(q, now_ms);
  if (!t) {
    out += R"(<td><span class="muted">nothing queued</span></td>)";
    return;
  }
  if (!q.expiry_unknown.empty()) {
    // The queue page's text; the reason takes the meter's line.
    fmt::format_to(std::back_inserter(out),
                   R"(<td title="{}"><span class="state warn">any moment</span><br><span class="muted">{}</span></td>)",
                   EscapeHtml(FormatExpiry(0) + ": " + q.expiry_unknown), EscapeHtml(q.expiry_unknown));
    return;
  }
  const double retention = static_cast<double>(
      std::max<int64_t>(1, q.source_retention_s > 0 ? std::max(q.retention_s, q.source_retention_s) : q.retention_s));
  const double left = std::max(0.0, std::min(retention, *t));
  const std::string text = FormatExpiry(*t);
  fmt::format_to(std::back_inserter(out), R"(<td title="{}"><span class="{}">{}</span><br>)", EscapeHtml(text),
                 *t < kDay ? "state warn" : "", EscapeHtml(*t <= 0 ? "any moment" : text));
  fmt::format_to(std::back_inserter(out),
                 R"(<meter min="0" max="{0}" value="{1}" low="{2}" optimum="{0}" aria-label="{3}"></meter></td>)",
                 JsNumber(retention), JsNumber(left), JsNumber(retention * 0.25),
                 EscapeHtml(FormatCountdown(left) + " left of " + FormatCountdown(retention) + " retention"));
}

// app.js's overviewRow, with the aria-rowindex renderWindow adds.
void AppendRow(const OverviewQueue& q, size_t index, int64_t now_ms, std::string& out) {
  const std::string name = EscapeHtml(q.queue);
  fmt::format_to(
      std::back_inserter(out),
      R"(<tr data-queue="{0}" aria-rowindex="{1}"><th scope="row" title="{0}"><a href="#/queue/{2}">{0}</a>)", name,
      index + 2, EscapeHtml(EncodeUriComponent(q.queue)));
  if (q.fifo) out += R"(<span class="muted"> FIFO</span>)";
  out += "</th>";
  fmt::format_to(std::back_inserter(out), R"(<td title="{}">{}<br><span class="muted">{}</span></td>)",
                 EscapeHtml(q.group + " / " + q.region), EscapeHtml(q.group), EscapeHtml(q.region));
  fmt::format_to(std::back_inserter(out), R"(<td class="num">{}</td><td class="num">{}</td><td class="num">{}</td>)",
                 Count(q.visible), Count(q.not_visible), Count(q.delayed));
  AppendExpiryCell(q, now_ms, out);

  out += R"(<td class="alarms">)";
  if (q.alarms.empty()) out += R"(<span class="muted">none</span>)";
  for (size_t i = 0; i < q.alarms.size(); ++i) {
    if (i > 0) out += "<br>";
    fmt::format_to(std::back_inserter(out), R"({}: <span class="state {}">{}</span>)", EscapeHtml(q.alarms[i].kind),
                   StateClass(q.alarms[i].state), EscapeHtml(q.alarms[i].state));
  }
  out += "</td>";

  // The last run: when and how many on two lines, the flags after them.
  std::vector<std::string> flag_html, title;
  if (q.failing) {
    flag_html.push_back(R"(<span class="state alarm">ERROR</span> )" + EscapeHtml(q.error_code));
  }
  if (q.running) flag_html.emplace_back(R"(<span class="state warn">RUNNING</span>)");
  if (q.collect_error) flag_html.emplace_back(R"(<span class="state alarm">COLLECT ERROR</span>)");
  if (q.last_run) {
    title.push_back(FormatTime(q.last_run->time));
    title.push_back(fmt::format("{} archived{}", q.last_run->archived, q.last_run->ok ? "" : " (failed)"));
  } else {
    title.emplace_back("no run yet");
  }
  if (q.failing) title.push_back("ERROR " + q.error_code);
  if (q.running) title.emplace_back("RUNNING");
  if (q.collect_error) title.emplace_back("COLLECT ERROR");
  const std::string flags = fmt::format("{}", fmt::join(flag_html, " "));
  fmt::format_to(std::back_inserter(out), R"(<td title="{}">)", EscapeHtml(fmt::format("{}", fmt::join(title, ", "))));
  if (q.last_run) {
    fmt::format_to(std::back_inserter(out), "{}<br>{}", EscapeHtml(title[0]), EscapeHtml(title[1]));
    if (!flags.empty()) out += " " + flags;
  } else {
    out += R"(<span class="muted">no run yet</span>)";
    if (!flags.empty()) out += "<br>" + flags;
  }
  fmt::format_to(std::back_inserter(out), R"(</td><td class="num">{}</td></tr>)", q.archived);
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  return EscapeMarkup(text, "&#39;");
}

std::string EncodeUriComponent(std::string_view text) {
  constexpr std::string_view kKeep = "-_.!~*'()";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        kKeep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      fmt::format_to(std::back_inserter(out), "%{:02X}", c);
    }
  }
  return out;
}

std::string FormatCountdown(double seconds) {
  if (!std::isfinite(seconds)) return "—";
  const bool neg = seconds < 0;
  // Math.round: halves towards +infinity; then the magnitude.
  auto t = static_cast<int64_t>(std::abs(std::floor(seconds + 0.5)));
  const int64_t d = t / 86400;
  t -= d * 86400;
  const int64_t h = t / 3600;
  t -= h * 3600;
  const int64_t m = t / 60;
  const int64_t s = t - m * 60;
  const std::string out = d > 0   ? fmt::format("{}d {}h {}m", d, h, m)
                          : h > 0 ? fmt::format("{}h {}m", h, m)
                          : m > 0 ? fmt::format("{}m {}s", m, s)
                                  : fmt::format("{}s", s);
  return neg ? "expired " + out + " ago" : out;
}

std::vector<size_t> OverviewDefaultOrder(const Overview& overview) {
  std::vector<size_t> order(overview.queues.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const OverviewQueue& x = overview.queues[a];
    const OverviewQueue& y = overview.queues[b];
    if (x.nearest_expiry.has_value() != y.nearest_expiry.has_value()) return x.nearest_expiry.has_value();
    if (x.nearest_expiry && *x.nearest_expiry != *y.nearest_expiry) return *x.nearest_expiry < *y.nearest_expiry;
    return x.queue < y.queue;
  });
  return order;
}

std::string RenderOverviewHtml(const Overview& overview, SystemTime now, size_t rows) {
  const int64_t now_ms = Millis(now);
  const auto& qs = overview.queues;
  // The summary (app.js's overviewSummary).
  size_t alarming = 0, errors = 0;
  int64_t at_risk = 0;
  for (const OverviewQueue& q : qs) {
    alarming +=
        std::any_of(q.alarms.begin(), q.alarms.end(), [](const OverviewAlarm& a) { return a.state == "ALARM"; });
    const std::optional<double> t = SecondsToExpiry(q, now_ms);
    if (t && *t < kDay) at_risk += std::max<int64_t>(0, q.visible) + std::max<int64_t>(0, q.not_visible);
    errors += q.failing || q.collect_error;
  }
  for (const OverviewGroup& g : overview.groups) errors += g.error;

  std::string out;
  out.reserve(2048 + 1024 * std::min(rows, qs.size()));
  out += "<h1>Dead-letter queues</h1>";
  // The words agree with the counts (app.js's overviewSummary says the same).
  auto noun = [](auto n, std::string_view one, std::string_view many) { return n == 1 ? one : many; };
  fmt::format_to(std::back_inserter(out),
                 R"(<div id="summary"><ul class="cards" aria-label="Summary">)"
                 R"(<li><span class="n" id="sum-alarm">{}</span>{} in ALARM</li>)"
                 R"(<li><span class="n" id="sum-risk">{}</span>{} at risk within 24 h</li>)"
                 R"(<li><span class="n" id="sum-errors">{}</span>{}</li>)"
                 R"(<li><span class="n">{}</span>{} watched</li></ul></div>)",
                 alarming, noun(alarming, "queue", "queues"), at_risk, noun(at_risk, "message", "messages"), errors,
                 noun(errors, "error", "errors"), qs.size(), noun(qs.size(), "queue", "queues"));
  out += R"(<div id="groups">)";
  for (const OverviewGroup& g : overview.groups) {
    if (!g.problem.empty()) {
      fmt::format_to(std::back_inserter(out), R"(<p class="error">Group {}: {}</p>)", EscapeHtml(g.name),
                     EscapeHtml(g.problem));
    }
  }
  out += "</div>";
  fmt::format_to(std::back_inserter(out),
                 R"(<div class="toolbar"><label for="filter">Filter queues</label>)"
                 R"(<input type="search" id="filter" value="" aria-describedby="shown">)"
                 R"(<span id="shown" class="muted">{0} of {0} {1} shown</span></div>)",
                 qs.size(), qs.size() == 1 ? "queue" : "queues");
  fmt::format_to(std::back_inserter(out),
                 R"(<table id="queues" aria-rowcount="{}"><caption class="muted">Sort by a column with its header )"
                 R"(button; the filter searches every queue (only the rows near the view are in the page); the )"
                 R"(nearest expiry is a conservative estimate.</caption><thead><tr aria-rowindex="1">)",
                 qs.size() + 1);
  for (const Column& c : kColumns) {
    fmt::format_to(std::back_inserter(out),
                   R"(<th scope="col" class="{}" data-key="{}" aria-sort="{}"><button type="button">{}</button></th>)",
                   c.num ? "num" : "", c.key, c.key == "expiry" ? "ascending" : "none", c.label);
  }
  // Between the spacer rows app.js keeps around its window (empty here: the
  // first rows, the rest below), so that the rows sit where app.js's will.
  const std::string spacer =
      fmt::format(R"(<tr class="spacer" aria-hidden="true"><td colspan="{}"></td></tr>)", std::size(kColumns));
  out += R"(</tr></thead><tbody id="queues-body">)";
  out += spacer;
  const std::vector<size_t> order = OverviewDefaultOrder(overview);
  for (size_t i = 0; i < order.size() && i < rows; ++i) AppendRow(qs[order[i]], i, now_ms, out);
  out += spacer;
  out += "</tbody></table>";
  return out;
}

}  // namespace dlq
