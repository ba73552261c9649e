#include "aws/config_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace dlq {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t';
}

bool IsComment(std::string_view trimmed) {
  return !trimmed.empty() && (trimmed[0] == '#' || trimmed[0] == ';');
}

// Splits "kind name" at the first run of blanks; name is trimmed.
std::pair<std::string_view, std::string_view> SplitHeader(std::string_view header) {
  size_t p = 0;
  while (p < header.size() && !IsBlank(header[p])) ++p;
  return {header.substr(0, p), Trim(header.substr(p))};
}

class Parser {
 public:
  Parser(std::string_view text, ConfigFileKind kind, std::string_view path) : text_(text), kind_(kind) {
    file_.path = std::string(path);
  }

  Result<ConfigFile> Run() {
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t nl = text_.find('\n', pos);
      std::string_view line = text_.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      DLQ_RETURN_IF_ERROR(ParseLine(line));
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
    return std::move(file_);
  }

 private:
  Status Error(std::string_view what) const {
    return InvalidArgument(fmt::format("{} line {}: {}", file_.path, line_no_, what));
  }

  Status ParseLine(std::string_view line) {
    std::string_view trimmed = Trim(line);
    if (trimmed.empty() || IsComment(trimmed)) return Status::Ok();
    bool indented = IsBlank(line.front());
    if (indented && !key_.empty()) return ParseIndented(trimmed);
    if (trimmed.front() == '[') return ParseHeader(trimmed);
    return ParseKeyValue(trimmed);
  }

  Status ParseHeader(std::string_view trimmed) {
    size_t close = trimmed.find(']');
    if (close == std::string_view::npos) return Error("section header is missing its closing ']'");
    std::string_view rest = Trim(trimmed.substr(close + 1));
    if (!rest.empty() && !IsComment(rest)) return Error("unexpected text after the section header");
    std::string_view header = Trim(trimmed.substr(1, close - 1));
    if (header.empty()) return Error("empty section name");
    seen_section_ = true;
    key_.clear();
    section_ = nullptr;
    if (kind_ == ConfigFileKind::kCredentials) {
      section_ = &Section(file_.profiles, header);
      return Status::Ok();
    }
    if (header == "default") {
      section_ = &Section(file_.profiles, "default");
      return Status::Ok();
    }
    auto [kind, name] = SplitHeader(header);
    if (name.empty()) return Status::Ok();  // e.g. "[profile]": ignored like any unknown section
    if (kind == "profile") {
      section_ = &Section(file_.profiles, name);
    } else if (kind == "sso-session") {
      section_ = &Section(file_.sso_sessions, name);
    } else if (kind == "services") {
      section_ = &Section(file_.services, name);
    }
    // Any other section (e.g. "[dev]" in the config file) is ignored, as the AWS CLI does.
    return Status::Ok();
  }

  static ConfigSection& Section(std::map<std::string, ConfigSection, std::less<>>& map, std::string_view name) {
    auto it = map.find(name);
    if (it == map.end()) {
      it = map.emplace(std::string(name), ConfigSection{}).first;
      it->second.name = std::string(name);
    }
    return it->second;
  }

  Status ParseKeyValue(std::string_view trimmed) {
    size_t eq = trimmed.find_first_of("=:");
    if (eq == std::string_view::npos) return Error("expected 'key = value' or '[section]'");
    std::string key = ToLower(Trim(trimmed.substr(0, eq)));
    if (key.empty()) return Error("a setting has an empty name");
    if (!seen_section_) return Error(fmt::format("setting '{}' appears before any [section] header", key));
    std::string_view value = Trim(trimmed.substr(eq + 1));
    key_ = key;
    sub_mode_ = value.empty();
    if (section_ != nullptr) section_->values.insert_or_assign(std::move(key), std::string(value));
    return Status::Ok();
  }

  // An indented line after a setting: a sub-section entry when the setting's
  // value was empty, otherwise a continuation of its value.
  Status ParseIndented(std::string_view trimmed) {
    if (!sub_mode_) {
      if (section_ != nullptr) {
        std::string& v = section_->values[key_];
        v += '\n';
        v += trimmed;
      }
      return Status::Ok();
    }
    size_t eq = trimmed.find_first_of("=:");
    if (eq == std::string_view::npos) {
      return Error(fmt::format("expected 'key = value' in the nested section under '{}'", key_));
    }
    std::string sub_key = ToLower(Trim(trimmed.substr(0, eq)));
    if (sub_key.empty()) return Error(fmt::format("a setting under '{}' has an empty name", key_));
    if (section_ != nullptr) {
      section_->values.erase(key_);
      section_->sub_sections[key_].insert_or_assign(std::move(sub_key), std::string(Trim(trimmed.substr(eq + 1))));
    }
    return Status::Ok();
  }

  std::string_view text_;
  ConfigFileKind kind_;
  ConfigFile file_;
  int line_no_ = 0;
  bool seen_section_ = false;
  ConfigSection* section_ = nullptr;  // nullptr inside an ignored section
  std::string key_;                   // the last setting in the current section
  bool sub_mode_ = false;             // key_ had an empty value: indented lines form a sub-section
};

}  // namespace

std::optional<std::string> ConfigSection::Get(std::string_view key) const {
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> ConfigSection::GetSub(std::string_view sub_section, std::string_view key) const {
  auto it = sub_sections.find(sub_section);
  if (it == sub_sections.end()) return std::nullopt;
  auto kv = it->second.find(key);
  if (kv == it->second.end()) return std::nullopt;
  return kv->second;
}

const ConfigSection* ConfigFile::FindProfile(std::string_view name) const {
  auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

const ConfigSection* ConfigFile::FindServices(std::string_view name) const {
  auto it = services.find(name);
  return it == services.end() ? nullptr : &it->second;
}

Result<ConfigFile> ParseConfigFile(std::string_view text, ConfigFileKind kind, std::string_view path) {
  return Parser(text, kind, path).Run();
}

Result<ConfigFile> LoadConfigFile(const std::string& path, ConfigFileKind kind) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    ConfigFile empty;
    empty.path = path;
    return empty;
  }
  if (std::filesystem::is_directory(path, ec))
    return InvalidArgument(fmt::format("cannot read {}: it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    Status s = InvalidArgument(fmt::format("cannot read {}: {}", path, std::strerror(err)));
    return err == EACCES ? PermissionDenied(s.message()) : s;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return InvalidArgument(fmt::format("cannot read {}", path));
  return ParseConfigFile(buf.str(), kind, path);
}

std::string ExpandHome(std::string_view path, const Environment& env) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return std::string(path);
  auto home = env.GetNonEmpty("HOME");
  if (!home) home = env.GetNonEmpty("USERPROFILE");
  if (!home) return std::string(path);
  std::string out = *home;
  if (out.size() > 1 && out.back() == '/' && path.size() > 1) out.pop_back();
  out += path.substr(1);
  return out;
}

SharedConfigPaths ResolveSharedConfigPaths(const Environment& env) {
  SharedConfigPaths p;
  p.config = ExpandHome(env.GetNonEmpty("AWS_CONFIG_FILE").value_or("~/.aws/config"), env);
  p.credentials = ExpandHome(env.GetNonEmpty("AWS_SHARED_CREDENTIALS_FILE").value_or("~/.aws/credentials"), env);
  return p;
}

bool SharedConfig::HasProfile(std::string_view name) const {
  return config.FindProfile(name) != nullptr || credentials.FindProfile(name) != nullptr;
}

std::optional<ConfigSection> SharedConfig::MergedProfile(std::string_view name) const {
  const ConfigSection* from_config = config.FindProfile(name);
  const ConfigSection* from_credentials = credentials.FindProfile(name);
  if (from_config == nullptr && from_credentials == nullptr) return std::nullopt;
  ConfigSection merged;
  merged.name = std::string(name);
  if (from_config != nullptr) merged = *from_config;
  if (from_credentials != nullptr) {
    for (const auto& [k, v] : from_credentials->values) merged.values.insert_or_assign(k, v);
    for (const auto& [sub, kv] : from_credentials->sub_sections) {
      for (const auto& [k, v] : kv) merged.sub_sections[sub].insert_or_assign(k, v);
    }
  }
  return merged;
}

Result<SharedConfig> LoadSharedConfig(const Environment& env) {
  SharedConfigPaths paths = ResolveSharedConfigPaths(env);
  SharedConfig shared;
  DLQ_ASSIGN_OR_RETURN(shared.config, LoadConfigFile(paths.config, ConfigFileKind::kConfig));
  DLQ_ASSIGN_OR_RETURN(shared.credentials, LoadConfigFile(paths.credentials, ConfigFileKind::kCredentials));
  return shared;
}

}  // namespace dlq
