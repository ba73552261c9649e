#include "query/athena_ddl.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "archive/key_layout.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

AthenaDdl Generate(AthenaDdlOptions o) {
  auto ddl = GenerateAthenaDdl(o);
  EXPECT_TRUE(ddl.ok()) << ddl.status().ToString();
  return ddl.ok() ? *ddl : AthenaDdl{};
}

AthenaDdlOptions Options(std::string from, ArchiveLayout layout = ArchiveLayout::kDefault) {
  AthenaDdlOptions o;
  o.from = std::move(from);
  o.layout = layout;
  return o;
}

// One row of the field table in doc/archive-format.md.
struct DocField {
  std::string name;
  std::string type;  // the doc's type column
  std::string row;   // the whole row, for the example keys
};

// Every field the format doc lists: the backticked names in the first column
// of the "Record fields" table ("`body_encoding`, `body_base64`" gives two).
std::vector<DocField> FieldsFromFormatDoc() {
  std::ifstream in(std::string(DLQ_TESTDATA_DIR) + "/../../doc/archive-format.md");
  EXPECT_TRUE(in.good()) << "doc/archive-format.md not found";
  std::vector<DocField> fields;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (StartsWith(line, "## ")) in_table = line == "## Record fields";
    if (!in_table || !StartsWith(line, "| `")) continue;
    std::vector<std::string_view> cells = Split(line, '|');  // "", name, type, meaning, ""
    if (cells.size() < 4) continue;
    std::string names(Trim(cells[1])), type(Trim(cells[2]));
    std::regex backticked("`([a-z0-9_]+)`");
    for (auto it = std::sregex_iterator(names.begin(), names.end(), backticked); it != std::sregex_iterator(); ++it) {
      fields.push_back({(*it)[1].str(), type, line});
    }
  }
  return fields;
}

// The Athena type of `column` in the CREATE TABLE (empty when absent).
std::string ColumnType(const std::string& ddl, const std::string& column) {
  std::smatch m;
  std::regex re("\\n  `" + column + "` ([^\\n]+?),?\\n");
  return std::regex_search(ddl, m, re) ? m[1].str() : "";
}

TEST(AthenaDdl, EveryFieldOfTheFormatDocIsAColumnWithItsType) {
  std::vector<DocField> fields = FieldsFromFormatDoc();
  ASSERT_GE(fields.size(), 20u) << "the field table of doc/archive-format.md was not found";
  std::string ddl = Generate(Options("s3://bucket/dlq-archive")).create_table;
  std::regex json_key("\"([A-Za-z0-9_]+)\":");
  for (const DocField& f : fields) {
    SCOPED_TRACE(f.name + " (" + f.type + ")");
    std::string type = ColumnType(ddl, f.name);
    ASSERT_FALSE(type.empty()) << "no column for field " << f.name;
    if (f.type == "integer" || f.type == "integer, optional") {
      EXPECT_TRUE(type == "int" || type == "bigint") << type;
    } else if (StartsWith(f.type, "string")) {  // "string", "string or null", "string, string"
      EXPECT_EQ(type, "string");
    } else if (f.type == "boolean") {
      EXPECT_EQ(type, "boolean");
    } else if (f.type == "object string->string") {
      EXPECT_EQ(type, "map<string,string>");
    } else if (f.type == "object name->object" || f.type == "object") {
      EXPECT_TRUE(StartsWith(type, f.type == "object" ? "struct<" : "map<string,struct<")) << type;
      // Every key the doc's examples show is a field of the struct.
      for (auto it = std::sregex_iterator(f.row.begin(), f.row.end(), json_key); it != std::sregex_iterator(); ++it) {
        EXPECT_THAT(type, HasSubstr((*it)[1].str() + ":string")) << type;
      }
    } else {
      ADD_FAILURE() << "doc type '" << f.type << "' has no Athena mapping in this test: add one";
    }
  }
  // No column that the doc does not list (besides the partitions).
  std::regex column_re("\\n  `([a-z0-9_]+)` ");
  size_t columns = 0;
  std::string head = ddl.substr(0, ddl.find("PARTITIONED BY"));
  for (auto it = std::sregex_iterator(head.begin(), head.end(), column_re); it != std::sregex_iterator(); ++it) {
    ++columns;
  }
  EXPECT_EQ(columns, fields.size());
  // Binary attribute values and non-UTF-8 string values have their own struct fields.
  EXPECT_THAT(ColumnType(ddl, "message_attributes"), HasSubstr("StringValueBase64:string"));
}

TEST(AthenaDdl, DefaultLayoutProjectsQueueAndCompactDay) {
  AthenaDdl ddl = Generate(Options("s3://my-bucket/dlq-archive"));
  const std::string& t = ddl.create_table;
  EXPECT_THAT(t, HasSubstr("CREATE EXTERNAL TABLE IF NOT EXISTS `default`.`dlq_archive` (\n"));
  EXPECT_THAT(t, HasSubstr("PARTITIONED BY (\n  `dlq` string,\n  `dt` string\n)"));
  EXPECT_THAT(t, HasSubstr("ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'"));
  EXPECT_THAT(t, HasSubstr("LOCATION 's3://my-bucket/dlq-archive/'"));
  EXPECT_THAT(t, HasSubstr("'projection.enabled' = 'true'"));
  EXPECT_THAT(t, HasSubstr("'projection.dlq.type' = 'injected'"));
  EXPECT_THAT(t, Not(HasSubstr("projection.dlq.values")));
  EXPECT_THAT(t, HasSubstr("'projection.dt.type' = 'date'"));
  EXPECT_THAT(t, HasSubstr("'projection.dt.format' = 'yyyyMMdd'"));
  EXPECT_THAT(t, HasSubstr("'projection.dt.range' = '20200101,NOW'"));
  EXPECT_THAT(t, HasSubstr("'projection.dt.interval' = '1'"));
  EXPECT_THAT(t, HasSubstr("'projection.dt.interval.unit' = 'DAYS'"));
  EXPECT_THAT(t, HasSubstr("'storage.location.template' = 's3://my-bucket/dlq-archive/${dlq}/${dt}/'\n);\n"));
}

TEST(AthenaDdl, HiveLayoutUsesIsoDaysAndKeyNames) {
  AthenaDdl ddl = Generate(Options("s3://b/archive/prod", ArchiveLayout::kHive));
  EXPECT_THAT(ddl.create_table, HasSubstr("'projection.dt.format' = 'yyyy-MM-dd'"));
  EXPECT_THAT(ddl.create_table, HasSubstr("'projection.dt.range' = '2020-01-01,NOW'"));
  EXPECT_THAT(ddl.create_table, HasSubstr("LOCATION 's3://b/archive/prod/'"));
  EXPECT_THAT(ddl.create_table,
              HasSubstr("'storage.location.template' = 's3://b/archive/prod/queue=${dlq}/dt=${dt}/'"));
}

// The location template, filled in with a queue and a day, is exactly the
// directory of the key the archiver writes for them.
TEST(AthenaDdl, LocationTemplateMatchesTheArchiverKeys) {
  const SystemTime t = *ParseIso8601("2025-09-10T12:30:00Z");
  for (ArchiveLayout layout : {ArchiveLayout::kDefault, ArchiveLayout::kHive}) {
    const bool hive = layout == ArchiveLayout::kHive;
    for (std::string prefix : {"dlq-archive", "a/b"}) {
      AthenaDdl ddl = Generate(Options("s3://bkt/" + prefix, layout));
      std::smatch m;
      ASSERT_TRUE(std::regex_search(ddl.create_table, m, std::regex("'storage.location.template' = '([^']+)'")));
      std::string dir = m[1].str();
      dir.replace(dir.find("${dlq}"), 6, "orders-dlq");
      dir.replace(dir.find("${dt}"), 5, hive ? "2025-09-10" : "20250910");
      KeyTemplate tmpl = hive ? KeyTemplate::Parse(kHiveKeyTemplate).value() : KeyTemplate::Default();
      std::string key = tmpl.Render({prefix, "orders-dlq", "us-east-1", "123456789012", t, "7f3a9c2e"});
      EXPECT_EQ(dir, "s3://bkt/" + key.substr(0, key.rfind('/') + 1));
    }
  }
}

TEST(AthenaDdl, BucketWithoutPrefixReadsTheArchiverDefaultPrefix) {
  AthenaDdl ddl = Generate(Options("s3://bkt"));
  EXPECT_THAT(ddl.create_table, HasSubstr("LOCATION 's3://bkt/dlq-archive/'"));
  EXPECT_THAT(ddl.create_table, HasSubstr("'s3://bkt/dlq-archive/${dlq}/${dt}/'"));
}

TEST(AthenaDdl, QueuesGiveAnEnumProjection) {
  AthenaDdlOptions o = Options("s3://b/p");
  o.queues = {"orders-dlq", "payments-dlq.fifo"};
  AthenaDdl ddl = Generate(o);
  EXPECT_THAT(ddl.create_table, HasSubstr("'projection.dlq.type' = 'enum'"));
  EXPECT_THAT(ddl.create_table, HasSubstr("'projection.dlq.values' = 'orders-dlq,payments-dlq.fifo'"));
  EXPECT_THAT(ddl.create_table, Not(HasSubstr("injected")));
}

TEST(AthenaDdl, DatabaseTableAndFirstDayAreUsed) {
  AthenaDdlOptions o = Options("s3://b/p");
  o.database = "ops";
  o.table = "dlq";
  o.first_day = "2024-02-29";
  AthenaDdl ddl = Generate(o);
  EXPECT_THAT(ddl.create_table, HasSubstr("CREATE EXTERNAL TABLE IF NOT EXISTS `ops`.`dlq` ("));
  EXPECT_THAT(ddl.create_table, HasSubstr("'projection.dt.range' = '20240229,NOW'"));
  EXPECT_THAT(ddl.create_view, HasSubstr("CREATE OR REPLACE VIEW \"ops\".\"dlq_dedup\" AS"));
  EXPECT_THAT(ddl.create_view, HasSubstr("FROM \"ops\".\"dlq\"\n"));
}

TEST(AthenaDdl, ViewKeepsTheFirstArchivedCopyOfEachMessage) {
  AthenaDdl ddl = Generate(Options("s3://b/p"));
  const std::string& v = ddl.create_view;
  EXPECT_THAT(v, HasSubstr("row_number() OVER (PARTITION BY \"dlq\", \"message_id\" ORDER BY \"archived_at\")"));
  EXPECT_THAT(v, HasSubstr("WHERE copy_number = 1;\n"));
  // Every column and both partitions are selected, and nothing else.
  for (const DocField& f : FieldsFromFormatDoc()) EXPECT_THAT(v, HasSubstr("  \"" + f.name + "\",\n"));
  EXPECT_THAT(v, HasSubstr("  \"dlq\",\n  \"dt\"\nFROM ("));
}

TEST(AthenaDdl, RejectsBadInputNamingTheOption) {
  struct Bad {
    AthenaDdlOptions options;
    std::string mentions;
  };
  auto with = [](auto edit) {
    AthenaDdlOptions o = Options("s3://b/p");
    edit(o);
    return o;
  };
  std::vector<Bad> cases = {
      {Options("file:///tmp/archive"), "Athena reads only S3"},
      {Options("http://b/p"), "http://b/p"},
      {Options("s3://b/it's"), "cannot be written"},
      {with([](AthenaDdlOptions& o) { o.database = "Ops"; }), "--database 'Ops'"},
      {with([](AthenaDdlOptions& o) { o.table = "my-table"; }), "--table 'my-table'"},
      {with([](AthenaDdlOptions& o) { o.table = ""; }), "--table ''"},
      {with([](AthenaDdlOptions& o) {
         o.queues = {"ok", "a,b"};
       }),
       "--queues: 'a,b'"},
      {with([](AthenaDdlOptions& o) { o.queues = {std::string(81, 'q')}; }), "--queues"},
      {with([](AthenaDdlOptions& o) { o.first_day = "2024-13-01"; }), "--first-day '2024-13-01'"},
      {with([](AthenaDdlOptions& o) { o.first_day = "20240101"; }), "--first-day"},
      {with([](AthenaDdlOptions& o) { o.first_day = "2023-02-29"; }), "--first-day '2023-02-29'"},
  };
  for (const Bad& c : cases) {
    auto ddl = GenerateAthenaDdl(c.options);
    ASSERT_FALSE(ddl.ok()) << c.mentions;
    EXPECT_EQ(ddl.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(ddl.status().message(), HasSubstr(c.mentions));
  }
}

}  // namespace
}  // namespace dlq
