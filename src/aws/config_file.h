// The AWS shared config (~/.aws/config) and credentials (~/.aws/credentials)
// files, parsed as the AWS CLI reads them. Parsing is a pure function of the
// text; loading reads the files named by AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE (defaults under $HOME/.aws). A missing file is
// an empty file; a malformed line is an error naming the file and line (never
// the line's text, which may hold a secret).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "aws/environment.h"
#include "common/status.h"

namespace dlq {

using ConfigValues = std::map<std::string, std::string, std::less<>>;

// One section: a profile, an sso-session or a services section.
struct ConfigSection {
  std::string name;     // profile name ("default", "dev"), or the name after "sso-session"/"services"
  ConfigValues values;  // keys lower-cased; values trimmed
  // Nested sub-sections ("s3 =" followed by indented "key = value" lines), keys lower-cased.
  std::map<std::string, ConfigValues, std::less<>> sub_sections;

  std::optional<std::string> Get(std::string_view key) const;
  std::optional<std::string> GetSub(std::string_view sub_section, std::string_view key) const;
};

enum class ConfigFileKind {
  kConfig,       // "[default]", "[profile NAME]", "[sso-session NAME]", "[services NAME]"
  kCredentials,  // "[NAME]"
};

struct ConfigFile {
  std::string path;  // for messages
  std::map<std::string, ConfigSection, std::less<>> profiles;
  std::map<std::string, ConfigSection, std::less<>> sso_sessions;
  std::map<std::string, ConfigSection, std::less<>> services;

  const ConfigSection* FindProfile(std::string_view name) const;
  const ConfigSection* FindServices(std::string_view name) const;
};

// Parses `text`; `path` only names the file in errors.
Result<ConfigFile> ParseConfigFile(std::string_view text, ConfigFileKind kind, std::string_view path);
// Reads and parses the file at `path`; a missing file yields an empty ConfigFile.
Result<ConfigFile> LoadConfigFile(const std::string& path, ConfigFileKind kind);

// "~" and "~/x" expand with HOME (falling back to USERPROFILE); other paths are returned as given.
std::string ExpandHome(std::string_view path, const Environment& env);

struct SharedConfigPaths {
  std::string config;       // AWS_CONFIG_FILE or ~/.aws/config, expanded
  std::string credentials;  // AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, expanded
};
SharedConfigPaths ResolveSharedConfigPaths(const Environment& env);

// Both files together.
struct SharedConfig {
  ConfigFile config;
  ConfigFile credentials;

  bool HasProfile(std::string_view name) const;
  // The profile's keys from both files; the credentials file wins for keys
  // present in both. Sub-sections come from the config file. nullopt when
  // neither file has the profile.
  std::optional<ConfigSection> MergedProfile(std::string_view name) const;
};
Result<SharedConfig> LoadSharedConfig(const Environment& env);

}  // namespace dlq
