#include "query/athena_ddl.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// Record fields in doc/archive-format.md order, with their Athena types.
struct Column {
  std::string_view name;
  std::string_view type;
};
constexpr Column kColumns[] = {
    {"schema", "int"},
    {"queue", "string"},
    {"queue_url", "string"},
    {"region", "string"},
    {"account_id", "string"},
    {"message_id", "string"},
    {"body", "string"},
    {"body_encoding", "string"},
    {"body_base64", "string"},
    {"md5_of_body", "string"},
    {"md5_of_message_attributes", "string"},
    {"attributes", "map<string,string>"},
    {"message_attributes",
     "map<string,struct<DataType:string,StringValue:string,BinaryValue:string,StringValueBase64:string>>"},
    {"sent_at", "string"},
    {"expires_at", "string"},
    {"archived_at", "string"},
    {"receive_count", "bigint"},
    {"source_queue_arn", "string"},
    {"extended_client_pointer", "boolean"},
    {"archiver", "struct<version:string,host:string>"},
};
constexpr std::string_view kQueuePartition = "dlq";
constexpr std::string_view kDayPartition = "dt";

bool IsAthenaIdentifier(std::string_view s) {
  return !s.empty() && s.size() <= 255 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// SQS queue names: 1..80 of [A-Za-z0-9_-], a FIFO queue's ending in ".fifo".
bool IsQueueName(std::string_view s) {
  std::string_view base = EndsWith(s, ".fifo") ? s.substr(0, s.size() - 5) : s;
  return !base.empty() && s.size() <= 80 && std::all_of(base.begin(), base.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// The S3 "directory" of one queue's day in `layout`, with ${dlq} and ${dt} in
// place of the queue and the day: the key template rendered for a sentinel
// queue and day, cut at its last '/', so it follows src/archive/key_layout.
Result<std::string> DirectoryTemplate(ArchiveLayout layout, const std::string& prefix) {
  KeyTemplate tmpl =
      layout == ArchiveLayout::kHive ? KeyTemplate::Parse(kHiveKeyTemplate).value() : KeyTemplate::Default();
  constexpr std::string_view kQueueMark = "QUEUE.MARK";  // not a valid queue name: cannot clash
  const SystemTime day = *ParseIso8601("1999-12-31T00:00:00Z");
  const std::string_view day_text = layout == ArchiveLayout::kHive ? "1999-12-31" : "19991231";
  std::string key = tmpl.Render({prefix, std::string(kQueueMark), "", "", day, "batch"});
  std::string dir = key.substr(0, key.rfind('/') + 1);
  size_t d = dir.rfind(day_text);
  size_t q = dir.find(kQueueMark);
  if (d == std::string::npos || q == std::string::npos || q > d) {
    return Internal(fmt::format("key template {} has no queue and day directories", tmpl.text()));
  }
  dir.replace(d, day_text.size(), fmt::format("${{{}}}", kDayPartition));
  dir.replace(q, kQueueMark.size(), fmt::format("${{{}}}", kQueuePartition));
  return dir;
}

}  // namespace

Result<AthenaDdl> GenerateAthenaDdl(const AthenaDdlOptions& o) {
  DLQ_ASSIGN_OR_RETURN(Destination from, ParseDestination(o.from));
  if (from.scheme != "s3") {
    return InvalidArgument(fmt::format(
        "--from {}: Athena reads only S3; give the s3://BUCKET/PREFIX that `archive --to` wrote to (a local "
        "archive can be queried with DuckDB, see doc/querying.md)",
        o.from));
  }
  if (from.prefix.find_first_of("'\\") != std::string::npos) {
    return InvalidArgument(fmt::format("--from {}: a prefix with ' or \\ cannot be written into the DDL", o.from));
  }
  if (!IsAthenaIdentifier(o.database)) {
    return InvalidArgument(
        fmt::format("--database '{}': use lower-case letters, digits and _ (Athena's names)", o.database));
  }
  // The view's name adds "_dedup" to the table's, so leave room for it.
  if (!IsAthenaIdentifier(o.table) || o.table.size() > 249) {
    return InvalidArgument(fmt::format("--table '{}': use lower-case letters, digits and _, at most 249", o.table));
  }
  for (const std::string& q : o.queues) {
    if (!IsQueueName(q)) {
      return InvalidArgument(fmt::format(
          "--queues: '{}' is not an SQS queue name (letters, digits, - and _, up to 80, optional .fifo)", q));
    }
  }
  auto first = ParseIso8601(o.first_day + "T00:00:00Z");
  if (o.first_day.size() != 10 || !first || FormatIso8601(*first).substr(0, 10) != o.first_day) {
    return InvalidArgument(fmt::format("--first-day '{}' is not a date YYYY-MM-DD", o.first_day));
  }

  // `archive --to s3://B` writes under the default prefix; the same URL reads it.
  const std::string prefix = from.prefix.empty() ? std::string(kDefaultKeyPrefix) : from.prefix;
  DLQ_ASSIGN_OR_RETURN(std::string dir, DirectoryTemplate(o.layout, prefix));
  const bool hive = o.layout == ArchiveLayout::kHive;
  std::string first_day = FormatIso8601(*first).substr(0, 10);
  if (!hive) first_day.erase(std::remove(first_day.begin(), first_day.end(), '-'), first_day.end());

  AthenaDdl ddl;
  ddl.table = fmt::format("`{}`.`{}`", o.database, o.table);
  ddl.view = fmt::format("\"{}\".\"{}_dedup\"", o.database, o.table);

  std::string& t = ddl.create_table;
  t += fmt::format("CREATE EXTERNAL TABLE IF NOT EXISTS {} (\n", ddl.table);
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    t += fmt::format("  `{}` {}{}\n", kColumns[i].name, kColumns[i].type, i + 1 < std::size(kColumns) ? "," : "");
  }
  t += fmt::format(")\nPARTITIONED BY (\n  `{}` string,\n  `{}` string\n)\n", kQueuePartition, kDayPartition);
  t += "ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\n";
  t += "WITH SERDEPROPERTIES ('ignore.malformed.json' = 'true')\n";
  t += "STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'\n";
  t += "OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'\n";
  t += fmt::format("LOCATION 's3://{}/{}/'\n", from.bucket, prefix);
  t += "TBLPROPERTIES (\n  'projection.enabled' = 'true',\n";
  if (o.queues.empty()) {
    t += fmt::format("  'projection.{}.type' = 'injected',\n", kQueuePartition);
  } else {
    std::string values;
    for (const std::string& q : o.queues) values += (values.empty() ? "" : ",") + q;
    t +=
        fmt::format("  'projection.{0}.type' = 'enum',\n  'projection.{0}.values' = '{1}',\n", kQueuePartition, values);
  }
  t += fmt::format(
      "  'projection.{0}.type' = 'date',\n"
      "  'projection.{0}.format' = '{1}',\n"
      "  'projection.{0}.range' = '{2},NOW',\n"
      "  'projection.{0}.interval' = '1',\n"
      "  'projection.{0}.interval.unit' = 'DAYS',\n",
      kDayPartition, hive ? "yyyy-MM-dd" : "yyyyMMdd", first_day);
  t += fmt::format("  'storage.location.template' = 's3://{}/{}'\n);\n", from.bucket, dir);

  // The view: one row per (queue, message_id), the first archived copy.
  // Partitioning the window by the queue partition (equal to `queue`) lets a
  // `dlq = '...'` predicate reach the table, which injected projection needs.
  std::string columns;
  for (const Column& c : kColumns) columns += fmt::format("  \"{}\",\n", c.name);
  ddl.create_view = fmt::format(
      "CREATE OR REPLACE VIEW {0} AS\n"
      "SELECT\n{1}  \"{2}\",\n  \"{3}\"\n"
      "FROM (\n"
      "  SELECT *, row_number() OVER (PARTITION BY \"{2}\", \"message_id\" ORDER BY \"archived_at\") AS copy_number\n"
      "  FROM \"{4}\".\"{5}\"\n"
      "  WHERE \"message_id\" IS NOT NULL\n"
      ")\n"
      "WHERE copy_number = 1;\n",
      ddl.view, columns, kQueuePartition, kDayPartition, o.database, o.table);
  return ddl;
}

}  // namespace dlq
