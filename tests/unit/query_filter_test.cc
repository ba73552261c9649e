#include <gtest/gtest.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "query/filter.h"

namespace dlq {
namespace {

const SystemTime kNow = *ParseIso8601("2026-11-20T12:00:00Z");

ArchiveRecord Rec() {
  ArchiveRecord r;
  r.queue = "orders-dlq";
  r.message_id = "m-1";
  r.body = R"({"error":{"type":"Timeout"},"order":123})";
  r.sent_at = *ParseIso8601("2026-11-19T10:00:00Z");
  r.archived_at = *ParseIso8601("2026-11-20T10:00:00Z");
  r.receive_count = 5;
  r.message_attributes["tenant"] = {"String", "acme", ""};
  r.message_attributes["blob"] = {"Binary", "", std::string("\x00\x01", 2)};
  return r;
}

Filter Build(const FilterFlags& flags) {
  Result<Filter> f = BuildFilter(flags, kNow);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : Filter{};
}

TEST(FilterTest, EmptyFilterMatchesEverything) {
  Filter f;
  EXPECT_TRUE(f.Empty());
  EXPECT_TRUE(f.Matches(Rec()));
}

TEST(FilterTest, EachConditionSelectsAndRejects) {
  const ArchiveRecord r = Rec();
  auto match = [&](FilterFlags flags) { return Build(flags).Matches(r); };
  EXPECT_TRUE(match({.queues = {"other", "orders-dlq"}}));
  EXPECT_FALSE(match({.queues = {"other"}}));
  EXPECT_TRUE(match({.queues = {"https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"}}));
  EXPECT_TRUE(match({.queues = {"arn:aws:sqs:us-east-1:123456789012:orders-dlq"}}));
  EXPECT_TRUE(match({.ids = {"m-0", "m-1"}}));
  EXPECT_FALSE(match({.ids = {"m-2"}}));
  EXPECT_TRUE(match({.attrs = {"tenant=acme"}}));
  EXPECT_FALSE(match({.attrs = {"tenant=acm"}}));
  EXPECT_FALSE(match({.attrs = {"missing=acme"}}));
  EXPECT_FALSE(match({.attrs = {"blob="}}));  // Binary has no string value
  EXPECT_TRUE(match({.attr_exists = {"blob", "tenant"}}));
  EXPECT_FALSE(match({.attr_exists = {"blob", "nope"}}));
  EXPECT_TRUE(match({.body_contains = "Timeout"}));
  EXPECT_FALSE(match({.body_contains = "timeout"}));
  EXPECT_TRUE(match({.body_regex = "order\":[0-9]+"}));
  EXPECT_FALSE(match({.body_regex = "^order"}));
  EXPECT_TRUE(match({.json = {"$.error.type=Timeout", "$.order=123"}}));
  EXPECT_FALSE(match({.json = {"$.error.type=Throttled"}}));
  EXPECT_FALSE(match({.json = {"$.nope=Timeout"}}));
  EXPECT_TRUE(match({.min_receive_count = "5"}));
  EXPECT_FALSE(match({.min_receive_count = "6"}));
}

TEST(FilterTest, MinReceiveCountCountsTheConsumersReceivesNotOurs) {
  ArchiveRecord r = Rec();
  r.receive_count = 5;
  r.own_receive_count = 3;  // a learning pass, a dry run and the archive run
  auto match = [&](FilterFlags flags) { return Build(flags).Matches(r); };
  EXPECT_TRUE(match({.min_receive_count = "2"}));
  EXPECT_FALSE(match({.min_receive_count = "3"}));
}

TEST(FilterTest, TimeBoundsAreHalfOpenOnTheChosenField) {
  ArchiveRecord r = Rec();
  auto match = [&](FilterFlags flags) { return Build(flags).Matches(r); };
  EXPECT_TRUE(match({.since = "2026-11-19T10:00:00Z"}));               // inclusive
  EXPECT_FALSE(match({.until = "2026-11-19T10:00:00Z"}));              // exclusive
  EXPECT_TRUE(match({.since = "2026-11-19", .until = "2026-11-20"}));  // dates: midnight UTC
  EXPECT_FALSE(match({.since = "2026-11-20"}));                        // sent the day before
  EXPECT_TRUE(match({.since = "2026-11-20", .by = "archived"}));       // archived that day
  EXPECT_TRUE(match({.since = "27h"}));                                // now - 27h = 19th 09:00
  EXPECT_FALSE(match({.since = "25h"}));                               // now - 25h = 19th 11:00
  EXPECT_TRUE(match({.since = "2026-11-19T11:00:00+01:00"}));          // = 10:00Z
  r.sent_at.reset();
  EXPECT_FALSE(match({.since = "2000-01-01"}));  // no sent_at: never matches a sent bound
  EXPECT_TRUE(match({.since = "2000-01-01", .by = "archived"}));
}

TEST(FilterTest, MalformedFlagsAreRejectedNamingTheFlag) {
  struct Case {
    FilterFlags flags;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{.since = "yesterday"}, "--since 'yesterday': not a time"},
           {{.until = "2026-13-01"}, "--until '2026-13-01': not a time"},
           {{.since = "99999999999w"}, "--since '99999999999w': not a time"},
           {{.since = "2026-11-20", .until = "2026-11-19"}, "is not before --until"},
           {{.by = "received"}, "--by 'received': must be 'sent' or 'archived'"},
           {{.attrs = {"novalue"}}, "--attr 'novalue': expected NAME=VALUE"},
           {{.attrs = {"=x"}}, "--attr '=x': expected NAME=VALUE"},
           {{.attr_exists = {""}}, "--attr-exists"},
           {{.ids = {""}}, "--id"},
           {{.queues = {" "}}, "--queue"},
           {{.body_regex = "(unclosed"},
            "--body-regex '(unclosed': not a valid regular expression (missing ): (unclosed)"},
           {{.json = {"$.a"}}, "--json '$.a': expected PATH=VALUE"},
           {{.json = {"error.type=x"}}, "--json 'error.type=x': JSON path \"error.type=x\": a path must start"},
           {{.json = {"$[x]=1"}}, "--json '$[x]=1'"},
           {{.min_receive_count = "-1"}, "--min-receive-count '-1': must be an integer >= 0"},
           {{.min_receive_count = "3x"}, "--min-receive-count '3x'"},
       }) {
    Result<Filter> f = BuildFilter(c.flags, kNow);
    ASSERT_FALSE(f.ok()) << c.expect;
    EXPECT_EQ(f.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(f.status().message().find(c.expect), std::string::npos) << f.status().message();
  }
}

TEST(FilterTest, CanonicalIsStableAcrossFlagOrderAndDistinguishesFilters) {
  Filter a = Build({.queues = {"b", "a"}, .since = "2026-11-01", .attrs = {"x=1", "w=2"}, .json = {"$.a=1"}});
  Filter b =
      Build({.queues = {"a", "b", "a"}, .since = "2026-11-01T00:00:00Z", .attrs = {"w=2", "x=1"}, .json = {"$.a=1"}});
  EXPECT_EQ(a.Canonical(), b.Canonical());
  EXPECT_EQ(a.Canonical(), R"({"queue":["a","b"],"since":"2026-11-01T00:00:00.000Z","until":null,"by":"sent","id":[],)"
                           R"("attr":[["w","2"],["x","1"]],"attr_exists":[],"body_contains":"","body_regex":"",)"
                           R"("json":[["$.a","1"]],"min_receive_count":null})");
  Filter c = Build(
      {.queues = {"a", "b"}, .since = "2026-11-01", .by = "archived", .attrs = {"x=1", "w=2"}, .json = {"$.a=1"}});
  EXPECT_NE(a.Canonical(), c.Canonical());
  // Quotes cannot make two filters look alike.
  EXPECT_NE(Build({.attrs = {"a=b\",\"c"}}).Canonical(), Build({.attrs = {"a=b", "c="}}).Canonical());
}

TEST(FilterTest, RegexSetDirectlyWorksWithoutCompile) {
  Filter f;
  f.body_regex = "Time(out|d)";
  EXPECT_TRUE(f.Matches(Rec()));
  f.body_regex = "(bad";
  EXPECT_FALSE(f.Matches(Rec()));
  EXPECT_FALSE(f.CompileRegex().ok());
}

TEST(FilterTest, UnsupportedRegexConstructIsAUsageErrorNamingIt) {
  Result<Filter> f = BuildFilter({.body_regex = R"((a)\1)"}, kNow);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      f.status().message(),
      R"(--body-regex '(a)\1': backreferences (\1) are not supported; patterns use RE2 syntax (doc/querying.md))");
  Filter direct;
  direct.body_regex = "a(?=b)";
  Status st = direct.CompileRegex();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "--body-regex 'a(?=b)': lookahead assertions ((?=) are not supported; patterns use RE2 syntax "
            "(doc/querying.md)");
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Issue 28: these patterns crashed std::regex (stack overflow) on 20-200 KB
// bodies or backtracked for seconds on 27 characters. On 1 MiB bodies (SQS's
// maximum) each completes with the right answer in well under a second of CPU.
TEST(FilterTest, BodyRegexOnAOneMebibyteBodyIsLinearAndCorrect) {
  constexpr size_t kMiB = size_t{1} << 20;
  auto repeat = [&](std::string_view unit) {
    std::string s;
    while (s.size() + unit.size() <= kMiB) s += unit;
    return s;
  };
  const std::string ab = repeat("ab");
  const std::string x = repeat("x");
  const std::string lines = repeat("order 42 failed\n\tretry later\n");
  const std::string a = repeat("a");
  struct Case {
    std::string pattern, body;
    bool match;
  };
  const std::vector<Case> cases = {
      {"(a|b)*c", ab, false},
      {"(a|b)*c", ab.substr(1) + "c", true},
      {".*zzz", x, false},
      {".*zzz", x.substr(3) + "zzz", true},
      {R"((.|\s)*zzz)", lines, false},
      {R"((.|\s)*zzz)", lines.substr(3) + "zzz", true},
      {"^(.+)+!$", a, false},
      {"^(.+)+!$", a.substr(1) + "!", true},
  };
  for (const Case& c : cases) {
    ASSERT_LE(c.body.size(), kMiB);
    ASSERT_GE(c.body.size(), kMiB - 64);
    Filter f = Build({.body_regex = c.pattern});
    ArchiveRecord r = Rec();
    r.body = c.body;
    double start = ThreadCpuSeconds();
    EXPECT_EQ(f.Matches(r), c.match) << c.pattern;
    double cpu = ThreadCpuSeconds() - start;
    EXPECT_LT(cpu, 1.0) << c.pattern << " took " << cpu << " s of CPU";
  }
}

TEST(FilterTest, FlagsParseFromTheCommandLine) {
  CLI::App app;
  FilterFlags flags;
  AddFilterFlags(app, flags);
  std::vector<std::string> args = {"--min-receive-count",
                                   "2",
                                   "--json",
                                   "$.error.type=Timeout",
                                   "--attr-exists",
                                   "blob",
                                   "--attr",
                                   "tenant=acme",
                                   "--id",
                                   "m-1",
                                   "--by",
                                   "archived",
                                   "--until",
                                   "2026-11-21",
                                   "--since",
                                   "7d",
                                   "--queue",
                                   "orders-dlq",
                                   "--queue",
                                   "x",
                                   "--body-contains",
                                   "Timeout",
                                   "--body-regex",
                                   "order"};
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  Filter f = Build(flags);
  EXPECT_EQ(f.queues, (std::vector<std::string>{"orders-dlq", "x"}));
  EXPECT_EQ(f.by, TimeField::kArchived);
  EXPECT_EQ(f.since, kNow - std::chrono::hours(24 * 7));
  EXPECT_TRUE(f.Matches(Rec()));
}

TEST(FilterTest, FingerprintSelectsOneFailureGroupById) {
  ArchiveRecord timeout = Rec();  // error.type="Timeout"
  ArchiveRecord other_tenant = Rec();
  other_tenant.body = R"({"error":{"type":"Timeout"},"order":999})";
  other_tenant.message_attributes["tenant"] = {"String", "globex", ""};
  ArchiveRecord denied = Rec();
  denied.body = R"({"error":{"type":"Denied"},"order":123})";
  const std::string id = GroupId(FailureGroupKey(timeout));
  ASSERT_EQ(id.size(), 12u);
  Filter f = Build({.fingerprint = id});
  EXPECT_FALSE(f.Empty());
  EXPECT_TRUE(f.Matches(timeout));
  EXPECT_TRUE(f.Matches(other_tenant));
  EXPECT_FALSE(f.Matches(denied));
  std::string upper = id;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(Build({.fingerprint = upper}).Matches(timeout));  // as typed from a table, any case
  // The id depends on the fields: with others, the same id selects nothing.
  EXPECT_FALSE(Build({.fingerprint = id, .fingerprint_fields = "order"}).Matches(timeout));
  FilterFlags by_order{.fingerprint_fields = "order"};
  FingerprintOptions order_only;
  order_only.fields = {"order"};
  by_order.fingerprint = GroupId(FailureGroupKey(timeout, order_only));
  EXPECT_TRUE(Build(by_order).Matches(timeout));
  EXPECT_TRUE(Build(by_order).Matches(denied));  // same order, same shape
  EXPECT_FALSE(Build(by_order).Matches(other_tenant));
}

TEST(FilterTest, FingerprintFlagsAreValidatedAndPartOfTheCanonicalText) {
  for (const char* bad : {"abc", "ba7816bf8f01cf", "zz7816bf8f01"}) {
    Result<Filter> f = BuildFilter({.fingerprint = bad}, kNow);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("--fingerprint"), std::string::npos) << f.status().message();
  }
  EXPECT_FALSE(BuildFilter({.fingerprint_fields = "a,,b"}, kNow).ok());
  // Without --fingerprint the canonical text is what it always was (checkpoints keep their identity).
  EXPECT_EQ(Build({.fingerprint_fields = "a"}).Canonical(), Filter().Canonical());
  std::string with = Build({.fingerprint = "ba7816bf8f01"}).Canonical();
  EXPECT_NE(with.find(R"("fingerprint":"ba7816bf8f01","fingerprint_fields":["type","eventType","detail-type",)"),
            std::string::npos)
      << with;
  EXPECT_NE(with, Build({.fingerprint = "ba7816bf8f01", .fingerprint_fields = "type"}).Canonical());
}

TEST(FilterTest, FingerprintFlagsParseFromTheCommandLine) {
  CLI::App app;
  FilterFlags flags;
  AddFilterFlags(app, flags);
  std::vector<std::string> args = {"--fingerprint", "ba7816bf8f01", "--fingerprint-fields", "type,error.code"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  Filter f = Build(flags);
  EXPECT_EQ(f.fingerprint, "ba7816bf8f01");
  EXPECT_EQ(f.fingerprint_options.fields, (std::vector<std::string>{"type", "error.code"}));
}

}  // namespace
}  // namespace dlq
