#include "aws/http_response_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/strings.h"

namespace dlq {
namespace {

constexpr size_t kMaxLine = 4096;                  // a chunk size or trailer line
constexpr uint64_t kMaxChunk = uint64_t{1} << 62;  // beyond any real body; keeps the arithmetic safe

// At most 64 bytes of peer input, with control characters escaped, for messages.
std::string Quote(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  if (s.size() > 64) out += "...";
  return "'" + out + "'";
}

Status Malformed(const std::string& what) {
  return Unavailable("malformed HTTP response: " + what);
}

// A token character (RFC 9110 section 5.6.2), what a header name consists of.
bool IsTokenChar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// The next line of `text` from `pos` without its CRLF (or LF); advances pos.
std::string_view NextLine(std::string_view text, size_t& pos) {
  size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) end = text.size();
  std::string_view line = text.substr(pos, end - pos);
  pos = end == text.size() ? end : end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

Result<ResponseHead> ParseResponseHead(std::string_view head, std::string_view method) {
  ResponseHead out;
  size_t pos = 0;
  const std::string_view status_line = NextLine(head, pos);
  // "HTTP/1.1 200 OK": version, a space, three digits, then a space or the end.
  if (status_line.size() < 12 || !StartsWith(status_line, "HTTP/1.") || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return Malformed("bad status line " + Quote(status_line));
  }
  const char minor = status_line[7];
  if (minor != '0' && minor != '1') return Malformed("unsupported version in " + Quote(status_line));
  auto code = ParseDecimal(status_line.substr(9, 3));
  if (!code || *code < 100) return Malformed("bad status code in " + Quote(status_line));
  out.status = static_cast<int>(*code);
  out.keep_alive = minor == '1';

  std::optional<uint64_t> length;
  bool chunked = false;
  bool has_transfer_encoding = false;
  while (pos < head.size()) {
    const std::string_view line = NextLine(head, pos);
    if (line.empty()) return Malformed("blank line inside the header section");
    if (line.front() == ' ' || line.front() == '\t') return Malformed("obsolete line folding in " + Quote(line));
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return Malformed("bad header line " + Quote(line));
    const std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), IsTokenChar)) return Malformed("bad header name " + Quote(name));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "Content-Length")) {
      auto v = ParseDecimal(value);
      if (!v) return Malformed("bad Content-Length " + Quote(value));
      if (length && *length != *v) return Malformed("conflicting Content-Length headers");
      length = v;
    } else if (IEquals(name, "Transfer-Encoding")) {
      has_transfer_encoding = true;
      // The last coding decides; "gzip, chunked" is a chunked body of gzip bytes.
      const auto codings = Split(value, ',');
      chunked = !codings.empty() && IEquals(Trim(codings.back()), "chunked");
    } else if (IEquals(name, "Connection")) {
      for (auto option : Split(value, ',')) {
        if (IEquals(Trim(option), "close")) out.keep_alive = false;
      }
    }
    out.headers.emplace_back(std::string(name), std::string(value));
  }
  if (has_transfer_encoding && length) return Malformed("both Transfer-Encoding and Content-Length");

  if (method == "HEAD" || out.status < 200 || out.status == 204 || out.status == 304) {
    out.framing = ResponseHead::Framing::kNone;
  } else if (has_transfer_encoding) {
    out.framing = chunked ? ResponseHead::Framing::kChunked : ResponseHead::Framing::kUntilClose;
  } else if (length) {
    out.framing = ResponseHead::Framing::kLength;
    out.content_length = *length;
  } else {
    out.framing = ResponseHead::Framing::kUntilClose;
  }
  if (out.framing == ResponseHead::Framing::kUntilClose) out.keep_alive = false;
  return out;
}

Result<size_t> ChunkedDecoder::Feed(std::string_view in, std::string& out) {
  size_t pos = 0;
  while (pos < in.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - pos));
      out.append(in.substr(pos, n));
      pos += n;
      remaining_ -= n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    // kSize, kDataEnd and kTrailer read lines.
    const size_t nl = in.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? in.size() : nl;
    if (line_.size() + (end - pos) > kMaxLine) return Malformed("chunk size or trailer line longer than 4 KiB");
    line_.append(in.substr(pos, end - pos));
    if (nl == std::string_view::npos) return in.size();
    pos = nl + 1;
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (state_ == State::kDataEnd) {
      if (!line.empty()) return Malformed("chunk data longer than its size");
      state_ = State::kSize;
    } else if (state_ == State::kSize) {
      const std::string_view digits = Trim(line.substr(0, line.find(';')));
      if (digits.empty() || digits.size() > 16) return Malformed("bad chunk size " + Quote(line));
      uint64_t size = 0;
      for (char c : digits) {
        int d;
        if (c >= '0' && c <= '9') {
          d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
          d = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
          d = c - 'A' + 10;
        } else {
          return Malformed("bad chunk size " + Quote(line));
        }
        size = size * 16 + static_cast<uint64_t>(d);
      }
      if (size > kMaxChunk) return Malformed("chunk size too large " + Quote(line));
      remaining_ = size;
      state_ = size == 0 ? State::kTrailer : State::kData;
    } else if (line.empty()) {  // kTrailer: the blank line ends the body
      state_ = State::kDone;
    }
    line_.clear();
  }
  return pos;
}

}  // namespace dlq
