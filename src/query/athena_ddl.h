// Athena DDL for an S3 archive: a CREATE EXTERNAL TABLE over the objects
// (OpenX JSON SerDe, every record field of doc/archive-format.md, partition
// projection matching the archiver's key layout) and a view that keeps one
// copy of each message. Pure; no I/O.
//
// Partition columns: `dlq` (the queue name as it appears in the key; a data
// column is already called `queue`) and `dt` (the key's UTC day, a string in
// the key's format: yyyyMMdd for the default layout, yyyy-MM-dd for hive).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dlq {

enum class ArchiveLayout { kDefault, kHive };  // kDefaultKeyTemplate, kHiveKeyTemplate

struct AthenaDdlOptions {
  std::string from;  // s3://BUCKET[/PREFIX], the URL `archive --to` was given
  ArchiveLayout layout = ArchiveLayout::kDefault;
  std::string database = "default";   // lower-case letters, digits and '_'
  std::string table = "dlq_archive";  // same; the view is named TABLE_dedup
  // Empty: the queue partition is `injected` (every query names its queues).
  // Otherwise `enum` over these SQS queue names (queries may omit the queue).
  std::vector<std::string> queues;
  std::string first_day = "2020-01-01";  // YYYY-MM-DD: start of the day projection (ends at NOW)
};

// The table as data: the one definition both the DDL text and the stack's
// AWS::Glue::Table (src/deploy) are written from.
struct AthenaColumn {
  std::string name;
  std::string type;  // Hive type, e.g. "map<string,string>"
};
struct AthenaTable {
  std::string database;
  std::string name;
  std::vector<AthenaColumn> columns;     // every record field, archive-format.md order
  std::vector<AthenaColumn> partitions;  // `dlq`, `dt` (strings)
  std::string serde;                     // serialization library class
  std::vector<std::pair<std::string, std::string>> serde_properties;
  std::string input_format;
  std::string output_format;
  std::string bucket;    // the S3 bucket of `location`
  std::string prefix;    // key prefix under the bucket (the default prefix when `from` has none)
  std::string location;  // "s3://BUCKET/PREFIX/"
  // projection.* and storage.location.template, in DDL order. The template
  // holds ${dlq} and ${dt}, which Athena fills in.
  std::vector<std::pair<std::string, std::string>> properties;
};

// kInvalidArgument as GenerateAthenaDdl.
Result<AthenaTable> BuildAthenaTable(const AthenaDdlOptions& options);

struct AthenaDdl {
  std::string create_table;  // one statement ending in ";\n"
  std::string create_view;   // one statement ending in ";\n"
  std::string table;         // `database`.`table` as written in the DDL
  std::string view;          // "database"."table_dedup"
};

// kInvalidArgument naming the option and why: a URL that is not s3:// (Athena
// reads only S3), a bad identifier, queue name or first_day, or a prefix with
// a quote or backslash (it could not be written as a DDL string literal).
Result<AthenaDdl> GenerateAthenaDdl(const AthenaDdlOptions& options);

}  // namespace dlq
