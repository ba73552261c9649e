// The overview's first window as HTML, rendered by the daemon into the page it
// serves at /, so that the first frame shows the summary and the first rows
// without waiting for app.js or /api/overview (bench/dashboard/README.md).
// app.js takes the table over when it runs and renders the same rows itself.
//
// The markup mirrors web/app.js (renderOverview, overviewSummary,
// overviewRow): the same elements, classes, ids, aria attributes and cell
// text, so that nothing moves when app.js replaces it. A change to either side
// must be made to both (tests/browser/dashboard.mjs compares them).
//
// The rows are those app.js shows first: the default sort (kOverviewFirstOrder
// below) with no filter, cut to `rows`. Countdowns are relative to `now`.
// No action controls (app.js adds them when the daemon has a write token).
// Every text from the overview is escaped (EscapeHtml); links use
// EncodeUriComponent. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "monitor/overview.h"

namespace dlq {

// The default order, as app.js's sortedQueues with sort {key: 'expiry', dir: 1}:
// by nearest expiry, soonest first (already past first), queues with none
// last; then by queue name (byte order: app.js compares UTF-16 code units,
// the same order for SQS names, which are ASCII); then in the overview's
// order.
inline constexpr std::string_view kOverviewFirstOrder = "nearest expiry, then queue name, then overview order";

// How many rows the page gets: enough to fill a view about 1,200 px tall
// (app.js renders the rows in view, 11 at 900 px; a row is 57 px). More
// rows cost the first frame's layout (bench/dashboard/README.md: 36 rows
// made warm loads slower).
inline constexpr size_t kOverviewFirstRows = 16;

// Indices into overview.queues in the default order (all of them).
std::vector<size_t> OverviewDefaultOrder(const Overview& overview);

// The content of <div id="view"> for the overview: heading, summary cards,
// group problems, the filter, and the table with its first `rows` rows.
std::string RenderOverviewHtml(const Overview& overview, SystemTime now, size_t rows = kOverviewFirstRows);

// & < > " ' as &amp; &lt; &gt; &quot; &#39; (app.js's esc()): safe in text
// and in quoted attribute values.
std::string EscapeHtml(std::string_view text);
// JavaScript's encodeURIComponent: every byte but A-Z a-z 0-9 - _ . ! ~ * ' ( )
// as %XX (upper-case hex).
std::string EncodeUriComponent(std::string_view text);
// app.js's fmtDuration: "3d 4h 5m", "4h 5m", "5m 6s", "6s" (rounded to the
// second); negative: "expired ... ago".
std::string FormatCountdown(double seconds);

}  // namespace dlq
