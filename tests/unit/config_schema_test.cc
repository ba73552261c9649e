// The monitor config schema table (ConfigSchema): every key round-trips from
// YAML to the parsed config, its default column matches the structs' defaults,
// and its type and range errors name the file, line and key.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "aws/environment.h"
#include "monitor/config.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A nested YAML flow mapping built from dotted keys.
struct Yaml {
  std::map<std::string, Yaml> kids;
  std::string scalar;  // used when kids is empty

  void Set(std::string_view dotted, std::string value) {
    size_t dot = dotted.find('.');
    if (dot == std::string_view::npos) {
      kids[std::string(dotted)].scalar = std::move(value);
    } else {
      kids[std::string(dotted.substr(0, dot))].Set(dotted.substr(dot + 1), std::move(value));
    }
  }
  // "a: {b: 1}, c: 2" (no outer braces).
  std::string Entries() const {
    std::string out;
    for (const auto& [k, v] : kids) {
      if (!out.empty()) out += ", ";
      out += k + ": " + (v.kids.empty() ? v.scalar : "{" + v.Entries() + "}");
    }
    return out;
  }
  // One block-style line per top key, indented.
  std::string Lines(const std::string& indent) const {
    std::string out;
    for (const auto& [k, v] : kids) {
      out += indent + k + ": " + (v.kids.empty() ? v.scalar : "{" + v.Entries() + "}") + "\n";
    }
    return out;
  }
};

std::string YamlValue(const ConfigKey& k, const std::string& text) {
  if (k.type == ConfigType::kList) return text;  // a flow list
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Keys another key needs to be valid (cross-field checks).
std::map<std::string, std::string> Companions(const ConfigKey& k) {
  if (k.key == "sse_kms_key_id") return {{"sse", "aws:kms"}};
  if (k.key == "policy.window") return {{"policy.select", "older-than"}};
  if (k.key == "policy.select") return {{"policy.window", "1d"}};
  if (k.key == "alarms.expiry.datapoints_to_alarm") return {{"alarms.expiry.evaluation_periods", "7"}};
  if (k.key == "external_id") return {{"role_arn", "arn:aws:iam::123456789012:role/r"}};
  if (k.key == "shard.index") return {{"shard.count", "3"}};
  return {};
}

// A whole config in which `k` (and the keys it needs) is set to `value` (YAML
// text) on a line of its own; `line` gets that line's number.
std::string ConfigWith(const ConfigKey& k, const std::string& value, int* line = nullptr) {
  Yaml own;
  own.Set(k.key, value);
  for (const auto& [key, v] : Companions(k)) own.Set(key, v);
  Yaml settings, group, hook;
  settings.Set("destination", "s3://bucket/pfx");
  group.Set("name", "g1");
  group.Set("queues", "[orders-dlq]");
  hook.Set("url", "'http://127.0.0.1:9/hook'");
  auto lines_so_far = [](const std::string& text) {
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  };
  std::string text;
  if (k.scope == ConfigScope::kTop) text += own.Lines("");
  if (k.scope == ConfigScope::kWebhook) {
    for (const auto& [key, v] : own.kids) hook.kids.erase(key);
  }
  if (k.scope == ConfigScope::kWebhook) {
    for (const auto& [key, v] : own.kids) hook.kids[key] = v;
  }
  text += "notify: {webhooks: [{" + hook.Entries() + "}]}\n";
  text += "defaults:\n";
  if (k.scope == ConfigScope::kSettings) {
    for (const auto& [key, v] : own.kids) settings.kids.erase(key);
    if (line) *line = lines_so_far(text) + 1;
    text += own.Lines("  ");
  }
  text += settings.Lines("  ");
  text += "groups:\n  - {" + group.Entries() + "}\n";
  if (k.scope == ConfigScope::kGroup) {  // in a second group, first line
    Yaml g2 = group;
    g2.Set("name", "g2");
    for (const auto& [key, v] : own.kids) g2.kids.erase(key);
    if (line) *line = lines_so_far(text) + 1;
    std::string own_lines = own.Lines("    ");
    text += "  - " + own_lines.substr(4) + g2.Lines("    ");
  }
  if (line && (k.scope == ConfigScope::kTop || k.scope == ConfigScope::kWebhook)) *line = 1;
  return text;
}

// The parsed value of `k`, through the table's own getter.
std::string Get(const ConfigKey& k, MonitorConfig& c, size_t group = 0) {
  ConfigTarget t;
  t.config = &c;
  switch (k.scope) {
    case ConfigScope::kTop: break;
    case ConfigScope::kSettings: t.settings = &c.defaults; break;
    case ConfigScope::kGroup:
      t.group = &c.groups.at(group);
      t.settings = t.group;
      break;
    case ConfigScope::kWebhook: t.webhook = &c.webhooks.at(0); break;
  }
  return k.get(t);
}

bool Scalar(const ConfigKey& k) {
  return k.type != ConfigType::kWebhooks && k.type != ConfigType::kHeaders;
}

TEST(ConfigSchemaTest, KeysAreUniquePerScopeAndDocumented) {
  std::set<std::pair<int, std::string>> seen;
  for (const ConfigKey& k : ConfigSchema()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(k.scope), k.key}).second) << k.key;
    EXPECT_FALSE(k.doc.empty()) << k.key;
    if (!Scalar(k)) continue;
    EXPECT_TRUE(k.set && k.get) << k.key;
    EXPECT_FALSE(k.example.empty()) << k.key;
    EXPECT_NE(k.example, k.default_text) << k.key << ": the example must differ from the default";
  }
  EXPECT_GE(seen.size(), 50u);
}

TEST(ConfigSchemaTest, EveryKeyRoundTrips) {
  for (const ConfigKey& k : ConfigSchema()) {
    if (!Scalar(k)) continue;
    const std::string text = ConfigWith(k, YamlValue(k, k.example));
    auto r = ParseMonitorConfig(text, "c.yaml", MapEnvironment());
    ASSERT_TRUE(r.ok()) << k.key << ":\n" << text << "\n" << r.status().message();
    EXPECT_EQ(Get(k, *r, k.scope == ConfigScope::kGroup ? 1 : 0), k.example) << k.key << ":\n" << text;
    if (k.scope == ConfigScope::kSettings) {
      // Settings given under defaults: reach every group that does not override them.
      ConfigKey as_group = k;
      as_group.scope = ConfigScope::kGroup;
      EXPECT_EQ(Get(as_group, *r, 0), k.example) << k.key;
    }
  }
}

TEST(ConfigSchemaTest, DefaultColumnIsWhatTheParserLeavesWhenAKeyIsAbsent) {
  auto r = ParseMonitorConfig(
      "notify: {webhooks: [{url: 'http://127.0.0.1:9/hook'}]}\n"
      "defaults: {destination: 's3://b/p'}\n"
      "groups: [{name: g, discover: true}]\n",
      "c.yaml", MapEnvironment());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::set<std::string> set_by_this_config = {"destination", "name", "discover", "url"};
  for (const ConfigKey& k : ConfigSchema()) {
    if (!Scalar(k) || set_by_this_config.contains(k.key)) continue;
    EXPECT_EQ(Get(k, *r), k.default_text) << k.key;
  }
}

TEST(ConfigSchemaTest, TypeErrorsNameFileLineAndKey) {
  for (const ConfigKey& k : ConfigSchema()) {
    if (k.type != ConfigType::kInt && k.type != ConfigType::kBool && k.type != ConfigType::kDuration &&
        k.type != ConfigType::kSize && k.type != ConfigType::kChoice) {
      continue;
    }
    int line = 0;
    const std::string text = ConfigWith(k, "'not valid!'", &line);
    auto r = ParseMonitorConfig(text, "c.yaml", MapEnvironment());
    ASSERT_FALSE(r.ok()) << k.key << ":\n" << text;
    const std::string& errors = r.status().message();
    EXPECT_THAT(errors, HasSubstr(fmt::format("c.yaml:{}:", line))) << k.key << ":\n" << text;
    EXPECT_THAT(errors, HasSubstr(k.key + ": \"not valid!\" is not")) << k.key << ":\n" << text;
  }
}

TEST(ConfigSchemaTest, RangeErrorsComeFromTheTable) {
  for (const ConfigKey& k : ConfigSchema()) {
    std::string too_big;
    if (k.type == ConfigType::kInt) too_big = std::to_string(k.hi + 1);
    if (k.type == ConfigType::kDuration && k.hi != 0) too_big = std::to_string(k.hi + 1);  // plain seconds
    if (k.type == ConfigType::kSize) too_big = std::to_string(k.hi + 1);
    if (too_big.empty()) continue;
    int line = 0;
    const std::string text = ConfigWith(k, too_big, &line);
    auto r = ParseMonitorConfig(text, "c.yaml", MapEnvironment());
    ASSERT_FALSE(r.ok()) << k.key << ":\n" << text;
    EXPECT_THAT(r.status().message(), HasSubstr("is out of range [")) << k.key;
    EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("c.yaml:{}:", line))) << k.key;
    EXPECT_THAT(r.status().message(), HasSubstr(k.key + ": ")) << k.key;
  }
}

TEST(ConfigSchemaTest, UnknownKeysInEverySectionAreNamed) {
  for (const char* text :
       {"bogus_key: 1\n", "concurrency: {bogus_key: 1}\n", "defaults: {batch: {bogus_key: 1}}\n",
        "defaults: {alarms: {expiry: {bogus_key: 1}}}\n", "notify: {webhooks: [{url: 'http://h/', bogus_key: 1}]}\n"}) {
    auto r =
        ParseMonitorConfig(std::string(text) + "groups: [{name: g, discover: true}]\n", "c.yaml", MapEnvironment());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), HasSubstr("c.yaml:1:")) << text;
    EXPECT_THAT(r.status().message(), HasSubstr("unknown field 'bogus_key'")) << text;
  }
}

TEST(ConfigSchemaTest, InvalidWebhookUrlIsNamedButNotEchoed) {
  const std::string text =
      "notify:\n"
      "  webhooks:\n"
      "    - url: 'ftp://user:tok3n@hooks.example.com/services/T0/SECRET?sig=abc'\n"
      "    - url: 'hooks.example.com/services/T1/SECRET2'\n"
      "groups: [{name: g, discover: true, destination: 's3://b/p'}]\n";
  auto r = ParseMonitorConfig(text, "c.yaml", MapEnvironment());
  ASSERT_FALSE(r.ok());
  const std::string& errors = r.status().message();
  EXPECT_THAT(errors, HasSubstr("c.yaml:3:12: notify.webhooks[0].url: \"ftp://hooks.example.com/...\" is not an "
                                "http:// or https:// URL"));
  EXPECT_THAT(errors, HasSubstr("c.yaml:4:12: notify.webhooks[1].url:"));
  for (const char* secret : {"tok3n", "SECRET", "sig=abc", "user:", "services"}) {
    EXPECT_THAT(errors, Not(HasSubstr(secret))) << errors;
  }
}

TEST(ConfigSchemaTest, WebhookUrlSecretFromTheEnvironmentIsNotEchoed) {
  MapEnvironment env{{"HOOK", "https://hooks.example.com:notaport/T0/B0/xoxb-SECRET"}};
  auto r = ParseMonitorConfig(
      "notify: {webhooks: [{url: '${HOOK}'}]}\n"
      "groups: [{name: g, discover: true, destination: 's3://b/p'}]\n",
      "c.yaml", env);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("c.yaml:1:27: notify.webhooks[0].url: \"https://hooks.example.com:notaport/...\""));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("xoxb")));
}

}  // namespace
}  // namespace dlq
