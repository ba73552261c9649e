#include "common/aws_regions.h"

#include <gtest/gtest.h>

#include <regex>

#include "common/strings.h"

namespace dlq {
namespace {

TEST(AwsRegionsTest, KnowsCommercialGovCloudAndChinaRegions) {
  for (const char* r : {"us-east-1", "eu-west-1", "ap-southeast-2", "sa-east-1", "us-gov-west-1", "cn-north-1",
                        "cn-northwest-1", "il-central-1"}) {
    EXPECT_TRUE(IsKnownAwsRegion(r)) << r;
  }
}

TEST(AwsRegionsTest, EveryTableEntryMatchesTheRegionPattern) {
  std::regex pattern("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$");
  for (std::string_view r : KnownAwsRegions()) EXPECT_TRUE(std::regex_match(std::string(r), pattern)) << r;
}

TEST(AwsRegionsTest, RejectsNamesThatOnlyLookLikeRegions) {
  for (const char* r : {"us-est-1", "us-east-9", "US-EAST-1", "eu-west", "local", ""}) {
    EXPECT_FALSE(IsKnownAwsRegion(r)) << r;
  }
}

TEST(AwsRegionsTest, SuggestsTheClosestRegion) {
  EXPECT_EQ(SuggestAwsRegion("us-est-1"), "us-east-1");
  EXPECT_EQ(SuggestAwsRegion("US-EAST-1"), "us-east-1");
  EXPECT_EQ(SuggestAwsRegion("euwest1"), "eu-west-1");
  EXPECT_EQ(SuggestAwsRegion("eu-west"), "eu-west-1");
  EXPECT_EQ(SuggestAwsRegion("us-gov-west1"), "us-gov-west-1");
  EXPECT_EQ(SuggestAwsRegion("mars"), "");
}

TEST(AwsRegionsTest, CheckNamesTheRegionItsSourceAndTheSuggestion) {
  EXPECT_TRUE(CheckAwsRegion("eu-central-1", "--region").ok());
  Status st = CheckAwsRegion("us-est-1", "--region");
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("unknown region 'us-est-1' (from --region)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("did you mean 'us-east-1'?"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1"), std::string::npos) << st.message();
}

TEST(ClosestMatchTest, OnlySuggestsNamesWithinAFewEdits) {
  std::vector<std::string> commands = {"archive", "doctor", "run", "check", "help"};
  EXPECT_EQ(ClosestMatch("archvie", commands), "archive");
  EXPECT_EQ(ClosestMatch("docter", commands), "doctor");
  EXPECT_EQ(ClosestMatch("foo", commands), "");
  EXPECT_EQ(ClosestMatch("x", {}), "");
}

}  // namespace
}  // namespace dlq
