// Escaping text for XML and HTML. Pure functions.
#pragma once

#include <string>
#include <string_view>

namespace dlq {

// `text` with &, <, >, " and ' replaced by entities; `apostrophe` is the
// one for ' ("&apos;" in XML, "&#39;" in HTML, where &apos; is HTML5 only).
std::string EscapeMarkup(std::string_view text, std::string_view apostrophe);

}  // namespace dlq
