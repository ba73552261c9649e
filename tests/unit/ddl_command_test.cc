#include "app/ddl_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(DdlCommand, PrintsTableThenViewForHiveWithQueues) {
  DdlCommandOptions o;
  o.ddl.from = "s3://bucket/archive";
  o.layout = "hive";
  o.queues = "orders-dlq, payments-dlq";
  std::string out, err;
  ASSERT_EQ(RunDdl(o, out, err), 0) << err;
  EXPECT_THAT(err, IsEmpty());
  size_t table = out.find("CREATE EXTERNAL TABLE"), view = out.find("CREATE OR REPLACE VIEW");
  ASSERT_NE(table, std::string::npos);
  ASSERT_NE(view, std::string::npos);
  EXPECT_LT(table, view);
  EXPECT_THAT(out, HasSubstr("'projection.dlq.values' = 'orders-dlq,payments-dlq'"));
  EXPECT_THAT(out, HasSubstr("'s3://bucket/archive/queue=${dlq}/dt=${dt}/'"));
}

TEST(DdlCommand, FileArchiveExitsTwoSayingWhy) {
  DdlCommandOptions o;
  o.ddl.from = "file:///tmp/archive";
  std::string out, err;
  EXPECT_EQ(RunDdl(o, out, err), 2);
  EXPECT_THAT(out, IsEmpty());
  EXPECT_THAT(err, HasSubstr("error: ddl: --from file:///tmp/archive: Athena reads only S3"));
}

TEST(DdlCommand, UnknownLayoutExitsTwo) {
  DdlCommandOptions o;
  o.ddl.from = "s3://b/p";
  o.layout = "custom";
  std::string out, err;
  EXPECT_EQ(RunDdl(o, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--layout 'custom': expected default or hive"));
}

}  // namespace
}  // namespace dlq
