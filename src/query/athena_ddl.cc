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
    {"own_receive_count", "bigint"},
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

Result<AthenaTable> BuildAthenaTable(const AthenaDdlOptions& o) {
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

  AthenaTable t;
  t.database = o.database;
  t.name = o.table;
  for (const Column& c : kColumns) t.columns.push_back({std::string(c.name), std::string(c.type)});
  t.partitions = {{std::string(kQueuePartition), "string"}, {std::string(kDayPartition), "string"}};
  t.serde = "org.openx.data.jsonserde.JsonSerDe";
  t.serde_properties = {{"ignore.malformed.json", "true"}};
  t.input_format = "org.apache.hadoop.mapred.TextInputFormat";
  t.output_format = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat";
  t.bucket = from.bucket;
  t.prefix = prefix;
  t.location = fmt::format("s3://{}/{}/", from.bucket, prefix);
  auto prop = [&](std::string key, std::string value) { t.properties.emplace_back(std::move(key), std::move(value)); };
  const std::string q = std::string(kQueuePartition), d = std::string(kDayPartition);
  prop("projection.enabled", "true");
  if (o.queues.empty()) {
    prop("projection." + q + ".type", "injected");
  } else {
    std::string values;
    for (const std::string& name : o.queues) values += (values.empty() ? "" : ",") + name;
    prop("projection." + q + ".type", "enum");
    prop("projection." + q + ".values", values);
  }
  prop("projection." + d + ".type", "date");
  prop("projection." + d + ".format", hive ? "yyyy-MM-dd" : "yyyyMMdd");
  prop("projection." + d + ".range", first_day + ",NOW");
  prop("projection." + d + ".interval", "1");
  prop("projection." + d + ".interval.unit", "DAYS");
  prop("storage.location.template", fmt::format("s3://{}/{}", from.bucket, dir));
  return t;
}

Result<AthenaDdl> GenerateAthenaDdl(const AthenaDdlOptions& o) {
  DLQ_ASSIGN_OR_RETURN(AthenaTable table, BuildAthenaTable(o));
  AthenaDdl ddl;
  ddl.table = fmt::format("`{}`.`{}`", table.database, table.name);
  ddl.view = fmt::format("\"{}\".\"{}_dedup\"", table.database, table.name);

  auto quoted_pairs = [](const std::vector<std::pair<std::string, std::string>>& pairs, std::string_view indent,
                         std::string_view sep) {
    std::string out;
    for (size_t i = 0; i < pairs.size(); ++i) {
      out += fmt::format("{}'{}' = '{}'{}", indent, pairs[i].first, pairs[i].second, i + 1 < pairs.size() ? sep : "");
    }
    return out;
  };
  auto column_list = [](const std::vector<AthenaColumn>& cols) {
    std::string out;
    for (size_t i = 0; i < cols.size(); ++i) {
      out += fmt::format("  `{}` {}{}\n", cols[i].name, cols[i].type, i + 1 < cols.size() ? "," : "");
    }
    return out;
  };
  std::string& t = ddl.create_table;
  t += fmt::format("CREATE EXTERNAL TABLE IF NOT EXISTS {} (\n", ddl.table);
  t += column_list(table.columns);
  t += ")\nPARTITIONED BY (\n" + column_list(table.partitions) + ")\n";
  t += fmt::format("ROW FORMAT SERDE '{}'\n", table.serde);
  t += fmt::format("WITH SERDEPROPERTIES ({})\n", quoted_pairs(table.serde_properties, "", ", "));
  t += fmt::format("STORED AS INPUTFORMAT '{}'\n", table.input_format);
  t += fmt::format("OUTPUTFORMAT '{}'\n", table.output_format);
  t += fmt::format("LOCATION '{}'\n", table.location);
  t += "TBLPROPERTIES (\n" + quoted_pairs(table.properties, "  ", ",\n") + "\n);\n";

  // The view: one row per (queue, message_id), the first archived copy.
  // Partitioning the window by the queue partition (equal to `queue`) lets a
  // `dlq = '...'` predicate reach the table, which injected projection needs.
  std::string columns;
  for (const AthenaColumn& c : table.columns) columns += fmt::format("  \"{}\",\n", c.name);
  ddl.create_view = fmt::format(
      "CREATE OR REPLACE VIEW {0} AS\n"
      "SELECT\n{1}  \"{2}\",\n  \"{3}\"\n"
      "FROM (\n"
      "  SELECT *, row_number() OVER (PARTITION BY \"{2}\", \"message_id\" ORDER BY \"archived_at\") AS copy_number\n"
      "  FROM \"{4}\".\"{5}\"\n"
      "  WHERE \"message_id\" IS NOT NULL\n"
      ")\n"
      "WHERE copy_number = 1;\n",
      ddl.view, columns, kQueuePartition, kDayPartition, table.database, table.name);
  return ddl;
}

}  // namespace dlq
