// Text helpers for showing untrusted or binary-safe data to people, and for
// comparing secrets. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlq {

// How TerminalSafe treats line feeds and tabs.
enum class TextLines {
  kOne,    // a name, key, value or message on one line: "\n" and "\t" escaped
  kMulti,  // a message body: line feeds and tabs kept, so its lines stay readable
};

// `s` as text that cannot act on a terminal, for showing outside data
// (bodies, attributes, object keys, queue names, errors that quote them).
// Valid UTF-8 is kept except control characters: C0 (U+0000-U+001F) and DEL
// as "\n", "\r", "\t" or "\xNN" (kMulti keeps line feeds and tabs), C1
// (U+0080-U+009F) as "\u00NN"; a byte that is not part of valid UTF-8
// (overlong forms, surrogates, past U+10FFFF, truncated) as "\xNN". The
// result is valid UTF-8 with no control character but those kept. It is
// for reading, not a reversible encoding: backslashes are kept as they are.
std::string TerminalSafe(std::string_view s, TextLines lines = TextLines::kOne);

// JSON text for a terminal: DEL and C1 characters (which JSON allows raw in
// strings) rewritten as "\u007f" and "\u0080"-"\u009f", so `json` keeps its
// value and nothing in it acts on a terminal. C0 controls are escaped by
// every JSON writer already. In place; `json` must be valid UTF-8.
void EscapeJsonForTerminal(std::string& json);

// One line of at most `width` characters of `s`: control characters (C0,
// DEL, C1) as spaces, bytes that are not UTF-8 as "\xNN" (one character
// each), cut on a character boundary with "…". Valid UTF-8 either way.
std::string OneLinePreview(std::string_view s, size_t width);

// `s` with every control byte (0x00-0x1f, 0x7f) written as \xHH, so text
// from outside (a URL, a key) shows what it holds on one line.
std::string EscapeControlBytes(std::string_view s);

// a == b in time that depends on neither content nor length (compares the
// SHA-256 digests with CRYPTO_memcmp), for secrets such as bearer tokens.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace dlq
