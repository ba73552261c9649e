// The daemon config's parser: YAML through the schema (config_schema.cc),
// then the checks that span several keys (config_checks.cc).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include "common/byte_size.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "monitor/config_internal.h"

namespace dlq {
namespace {

using config_internal::CheckGroup;
using config_internal::CheckGroupRegion;
using config_internal::CheckSettings;
using config_internal::CheckTop;
using config_internal::Contains;
using config_internal::Join;
using config_internal::Joined;
using config_internal::Loc;
using config_internal::Origin;
using config_internal::Origins;
using config_internal::Problem;
using config_internal::Problems;
using config_internal::Quote;
using config_internal::SizeText;
using std::chrono::seconds;

Loc LocOf(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// A rough upper bound of the nesting depth of a YAML document, from its text:
// block indentation levels, compact "- - x" indicators and flow brackets.
int EstimateYamlDepth(std::string_view text) {
  int max_depth = 0;
  int flow = 0;
  std::vector<size_t> indents;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    int block = 0;
    size_t i = 0;
    if (flow == 0) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i == line.size() || line[i] == '#') {
        if (end == text.size()) break;
        continue;
      }
      while (!indents.empty() && indents.back() >= i) indents.pop_back();
      indents.push_back(i);
      block = static_cast<int>(indents.size());
      while (i < line.size() && (line[i] == '-' || line[i] == '?' || line[i] == ':') &&
             (i + 1 == line.size() || line[i + 1] == ' ')) {
        ++block;
        i += 2;
        while (i < line.size() && line[i] == ' ') ++i;
      }
    }
    int line_flow_max = flow;
    char quote = 0;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote != 0) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        break;
      } else if (c == '[' || c == '{') {
        line_flow_max = std::max(line_flow_max, ++flow);
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
    max_depth = std::max(max_depth, block + line_flow_max);
    if (end == text.size()) break;
  }
  return max_depth;
}

class ConfigParser {
 public:
  ConfigParser(std::string path, const Environment& env) : path_(std::move(path)), env_(env) {}

  Result<MonitorConfig> Parse(std::string_view text);

 private:
  struct Error {
    Loc loc;
    std::string text;
  };
  using Entries = std::vector<std::pair<std::string, YAML::Node>>;

  void Fail(Loc loc, std::string_view field, std::string_view message) {
    std::string text = field.empty() ? fmt::format("{}:{}:{}: {}", path_, loc.line, loc.col, message)
                                     : fmt::format("{}:{}:{}: {}: {}", path_, loc.line, loc.col, field, message);
    Charge(loc, text.size());
    errors_.push_back({loc, std::move(text)});
  }

  // Thrown once the document has expanded past kMaxExpandedConfigBytes (an
  // alias or a ${VAR} used over and over): reading stops at once.
  struct TooLarge {
    Loc loc;
  };
  // Counts `bytes` more of what the document expands to, at `loc`.
  void Charge(Loc loc, size_t bytes) {
    expanded_ += bytes;
    if (expanded_ > kMaxExpandedConfigBytes) throw TooLarge{loc};
  }
  void Charge(const YAML::Node& at, size_t bytes) { Charge(LocOf(at), bytes); }
  static constexpr size_t kNodeCost = 16;  // per mapping entry or list item visited
  void Fail(const YAML::Node& at, std::string_view field, std::string_view message) { Fail(LocOf(at), field, message); }

  // The entries of a mapping (a null node is an empty mapping); reports
  // unknown, duplicate and non-scalar keys.
  Entries MapEntries(const YAML::Node& n, const std::string& path, std::span<const std::string_view> known,
                     std::span<const std::string_view> known_elsewhere = {}, std::string_view elsewhere = {});
  std::vector<YAML::Node> SeqItems(const YAML::Node& n, const std::string& path);

  std::optional<std::string> Expand(const YAML::Node& n, const std::string& path, std::string_view raw, bool secret);
  std::optional<std::string> Str(const YAML::Node& n, const std::string& path, bool secret = false);
  std::optional<int64_t> Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi);
  std::optional<bool> Bool(const YAML::Node& n, const std::string& path);
  std::optional<seconds> Duration(const YAML::Node& n, const std::string& path);
  std::optional<uint64_t> Size(const YAML::Node& n, const std::string& path);
  std::optional<std::vector<std::string>> StrList(const YAML::Node& n, const std::string& path);

  // One mapping being applied with the schema.
  struct Block {
    std::vector<ConfigScope> scopes;
    std::string base;  // field path of the mapping, e.g. "groups[0]"
    ConfigTarget target;
    Origins* origins;
    bool in_group = false;
    std::set<std::string> present;  // keys given, valid or not
  };
  // The schema's key `key` (dotted) in one of `scopes`; nullptr when `key` is a section.
  static const ConfigKey* Find(const std::vector<ConfigScope>& scopes, std::string_view key);
  // The names directly below `prefix` ("" for the top) in `scopes`.
  static std::vector<std::string_view> Children(const std::vector<ConfigScope>& scopes, std::string_view prefix);
  // Reads `n` as `key`'s type and checks its range; reports and returns nullopt otherwise.
  std::optional<ConfigValue> Read(const ConfigKey& key, const YAML::Node& n, const std::string& path);
  // Applies the value of `key` (a key or a section, dotted from the block).
  void ApplyEntry(Block& b, const std::string& key, const YAML::Node& value);
  // Applies every key of the mapping `n`, the section `prefix` of the block.
  void ApplyMapping(Block& b, const YAML::Node& n, const std::string& prefix,
                    std::span<const std::string_view> known_elsewhere = {}, std::string_view elsewhere = {});
  void ParseTop(const YAML::Node& root, MonitorConfig& config);
  void ParseWebhooks(const YAML::Node& n, const std::string& path, MonitorConfig& config);
  void ParseHeaders(const YAML::Node& n, const std::string& path, WebhookConfig& hook);
  void ParseGroup(const YAML::Node& n, size_t index, const GroupSettings& defaults, const Origins& default_origins,
                  std::set<std::string>& names, MonitorConfig& config);
  // Reports what a check found.
  void Report(const Problems& problems) {
    for (const Problem& p : problems) Fail(p.loc, p.field, p.message);
  }

  std::string path_;
  const Environment& env_;
  std::vector<Error> errors_;
  size_t expanded_ = 0;  // see Charge
};

ConfigParser::Entries ConfigParser::MapEntries(const YAML::Node& n, const std::string& path,
                                               std::span<const std::string_view> known,
                                               std::span<const std::string_view> known_elsewhere,
                                               std::string_view elsewhere) {
  Entries out;
  if (n.IsNull()) return out;
  if (!n.IsMap()) {
    Fail(n, path, "expected a mapping (key: value)");
    return out;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
    Charge(key, kNodeCost + (key.IsScalar() ? key.Scalar().size() : 0));
    if (!key.IsScalar()) {
      Fail(key, path, "keys must be plain names");
      continue;
    }
    const std::string& name = key.Scalar();
    if (!Contains(known, name)) {
      if (Contains(known_elsewhere, name)) {
        Fail(key, path, fmt::format("field '{}' can only be set {}", name, elsewhere));
        continue;
      }
      // A name far longer than any field is shown cut and gets no suggestion
      // (the distance costs its length times each field's).
      constexpr size_t kShown = 64;
      std::string best;
      size_t best_d = SIZE_MAX;
      for (std::string_view k : known) {
        if (name.size() > kShown) break;
        size_t d = EditDistance(name, k);
        if (d < best_d) best_d = d, best = std::string(k);
      }
      std::string shown = Quote(std::string_view(name).substr(0, kShown));
      shown = shown.substr(1, shown.size() - 2) + (name.size() > kShown ? "..." : "");
      if (best_d <= std::max<size_t>(2, name.size() / 4)) {
        Fail(key, path, fmt::format("unknown field '{}' (did you mean '{}'?)", shown, best));
      } else {
        Fail(key, path, fmt::format("unknown field '{}'", shown));
      }
      continue;
    }
    if (!seen.insert(name).second) {
      Fail(key, path, fmt::format("field '{}' is given twice", name));
      continue;
    }
    out.emplace_back(name, it->second);
  }
  return out;
}

std::vector<YAML::Node> ConfigParser::SeqItems(const YAML::Node& n, const std::string& path) {
  std::vector<YAML::Node> out;
  if (n.IsNull()) return out;
  if (!n.IsSequence()) {
    Fail(n, path, "expected a list");
    return out;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    Charge(n, kNodeCost);
    out.push_back(*it);
  }
  return out;
}

std::optional<std::string> ConfigParser::Expand(const YAML::Node& n, const std::string& path, std::string_view raw,
                                                bool secret) {
  std::string out;
  size_t i = 0;
  while (i < raw.size()) {
    if (raw.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (raw.compare(i, 2, "${") != 0) {
      out += raw[i++];
      continue;
    }
    size_t close = raw.find('}', i + 2);
    if (close == std::string_view::npos) {
      Fail(n, path, "unterminated ${ (write $${ for a literal ${)");
      return std::nullopt;
    }
    std::string_view name = raw.substr(i + 2, close - i - 2);
    bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                 std::all_of(name.begin(), name.end(),
                             [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid) {
      Fail(
          n, path,
          secret ? "bad environment variable reference" : fmt::format("bad environment variable name {}", Quote(name)));
      return std::nullopt;
    }
    auto value = env_.GetEnv(name);
    if (!value) {
      Fail(n, path, fmt::format("environment variable {} is not set", name));
      return std::nullopt;
    }
    Charge(n, value->size());
    out += *value;
    i = close + 1;
  }
  return out;
}

std::optional<std::string> ConfigParser::Str(const YAML::Node& n, const std::string& path, bool secret) {
  if (!n.IsScalar()) {
    Fail(n, path, n.IsNull() ? "has no value" : "expected a string");
    return std::nullopt;
  }
  Charge(n, n.Scalar().size());
  return Expand(n, path, n.Scalar(), secret);
}

std::optional<int64_t> ConfigParser::Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  std::optional<int64_t> v = ParseInt64(*s);
  if (!v) {
    Fail(n, path, fmt::format("{} is not a whole number", Quote(*s)));
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    Fail(n, path, fmt::format("{} is out of range [{}, {}]", *v, lo, hi));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ConfigParser::Bool(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  if (IEquals(*s, "true")) return true;
  if (IEquals(*s, "false")) return false;
  Fail(n, path, fmt::format("{} is not a boolean (true or false)", Quote(*s)));
  return std::nullopt;
}

std::optional<seconds> ConfigParser::Duration(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  std::optional<seconds> d;
  if (s->size() <= 32) d = ParseDuration(*s);
  if (!d) {
    Fail(n, path, fmt::format("{} is not a duration (e.g. 60s, 5m)", Quote(*s)));
    return std::nullopt;
  }
  return d;
}

std::optional<uint64_t> ConfigParser::Size(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  if (auto v = ParseByteSize(*s)) return v;
  Fail(n, path, fmt::format("{} is not a size (e.g. 8MiB, 512KiB, 1048576)", Quote(*s)));
  return std::nullopt;
}

std::optional<std::vector<std::string>> ConfigParser::StrList(const YAML::Node& n, const std::string& path) {
  if (n.IsScalar()) {  // a single value is a list of one
    auto s = Str(n, path);
    if (!s) return std::nullopt;
    return std::vector<std::string>{*s};
  }
  if (!n.IsNull() && !n.IsSequence()) {
    Fail(n, path, "expected a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  size_t i = 0;
  for (const YAML::Node& item : SeqItems(n, path)) {
    auto s = Str(item, fmt::format("{}[{}]", path, i++));
    if (s) {
      out.push_back(*s);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

const ConfigKey* ConfigParser::Find(const std::vector<ConfigScope>& scopes, std::string_view key) {
  for (const ConfigKey& k : ConfigSchema()) {
    if (k.key == key && std::find(scopes.begin(), scopes.end(), k.scope) != scopes.end()) return &k;
  }
  return nullptr;
}

std::vector<std::string_view> ConfigParser::Children(const std::vector<ConfigScope>& scopes, std::string_view prefix) {
  std::vector<std::string_view> out;
  for (const ConfigKey& k : ConfigSchema()) {
    if (std::find(scopes.begin(), scopes.end(), k.scope) == scopes.end()) continue;
    std::string_view rest = k.key;
    if (!prefix.empty()) {
      if (rest.size() <= prefix.size() || !StartsWith(rest, prefix) || rest[prefix.size()] != '.') continue;
      rest.remove_prefix(prefix.size() + 1);
    }
    rest = rest.substr(0, rest.find('.'));
    if (std::find(out.begin(), out.end(), rest) == out.end()) out.push_back(rest);
  }
  return out;
}

std::optional<ConfigValue> ConfigParser::Read(const ConfigKey& key, const YAML::Node& n, const std::string& path) {
  ConfigValue v;
  switch (key.type) {
    case ConfigType::kString:
    case ConfigType::kSecret: {
      if (!key.not_scalar.empty() && !n.IsScalar()) {
        Fail(n, path, key.not_scalar);
        return std::nullopt;
      }
      auto s = Str(n, path, key.type == ConfigType::kSecret);
      if (!s) return std::nullopt;
      v.text = std::move(*s);
      return v;
    }
    case ConfigType::kChoice: {
      auto s = Str(n, path);
      if (!s) return std::nullopt;
      if (!Contains(key.choices, *s)) {
        Fail(n, path, fmt::format("{} is not one of {}", Quote(*s), Joined(key.choices)));
        return std::nullopt;
      }
      v.text = std::move(*s);
      return v;
    }
    case ConfigType::kInt: {
      auto x = Int(n, path, key.lo, key.hi);
      if (!x) return std::nullopt;
      v.number = *x;
      return v;
    }
    case ConfigType::kBool: {
      auto b = Bool(n, path);
      if (!b) return std::nullopt;
      v.flag = *b;
      return v;
    }
    case ConfigType::kDuration: {
      auto d = Duration(n, path);
      if (!d) return std::nullopt;
      if ((key.lo != 0 || key.hi != 0) && (d->count() < key.lo || d->count() > key.hi)) {
        Fail(n, path,
             fmt::format("{} is out of range [{}, {}]", FormatDuration(*d), FormatDuration(seconds(key.lo)),
                         FormatDuration(seconds(key.hi))));
        return std::nullopt;
      }
      v.duration = *d;
      return v;
    }
    case ConfigType::kSize: {
      auto b = Size(n, path);
      if (!b) return std::nullopt;
      if (*b < static_cast<uint64_t>(key.lo) || *b > static_cast<uint64_t>(key.hi)) {
        Fail(n, path,
             fmt::format("{} bytes is out of range [{}, {}]", *b, SizeText(static_cast<uint64_t>(key.lo)),
                         SizeText(static_cast<uint64_t>(key.hi))));
        return std::nullopt;
      }
      v.bytes = *b;
      return v;
    }
    case ConfigType::kList: {
      auto list = StrList(n, path);
      if (!list) return std::nullopt;
      bool ok = true;
      for (size_t i = 0; i < list->size(); ++i) {
        Status s = key.check_item ? key.check_item((*list)[i]) : Status::Ok();
        if (s.ok()) continue;
        Fail(n.IsSequence() ? n[i] : n, fmt::format("{}[{}]", path, i), s.message());
        ok = false;
      }
      if (!ok) return std::nullopt;
      v.list = std::move(*list);
      return v;
    }
    case ConfigType::kWebhooks:
    case ConfigType::kHeaders: break;  // mappings and lists of their own: see ApplyEntry
  }
  return std::nullopt;
}

void ConfigParser::ApplyEntry(Block& b, const std::string& key, const YAML::Node& value) {
  const std::string path = Join(b.base, key);
  b.present.insert(key);
  const ConfigKey* k = Find(b.scopes, key);
  if (k == nullptr) {  // a section: MapEntries reports a value that is not a mapping
    ApplyMapping(b, value, key);
    return;
  }
  if (k->type == ConfigType::kWebhooks) {
    ParseWebhooks(value, path, *b.target.config);
    return;
  }
  if (k->type == ConfigType::kHeaders) {
    ParseHeaders(value, path, *b.target.webhook);
    return;
  }
  std::optional<ConfigValue> v = Read(*k, value, path);
  if (!v) return;
  if (Status s = k->set(b.target, *v); !s.ok()) {
    Fail(value, path, s.message());
    return;
  }
  (*b.origins)[key] = Origin{path, LocOf(value), b.in_group};
}

void ConfigParser::ApplyMapping(Block& b, const YAML::Node& n, const std::string& prefix,
                                std::span<const std::string_view> known_elsewhere, std::string_view elsewhere) {
  std::vector<std::string_view> other;
  if (prefix == "alarms.depth") {  // keys of the expiry alarm only
    other = Children(b.scopes, "alarms.expiry");
    known_elsewhere = other;
    elsewhere = "on the expiry alarm";
  }
  for (auto& [name, value] :
       MapEntries(n, Join(b.base, prefix), Children(b.scopes, prefix), known_elsewhere, elsewhere)) {
    ApplyEntry(b, Join(prefix, name), value);
  }
}

void ConfigParser::ParseWebhooks(const YAML::Node& n, const std::string& path, MonitorConfig& config) {
  size_t i = 0;
  for (const YAML::Node& item : SeqItems(n, path)) {
    WebhookConfig hook;
    Origins origins;
    Block b{{ConfigScope::kWebhook}, fmt::format("{}[{}]", path, i++), ConfigTarget{.webhook = &hook}, &origins};
    ApplyMapping(b, item, "");
    if (!origins.contains("url") && item.IsMap()) Fail(item, b.base, "url is required");
    config.webhooks.push_back(std::move(hook));
  }
}

void ConfigParser::ParseHeaders(const YAML::Node& n, const std::string& path, WebhookConfig& hook) {
  if (n.IsNull()) return;
  if (!n.IsMap()) {
    Fail(n, path, "expected a mapping of header names to values");
    return;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
    Charge(key, kNodeCost + (key.IsScalar() ? key.Scalar().size() : 0));
    const std::string& name = key.IsScalar() ? key.Scalar() : std::string();
    bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
    });
    if (!token) {
      Fail(key, path, "header names must be HTTP tokens (e.g. Authorization, X-Api-Key)");
      continue;
    }
    std::string field = Join(path, name);
    if (hook.headers.contains(name)) {
      Fail(key, field, "header is given twice");
      continue;
    }
    // Values may be secrets: Str(secret) never echoes them.
    if (auto v = Str(it->second, field, /*secret=*/true)) {
      if (v->find_first_of("\r\n") != std::string::npos) {
        Fail(it->second, field, "header value must not contain line breaks");
      } else {
        hook.headers[name] = *v;
      }
    }
  }
}

void ConfigParser::ParseGroup(const YAML::Node& n, size_t index, const GroupSettings& defaults,
                              const Origins& default_origins, std::set<std::string>& names, MonitorConfig& config) {
  const std::string base = fmt::format("groups[{}]", index);
  if (!n.IsMap()) {
    Fail(n, base, "expected a mapping (name:, queues:, ...)");
    return;
  }
  GroupConfig g;
  static_cast<GroupSettings&>(g) = defaults;
  Origins origins = default_origins;
  for (auto& [rel, o] : origins) o.from_group = false;
  Block b{{ConfigScope::kGroup, ConfigScope::kSettings},
          base,
          ConfigTarget{.settings = &g, .group = &g},
          &origins,
          /*in_group=*/true};
  ApplyMapping(b, n, "");
  Problems problems;
  CheckGroup(g, origins, b.present, base, LocOf(n), names, problems);
  CheckGroupRegion(g, origins, env_.GetNonEmpty("DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION") == "1", problems);
  CheckSettings(g, origins, base, LocOf(n), /*in_group=*/true, config, problems);
  Report(problems);
  config.groups.push_back(std::move(g));
}

void ConfigParser::ParseTop(const YAML::Node& root, MonitorConfig& config) {
  if (root.IsNull()) {
    Fail(Loc{}, "", "the file is empty (at least one group is required)");
    return;
  }
  static const std::vector<std::string_view> kTop = [] {
    std::vector<std::string_view> k = Children({ConfigScope::kTop}, "");
    k.insert(k.end(), {"defaults", "groups"});
    return k;
  }();
  static const std::vector<std::string_view> kGroupOnly = Children({ConfigScope::kGroup}, "");
  static const std::vector<std::string_view> kElsewhere = Children({ConfigScope::kGroup, ConfigScope::kSettings}, "");
  auto entries = MapEntries(root, "", kTop, kElsewhere, "under defaults: or in a group");
  if (!root.IsMap()) return;
  YAML::Node defaults_node, groups_node;
  bool has_groups = false;
  Origins top_origins;
  Block top{{ConfigScope::kTop}, "", ConfigTarget{.config = &config}, &top_origins};
  for (auto& [key, v] : entries) {
    if (key == "defaults") {
      defaults_node = v;
    } else if (key == "groups") {
      groups_node = v;
      has_groups = true;
    } else {
      ApplyEntry(top, key, v);
    }
  }
  Problems problems;
  CheckTop(config, top_origins, LocOf(root), problems);
  Report(problems);

  Origins default_origins;
  Block defaults{{ConfigScope::kSettings}, "defaults", ConfigTarget{.settings = &config.defaults}, &default_origins};
  ApplyMapping(defaults, defaults_node, "", kGroupOnly, "in a group");
  Loc defaults_loc = defaults_node ? LocOf(defaults_node) : LocOf(root);
  problems.clear();
  CheckSettings(config.defaults, default_origins, "defaults", defaults_loc, /*in_group=*/false, config, problems);
  Report(problems);

  std::set<std::string> names;
  auto groups = SeqItems(groups_node, "groups");
  if (groups.empty()) {
    Fail(has_groups ? LocOf(groups_node) : LocOf(root), "groups", "at least one group is required");
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    ParseGroup(groups[i], i, config.defaults, default_origins, names, config);
  }
}

Result<MonitorConfig> ConfigParser::Parse(std::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return InvalidArgument(fmt::format("{}: larger than {} bytes", path_, kMaxConfigBytes));
  }
  if (int depth = EstimateYamlDepth(text); depth > kMaxConfigDepth) {
    return InvalidArgument(fmt::format("{}: nested deeper than {} levels", path_, kMaxConfigDepth));
  }
  MonitorConfig config;
  config.path = path_;
  try {
    YAML::Node root = YAML::Load(std::string(text));
    ParseTop(root, config);
  } catch (const TooLarge& e) {
    config = MonitorConfig{};  // what was read so far goes at once
    return InvalidArgument(
        fmt::format("{}:{}:{}: the config expands to more than {} bytes here (YAML aliases and ${{VAR}} references "
                    "count each time they are used): refused",
                    path_, e.loc.line, e.loc.col, kMaxExpandedConfigBytes));
  } catch (const YAML::Exception& e) {
    Loc loc = e.mark.is_null() ? Loc{} : Loc{e.mark.line + 1, e.mark.column + 1};
    Fail(loc, "", fmt::format("YAML syntax error: {}", e.msg));
  } catch (const std::exception& e) {
    Fail(Loc{}, "", fmt::format("cannot read the YAML: {}", e.what()));
  }
  if (errors_.empty()) return config;
  std::stable_sort(errors_.begin(), errors_.end(), [](const Error& a, const Error& b) {
    return std::tie(a.loc.line, a.loc.col) < std::tie(b.loc.line, b.loc.col);
  });
  std::string message;
  std::set<std::string> seen;
  for (const Error& e : errors_) {
    if (!seen.insert(e.text).second) continue;
    if (!message.empty()) message += '\n';
    message += e.text;
  }
  return InvalidArgument(std::move(message));
}

}  // namespace

Result<MonitorConfig> ParseMonitorConfig(std::string_view text, const std::string& path, const Environment& env) {
  return ConfigParser(path, env).Parse(text);
}

}  // namespace dlq
