// ParseDestination: an s3:// destination names exactly one place, whatever
// HTTP client sends it; bad segments are refused with the segment named.
#include "archive/destination.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "aws/environment.h"
#include "lambda/lambda_config.h"
#include "monitor/config.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;

TEST(Destination, RefusesPrefixWithDotDotSegmentNamingIt) {
  Result<Destination> d = ParseDestination("s3://bucketa/../bucketb/pwn");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(),
            "destination 's3://bucketa/../bucketb/pwn': prefix segment '..' is not allowed (dot segments would be "
            "removed by HTTP clients and name another place)");
}

TEST(Destination, RefusesPrefixWithDotSegment) {
  for (std::string uri : {"s3://b/./p", "s3://b/p/.", "s3://b/p/./q", "s3://b/p/../"}) {
    Result<Destination> d = ParseDestination(uri);
    ASSERT_FALSE(d.ok()) << uri;
    EXPECT_THAT(d.status().message(), HasSubstr("prefix segment '.")) << uri;
  }
}

// Path-style requests put the bucket in the path: "/../key" would be another
// bucket's key.
TEST(Destination, RefusesBucketThatIsADotSegment) {
  for (std::string uri : {"s3://../x", "s3://./x", "s3://.."}) {
    Result<Destination> d = ParseDestination(uri);
    ASSERT_FALSE(d.ok()) << uri;
    EXPECT_THAT(d.status().message(), HasSubstr("bucket segment '.")) << uri;
  }
}

TEST(Destination, RefusesPrefixWithEmptySegment) {
  for (std::string uri : {"s3://b//p", "s3://b/p//q", "s3://b/p//"}) {
    Result<Destination> d = ParseDestination(uri);
    ASSERT_FALSE(d.ok()) << uri;
    EXPECT_THAT(d.status().message(), HasSubstr("empty segment")) << uri;
  }
}

TEST(Destination, RefusesControlCharacterAndShowsItEscaped) {
  Result<Destination> d = ParseDestination("s3://b/ok/a\rb");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "destination 's3://b/ok/a\\x0db': prefix segment 'a\\x0db' holds control character 0x0d, which is not "
            "allowed");
}

TEST(Destination, DropsOneTrailingSlash) {
  EXPECT_EQ(ParseDestination("s3://b/p/")->prefix, "p");
  EXPECT_EQ(ParseDestination("s3://b/a/b/")->prefix, "a/b");
  EXPECT_EQ(ParseDestination("s3://b/")->prefix, "");
  EXPECT_EQ(ParseDestination("s3://b")->prefix, "");
  EXPECT_EQ(ParseDestination("s3://b")->bucket, "b");
  EXPECT_EQ(ArchivePrefix(*ParseDestination("s3://b/")), "dlq-archive");
}

TEST(Destination, AcceptsDotsInsideSegments) {
  Result<Destination> d = ParseDestination("s3://my.bucket/.../a.b/..c");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bucket, "my.bucket");
  EXPECT_EQ(d->prefix, ".../a.b/..c");
}

// The operator's own directory: the kernel resolves it the same way for the
// writer and every reader, so it is not rewritten or refused.
TEST(Destination, TakesAFileDirectoryAsGiven) {
  Result<Destination> d = ParseDestination("file:///srv/archive/");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->root, "/srv/archive");
  EXPECT_EQ(d->prefix, "");
}

// The daemon's config and the Lambda's environment build destinations and
// templates the same way, so they refuse the same things.
TEST(Destination, DaemonConfigAndLambdaRefuseDotSegments) {
  auto config = ParseMonitorConfig(
      "defaults: { destination: 's3://bucketa/../bucketb/pwn' }\n"
      "groups:\n  - { name: a, discover: true, key_template: '{prefix}/{queue}/../{batch_id}' }\n",
      "dlq-archive.yaml", MapEnvironment());
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("defaults.destination: destination 's3://bucketa/../bucketb/pwn': "
                                                   "prefix segment '..' is not allowed"));
  EXPECT_THAT(config.status().message(), HasSubstr("key_template: \"{prefix}/{queue}/../{batch_id}\": key template"));
  EXPECT_THAT(config.status().message(), HasSubstr("segment '..' is or can render as a dot segment"));

  MapEnvironment env{{"AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"}, {"DLQ_ARCHIVE_DESTINATION", "s3://b/./p"}};
  auto lambda = LambdaSettingsFromEnv(env);
  ASSERT_FALSE(lambda.ok());
  EXPECT_THAT(lambda.status().message(), HasSubstr("DLQ_ARCHIVE_DESTINATION: destination 's3://b/./p': prefix "
                                                   "segment '.' is not allowed"));
  env.Set("DLQ_ARCHIVE_DESTINATION", "s3://b/p");
  env.Set("DLQ_ARCHIVE_KEY_TEMPLATE", "{prefix}/{region}../{batch_id}");
  lambda = LambdaSettingsFromEnv(env);
  ASSERT_FALSE(lambda.ok());
  EXPECT_THAT(lambda.status().message(), HasSubstr("DLQ_ARCHIVE_KEY_TEMPLATE: key template"));
  EXPECT_THAT(lambda.status().message(), HasSubstr("can render as a dot segment"));
}

}  // namespace
}  // namespace dlq
