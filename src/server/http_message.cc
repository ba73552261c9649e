#include "server/http_message.h"

#include <fmt/format.h>
#include <libdeflate.h>

#include <memory>

#include "common/json_writer.h"
#include "common/strings.h"

namespace dlq {
namespace {

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

}  // namespace

HttpServerResponse JsonError(int status, std::string_view message) {
  HttpServerResponse r;
  r.status = status;
  r.content_type = "application/json";
  JsonWriter w;
  w.BeginObject();
  w.Key("error");
  w.String(message);
  w.EndObject();
  r.body = w.Take() + "\n";
  return r;
}

// True when Accept-Encoding offers gzip with a non-zero q.
bool AcceptsGzip(const HttpHeaders& headers) {
  const std::string* accept = FindHeader(headers, "Accept-Encoding");
  if (accept == nullptr) return false;
  for (std::string_view item : Split(*accept, ',')) {
    std::string_view coding = Trim(item.substr(0, item.find(';')));
    if (!IEquals(coding, "gzip") && coding != "*") continue;
    size_t q = item.find("q=");
    if (q != std::string_view::npos && Trim(item.substr(q + 2)).starts_with("0") &&
        Trim(item.substr(q + 2)).find_first_of("123456789") == std::string_view::npos) {
      continue;  // q=0 / q=0.000
    }
    return true;
  }
  return false;
}

namespace {

bool Compressible(std::string_view content_type) {
  return content_type.starts_with("text/") || content_type.starts_with("application/json") ||
         content_type.starts_with("application/javascript") || content_type.starts_with("image/svg+xml") ||
         content_type.starts_with("application/xml");
}

// gzip of `body` (level 6) into `out`; false when it does not pay.
bool Gzip(std::string_view body, std::string& out) {
  thread_local std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> compressor(
      libdeflate_alloc_compressor(6), &libdeflate_free_compressor);
  if (!compressor) return false;
  out.resize(libdeflate_gzip_compress_bound(compressor.get(), body.size()));
  size_t n = libdeflate_gzip_compress(compressor.get(), body.data(), body.size(), out.data(), out.size());
  if (n == 0 || n >= body.size()) return false;
  out.resize(n);
  return true;
}

}  // namespace

// The bytes of a whole answer.
std::string Serialize(const HttpServerResponse& response, bool head_only, bool keep_alive, bool accepts_gzip) {
  std::string gz;
  const bool compressible = Compressible(response.content_type) && response.body.size() >= 1024;
  const bool gzipped = compressible && accepts_gzip && Gzip(response.body, gz);
  const std::string& body = gzipped ? gz : response.body;
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n", response.status,
                                ReasonPhrase(response.status), response.content_type, body.size());
  if (gzipped) out += "Content-Encoding: gzip\r\n";
  if (compressible) out += "Vary: Accept-Encoding\r\n";
  for (const auto& [name, value] : response.headers) {
    // A handler's header never splits the answer.
    if (name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

}  // namespace dlq
