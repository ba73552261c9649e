#include "deploy/template_value.h"

#include <fmt/format.h>

#include <cmath>

#include "common/json_writer.h"

namespace dlq {
namespace {

bool IsPlainChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/';
}

// Words YAML 1.1 or 1.2 reads as booleans or null.
bool IsReservedWord(std::string_view s) {
  static constexpr std::string_view kWords[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
  std::string lower;
  for (char c : s) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (std::string_view w : kWords) {
    if (lower == w) return true;
  }
  return false;
}

// A plain scalar only when it starts with a letter or '/', uses no character
// YAML gives a meaning to, and is no boolean or null word: such a string can
// be read back only as itself.
bool CanBePlain(std::string_view s) {
  if (s.empty()) return false;
  const char first = s.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '/')) return false;
  for (char c : s) {
    if (!IsPlainChar(c)) return false;
  }
  return !IsReservedWord(s);
}

void AppendQuoted(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02X}", c);
        } else {
          out += ch;  // UTF-8 passes through
        }
    }
  }
  out += '"';
}

void AppendScalar(std::string& out, const TemplateValue& v) {
  switch (v.kind()) {
    case TemplateValue::Kind::kNull: out += "null"; break;
    case TemplateValue::Kind::kBool: out += v.AsBool() ? "true" : "false"; break;
    case TemplateValue::Kind::kInt: out += fmt::format("{}", v.AsInt()); break;
    case TemplateValue::Kind::kDouble:
      out += std::isfinite(v.AsDouble()) ? fmt::format("{}", v.AsDouble()) : "null";
      break;
    case TemplateValue::Kind::kString:
      if (CanBePlain(v.AsString())) {
        out += v.AsString();
      } else {
        AppendQuoted(out, v.AsString());
      }
      break;
    case TemplateValue::Kind::kList: out += "[]"; break;  // only empty ones reach here
    case TemplateValue::Kind::kMap: out += "{}"; break;
  }
}

bool IsInline(const TemplateValue& v) {
  return v.IsScalar() || (v.kind() == TemplateValue::Kind::kList && v.items().empty()) ||
         (v.kind() == TemplateValue::Kind::kMap && v.entries().empty());
}

void AppendKey(std::string& out, std::string_view key) {
  if (CanBePlain(key)) {
    out += key;
  } else {
    AppendQuoted(out, key);
  }
}

void AppendBlock(std::string& out, const TemplateValue& v, size_t indent);

// A non-empty map or list value after "key:" or "- ".
void AppendMapEntries(std::string& out, const TemplateValue& v, size_t indent, bool first_inline) {
  bool first = true;
  for (const auto& [key, value] : v.entries()) {
    if (!(first && first_inline)) out += std::string(indent, ' ');
    first = false;
    AppendKey(out, key);
    out += ':';
    if (IsInline(value)) {
      out += ' ';
      AppendScalar(out, value);
      out += '\n';
    } else {
      out += '\n';
      AppendBlock(out, value, indent + 2);
    }
  }
}

void AppendListItems(std::string& out, const TemplateValue& v, size_t indent) {
  for (const TemplateValue& item : v.items()) {
    out += std::string(indent, ' ') + "- ";
    if (IsInline(item)) {
      AppendScalar(out, item);
      out += '\n';
    } else if (item.kind() == TemplateValue::Kind::kMap) {
      AppendMapEntries(out, item, indent + 2, true);
    } else {
      out += '\n';
      AppendListItems(out, item, indent + 2);
    }
  }
}

void AppendBlock(std::string& out, const TemplateValue& v, size_t indent) {
  if (v.kind() == TemplateValue::Kind::kMap) {
    AppendMapEntries(out, v, indent, false);
  } else {
    AppendListItems(out, v, indent);
  }
}

void WriteJson(JsonWriter& w, const TemplateValue& v) {
  switch (v.kind()) {
    case TemplateValue::Kind::kNull: w.Null(); break;
    case TemplateValue::Kind::kBool: w.Bool(v.AsBool()); break;
    case TemplateValue::Kind::kInt: w.Int(v.AsInt()); break;
    case TemplateValue::Kind::kDouble: w.Double(v.AsDouble()); break;
    case TemplateValue::Kind::kString: w.String(v.AsString()); break;
    case TemplateValue::Kind::kList:
      w.BeginArray();
      for (const TemplateValue& item : v.items()) WriteJson(w, item);
      w.EndArray();
      break;
    case TemplateValue::Kind::kMap:
      w.BeginObject();
      for (const auto& [key, value] : v.entries()) {
        w.Key(key);
        WriteJson(w, value);
      }
      w.EndObject();
      break;
  }
}

}  // namespace

TemplateValue TemplateValue::List(std::initializer_list<TemplateValue> items) {
  TemplateValue v;
  v.kind_ = Kind::kList;
  v.items_.assign(items.begin(), items.end());
  return v;
}

TemplateValue TemplateValue::Map() {
  TemplateValue v;
  v.kind_ = Kind::kMap;
  return v;
}

TemplateValue TemplateValue::Strings(const std::vector<std::string>& items) {
  TemplateValue v = List();
  for (const std::string& s : items) v.Add(s);
  return v;
}

TemplateValue& TemplateValue::Set(std::string_view key, TemplateValue value) {
  if (TemplateValue* existing = Find(key)) {
    *existing = std::move(value);
  } else {
    entries_.emplace_back(std::string(key), std::move(value));
  }
  return *this;
}

TemplateValue& TemplateValue::Add(TemplateValue value) {
  items_.push_back(std::move(value));
  return *this;
}

const TemplateValue* TemplateValue::Find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

TemplateValue* TemplateValue::Find(std::string_view key) {
  for (auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const TemplateValue* TemplateValue::FindPath(std::initializer_list<std::string_view> keys) const {
  const TemplateValue* v = this;
  for (std::string_view k : keys) {
    if (v->kind_ != Kind::kMap) return nullptr;
    v = v->Find(k);
    if (v == nullptr) return nullptr;
  }
  return v;
}

bool TemplateValue::operator==(const TemplateValue& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNull: return true;
    case Kind::kBool: return bool_ == o.bool_;
    case Kind::kInt: return int_ == o.int_;
    case Kind::kDouble: return double_ == o.double_;
    case Kind::kString: return string_ == o.string_;
    case Kind::kList: return items_ == o.items_;
    case Kind::kMap: return entries_ == o.entries_;
  }
  return false;
}

TemplateValue Ref(std::string_view name) {
  return TemplateValue::Map().Set("Ref", name);
}

TemplateValue Sub(std::string_view text) {
  return TemplateValue::Map().Set("Fn::Sub", text);
}

TemplateValue GetAtt(std::string_view resource, std::string_view attribute) {
  return TemplateValue::Map().Set("Fn::GetAtt", TemplateValue::List({resource, attribute}));
}

std::string SubLiteral(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      out += "{!";
      ++i;
    }
  }
  return out;
}

std::string ToYaml(const TemplateValue& value) {
  std::string out;
  if (IsInline(value)) {
    AppendScalar(out, value);
    out += '\n';
  } else {
    AppendBlock(out, value, 0);
  }
  return out;
}

std::string ToJson(const TemplateValue& value) {
  JsonWriter w;
  WriteJson(w, value);
  return w.Take() + "\n";
}

}  // namespace dlq
