#include "aws/config_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dlq {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-config-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ConfigFile MustParse(std::string_view text, ConfigFileKind kind = ConfigFileKind::kConfig) {
  auto r = ParseConfigFile(text, kind, "test-config");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : ConfigFile{};
}

TEST(ConfigFile, ParsesDefaultAndNamedProfilesInConfigFile) {
  ConfigFile f = MustParse(
      "[default]\n"
      "region = us-east-1\n"
      "[profile dev]\n"
      "region=eu-west-1\n"
      "output = json\n");
  ASSERT_NE(f.FindProfile("default"), nullptr);
  EXPECT_EQ(f.FindProfile("default")->Get("region"), "us-east-1");
  ASSERT_NE(f.FindProfile("dev"), nullptr);
  EXPECT_EQ(f.FindProfile("dev")->Get("region"), "eu-west-1");
  EXPECT_EQ(f.FindProfile("dev")->Get("output"), "json");
  EXPECT_EQ(f.FindProfile("dev")->Get("missing"), std::nullopt);
  EXPECT_EQ(f.FindProfile("profile dev"), nullptr);
}

TEST(ConfigFile, ProfileDefaultHeaderIsTheDefaultProfile) {
  ConfigFile f = MustParse("[profile default]\nregion = ap-south-1\n");
  ASSERT_NE(f.FindProfile("default"), nullptr);
  EXPECT_EQ(f.FindProfile("default")->Get("region"), "ap-south-1");
}

TEST(ConfigFile, SkipsCommentsBlankLinesAndSurroundingWhitespace) {
  ConfigFile f = MustParse(
      "# leading comment\n"
      "; another comment\n"
      "\n"
      "  [ profile  spaced ]   # trailing comment on the header\n"
      "\t# indented comment\n"
      "Region   =   us-west-2   \n"
      "\n"
      "role_arn: arn:aws:iam::123456789012:role/x\n");
  const ConfigSection* p = f.FindProfile("spaced");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Get("region"), "us-west-2");
  EXPECT_EQ(p->Get("role_arn"), "arn:aws:iam::123456789012:role/x");
  EXPECT_EQ(p->values.size(), 2u);
}

TEST(ConfigFile, LowerCasesKeysButNotProfileNames) {
  ConfigFile f = MustParse("[profile Prod]\nAWS_Access_Key_ID = AKIDEXAMPLE\n");
  ASSERT_NE(f.FindProfile("Prod"), nullptr);
  EXPECT_EQ(f.FindProfile("prod"), nullptr);
  EXPECT_EQ(f.FindProfile("Prod")->Get("aws_access_key_id"), "AKIDEXAMPLE");
}

TEST(ConfigFile, ParsesIndentedSubSections) {
  ConfigFile f = MustParse(
      "[profile dev]\n"
      "s3 =\n"
      "  addressing_style = path\n"
      "  Max_Concurrent_Requests = 10\n"
      "region = us-east-1\n"
      "[services local]\n"
      "sqs =\n"
      "  endpoint_url = http://localhost:4566\n"
      "s3 =\n"
      "    endpoint_url = http://localhost:9000\n");
  const ConfigSection* p = f.FindProfile("dev");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->GetSub("s3", "addressing_style"), "path");
  EXPECT_EQ(p->GetSub("s3", "max_concurrent_requests"), "10");
  EXPECT_EQ(p->Get("region"), "us-east-1");
  EXPECT_EQ(p->Get("s3"), std::nullopt);
  const ConfigSection* s = f.FindServices("local");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->GetSub("sqs", "endpoint_url"), "http://localhost:4566");
  EXPECT_EQ(s->GetSub("s3", "endpoint_url"), "http://localhost:9000");
}

TEST(ConfigFile, IndentedLineAfterAValueContinuesIt) {
  ConfigFile f = MustParse("[default]\ncredential_process = /bin/tool\n  --flag\nregion = x\n");
  EXPECT_EQ(f.FindProfile("default")->Get("credential_process"), "/bin/tool\n--flag");
  EXPECT_EQ(f.FindProfile("default")->Get("region"), "x");
}

TEST(ConfigFile, KeepsSsoSessionsAndIgnoresUnprefixedSectionsInConfigFile) {
  ConfigFile f = MustParse(
      "[sso-session corp]\nsso_region = us-east-1\n"
      "[dev]\nregion = should-be-ignored\n");
  ASSERT_NE(f.sso_sessions.find("corp"), f.sso_sessions.end());
  EXPECT_EQ(f.sso_sessions.at("corp").Get("sso_region"), "us-east-1");
  EXPECT_EQ(f.FindProfile("dev"), nullptr);
}

TEST(ConfigFile, CredentialsFileSectionsAreProfileNames) {
  ConfigFile f = MustParse(
      "[default]\naws_access_key_id = AKIDDEFAULT\n"
      "[dev]\naws_access_key_id = AKIDDEV\n",
      ConfigFileKind::kCredentials);
  EXPECT_EQ(f.FindProfile("default")->Get("aws_access_key_id"), "AKIDDEFAULT");
  EXPECT_EQ(f.FindProfile("dev")->Get("aws_access_key_id"), "AKIDDEV");
}

TEST(ConfigFile, HandlesCrlfLineEndings) {
  ConfigFile f = MustParse("[default]\r\nregion = us-east-1\r\n");
  EXPECT_EQ(f.FindProfile("default")->Get("region"), "us-east-1");
}

TEST(ConfigFile, MalformedLineErrorNamesFileAndLineButNotItsText) {
  auto r = ParseConfigFile("[default]\nregion = us-east-1\n\naws_secret_access_key wJalrXUtnFEMIsecret\n",
                           ConfigFileKind::kCredentials, "/home/u/.aws/credentials");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("/home/u/.aws/credentials line 4"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("wJalrXUtnFEMIsecret"), std::string::npos);
}

TEST(ConfigFile, RejectsUnclosedHeaderKeyBeforeSectionAndEmptyKey) {
  auto unclosed = ParseConfigFile("[profile dev\nregion = x\n", ConfigFileKind::kConfig, "cfg");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("cfg line 1"), std::string::npos);
  EXPECT_NE(unclosed.status().message().find("']'"), std::string::npos);

  auto orphan = ParseConfigFile("# c\nregion = x\n", ConfigFileKind::kConfig, "cfg");
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find("cfg line 2"), std::string::npos);

  auto empty_key = ParseConfigFile("[default]\n = x\n", ConfigFileKind::kConfig, "cfg");
  ASSERT_FALSE(empty_key.ok());
  EXPECT_NE(empty_key.status().message().find("line 2"), std::string::npos);

  auto trailing = ParseConfigFile("[default] junk\n", ConfigFileKind::kConfig, "cfg");
  EXPECT_FALSE(trailing.ok());

  auto bad_sub = ParseConfigFile("[default]\ns3 =\n  no-equals-here\n", ConfigFileKind::kConfig, "cfg");
  ASSERT_FALSE(bad_sub.ok());
  EXPECT_NE(bad_sub.status().message().find("line 3"), std::string::npos);
}

TEST(ConfigFile, LoadsPathsFromEnvironmentAndTreatsMissingFilesAsEmpty) {
  TempDir dir;
  std::string config = dir.Write("cfg", "[profile dev]\nregion = eu-central-1\n");
  MapEnvironment env{{"AWS_CONFIG_FILE", config}, {"AWS_SHARED_CREDENTIALS_FILE", dir.path() + "/absent"}};
  auto shared = LoadSharedConfig(env);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(shared->config.path, config);
  EXPECT_TRUE(shared->HasProfile("dev"));
  EXPECT_TRUE(shared->credentials.profiles.empty());
}

TEST(ConfigFile, ExpandsTildeWithHome) {
  MapEnvironment env{{"HOME", "/home/alice"}};
  EXPECT_EQ(ExpandHome("~/.aws/config", env), "/home/alice/.aws/config");
  EXPECT_EQ(ExpandHome("~", env), "/home/alice");
  EXPECT_EQ(ExpandHome("/etc/x", env), "/etc/x");
  EXPECT_EQ(ExpandHome("~bob/x", env), "~bob/x");
  SharedConfigPaths paths = ResolveSharedConfigPaths(env);
  EXPECT_EQ(paths.config, "/home/alice/.aws/config");
  EXPECT_EQ(paths.credentials, "/home/alice/.aws/credentials");
  MapEnvironment overridden{{"HOME", "/home/alice"}, {"AWS_CONFIG_FILE", "~/custom/cfg"}};
  EXPECT_EQ(ResolveSharedConfigPaths(overridden).config, "/home/alice/custom/cfg");
}

TEST(ConfigFile, LoadReportsTheFileOfAMalformedLine) {
  TempDir dir;
  std::string creds = dir.Write("creds", "[default]\nthis line is broken\n");
  MapEnvironment env{{"AWS_CONFIG_FILE", dir.path() + "/none"}, {"AWS_SHARED_CREDENTIALS_FILE", creds}};
  auto shared = LoadSharedConfig(env);
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find(creds + " line 2"), std::string::npos) << shared.status().message();
}

TEST(ConfigFile, MergedProfilePrefersCredentialsFile) {
  SharedConfig shared;
  shared.config = MustParse(
      "[profile dev]\nregion = us-east-1\naws_access_key_id = AKIDFROMCONFIG\ns3 =\n  addressing_style = path\n");
  shared.credentials =
      MustParse("[dev]\naws_access_key_id = AKIDFROMCREDS\naws_secret_access_key = s\n", ConfigFileKind::kCredentials);
  auto merged = shared.MergedProfile("dev");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->Get("aws_access_key_id"), "AKIDFROMCREDS");
  EXPECT_EQ(merged->Get("aws_secret_access_key"), "s");
  EXPECT_EQ(merged->Get("region"), "us-east-1");
  EXPECT_EQ(merged->GetSub("s3", "addressing_style"), "path");
  EXPECT_FALSE(shared.MergedProfile("nope").has_value());
}

}  // namespace
}  // namespace dlq
