// A CloudFormation template as a value tree (maps keep insertion order) and
// its two renderings: YAML (block style, every string that YAML could read as
// anything else double-quoted) and JSON. Intrinsic functions are written in
// their long form ({"Ref": ...}, {"Fn::Sub": ...}), which CloudFormation
// accepts in both. Values are plain data: copy freely; not thread-safe to
// mutate while another thread reads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlq {

class TemplateValue {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kList, kMap };

  TemplateValue() = default;                                                     // null
  TemplateValue(bool b) : kind_(Kind::kBool), bool_(b) {}                        // NOLINT: implicit by design
  TemplateValue(int n) : kind_(Kind::kInt), int_(n) {}                           // NOLINT
  TemplateValue(int64_t n) : kind_(Kind::kInt), int_(n) {}                       // NOLINT
  TemplateValue(double d) : kind_(Kind::kDouble), double_(d) {}                  // NOLINT
  TemplateValue(const char* s) : kind_(Kind::kString), string_(s) {}             // NOLINT
  TemplateValue(std::string s) : kind_(Kind::kString), string_(std::move(s)) {}  // NOLINT
  TemplateValue(std::string_view s) : kind_(Kind::kString), string_(s) {}        // NOLINT

  static TemplateValue List(std::initializer_list<TemplateValue> items = {});
  static TemplateValue Map();
  // A list of strings.
  static TemplateValue Strings(const std::vector<std::string>& items);

  Kind kind() const { return kind_; }
  bool IsScalar() const { return kind_ != Kind::kList && kind_ != Kind::kMap; }
  bool AsBool() const { return bool_; }
  int64_t AsInt() const { return int_; }
  double AsDouble() const { return double_; }
  const std::string& AsString() const { return string_; }
  const std::vector<TemplateValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, TemplateValue>>& entries() const { return entries_; }

  // Map: sets `key` (replacing its value, or appending it). Returns *this so
  // calls chain. Precondition: a map.
  TemplateValue& Set(std::string_view key, TemplateValue value);
  // List: appends. Precondition: a list.
  TemplateValue& Add(TemplateValue value);
  // Map: the value of `key`, or nullptr.
  const TemplateValue* Find(std::string_view key) const;
  TemplateValue* Find(std::string_view key);
  // Map: the value at a path of keys, or nullptr when any is missing.
  const TemplateValue* FindPath(std::initializer_list<std::string_view> keys) const;

  bool operator==(const TemplateValue& other) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<TemplateValue> items_;
  std::vector<std::pair<std::string, TemplateValue>> entries_;
};

// {"Ref": name}, {"Fn::Sub": text}, {"Fn::GetAtt": [resource, attribute]}.
TemplateValue Ref(std::string_view name);
TemplateValue Sub(std::string_view text);
TemplateValue GetAtt(std::string_view resource, std::string_view attribute);
// `text` with every "${" written as "${!", so Fn::Sub leaves it literal.
std::string SubLiteral(std::string_view text);

// YAML 1.2 text (also valid YAML 1.1), ending in a newline. Doubles that are
// not finite are written as null (CloudFormation has no such numbers).
std::string ToYaml(const TemplateValue& value);
// Compact JSON (the project's JsonWriter), ending in a newline.
std::string ToJson(const TemplateValue& value);

}  // namespace dlq
