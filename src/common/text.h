// Text helpers for showing untrusted or binary-safe data to people, and for
// comparing secrets. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlq {

// One line of at most `width` characters of `s`: control characters as
// spaces, cut on a UTF-8 boundary with "…".
std::string OneLinePreview(std::string_view s, size_t width);

// `s` with every control byte (0x00-0x1f, 0x7f) written as \xHH, so text
// from outside (a URL, a key) shows what it holds on one line.
std::string EscapeControlBytes(std::string_view s);

// a == b in time that depends on neither content nor length (compares the
// SHA-256 digests with CRYPTO_memcmp), for secrets such as bearer tokens.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace dlq
