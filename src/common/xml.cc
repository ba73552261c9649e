#include "common/xml.h"

#include "common/strings.h"

namespace dlq {

std::string_view XmlLocalName(const pugi::xml_node& node) {
  std::string_view name = node.name();
  auto colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

pugi::xml_node XmlChild(const pugi::xml_node& parent, std::string_view name) {
  for (pugi::xml_node c = parent.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && XmlLocalName(c) == name) return c;
  }
  return {};
}

std::string XmlChildText(const pugi::xml_node& parent, std::string_view name, bool trim) {
  pugi::xml_node c = XmlChild(parent, name);
  if (!c) return {};
  std::string_view text = c.text().get();
  return std::string(trim ? Trim(text) : text);
}

}  // namespace dlq
