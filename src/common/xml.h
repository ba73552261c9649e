// Namespace-agnostic helpers over pugixml for AWS XML responses (S3 REST,
// query protocols). Pure functions.
#pragma once

#include <pugixml.hpp>
#include <string>
#include <string_view>

namespace dlq {

// Element name without a namespace prefix ("s3:Key" -> "Key").
std::string_view XmlLocalName(const pugi::xml_node& node);
// The first child element with this local name, or an empty node.
pugi::xml_node XmlChild(const pugi::xml_node& parent, std::string_view name);
// That child's text; "" when missing. S3 keys keep their whitespace, so
// trimming is opt-in.
std::string XmlChildText(const pugi::xml_node& parent, std::string_view name, bool trim = false);

}  // namespace dlq
