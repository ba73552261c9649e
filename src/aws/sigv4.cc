#include "aws/sigv4.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "aws/sigv4_config.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

// Headers that proxies or the transport may add or rewrite; signing them would
// make a valid request fail verification. Authorization carries the signature.
constexpr std::array<std::string_view, 10> kUnsignedHeaders = {
    "authorization",     "user-agent", "x-amzn-trace-id",     "expect", "connection",
    "transfer-encoding", "keep-alive", "proxy-authorization", "te",     "upgrade"};

// The presigning parameters PresignUrl owns (replaced when presigning again).
constexpr std::array<std::string_view, 7> kPresignParams = {
    "X-Amz-Algorithm",     "X-Amz-Credential",     "X-Amz-Date",     "X-Amz-Expires",
    "X-Amz-SignedHeaders", "X-Amz-Security-Token", "X-Amz-Signature"};

bool IsWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// The pieces of an absolute URL, as views into it. Never fails: whatever
// cannot be recognised ends up in `path`.
struct UrlParts {
  std::string_view authority;
  std::string_view path;
  std::string_view query;
  std::string_view before_query;  // scheme://authority/path, verbatim
};

UrlParts SplitUrl(std::string_view url) {
  UrlParts parts;
  if (size_t hash = url.find('#'); hash != std::string_view::npos) url = url.substr(0, hash);
  size_t q = url.find('?');
  parts.before_query = url.substr(0, q);
  if (q != std::string_view::npos) parts.query = url.substr(q + 1);
  std::string_view rest = parts.before_query;
  if (size_t scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    rest = rest.substr(scheme_end + 3);
    size_t slash = rest.find('/');
    parts.authority = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  parts.path = rest;
  return parts;
}

std::string HostFromUrl(std::string_view url) {
  if (auto parsed = ParseUrl(url); parsed.ok()) return parsed->Authority();
  std::string_view authority = SplitUrl(url).authority;
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  return std::string(authority);
}

// RFC 3986 remove_dot_segments, plus collapsing empty segments ("//").
std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> segments;
  bool trailing_slash = false;
  for (std::string_view segment : Split(path, '/')) {
    trailing_slash = segment.empty() || segment == "." || segment == "..";
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      continue;
    }
    segments.push_back(segment);
  }
  std::string out;
  out.reserve(path.size());
  for (std::string_view segment : segments) {
    out += '/';
    out += segment;
  }
  if (out.empty() || trailing_slash) out += '/';
  return out;
}

std::string CanonicalUri(std::string_view path, const SigV4Config& config) {
  if (path.empty()) return "/";
  std::string normalized = config.normalize_path ? NormalizePath(path) : std::string(path);
  return config.double_encode_path ? UriEncode(normalized, /*encode_slash=*/false) : normalized;
}

// Sorted "key=value" pairs, each side decoded then encoded per RFC 3986.
// Parameters for which `skip(decoded_key)` is true are left out.
template <typename Skip>
std::string CanonicalQuery(std::string_view query, Skip skip) {
  std::vector<std::pair<std::string, std::string>> params;
  for (std::string_view piece : Split(query, '&')) {
    if (piece.empty()) continue;
    size_t eq = piece.find('=');
    std::string key = UriDecode(piece.substr(0, eq));
    if (skip(key)) continue;
    std::string value = eq == std::string_view::npos ? std::string() : UriDecode(piece.substr(eq + 1));
    params.emplace_back(UriEncode(key), UriEncode(value));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [key, value] : params) {
    if (!out.empty()) out += '&';
    out += key;
    out += '=';
    out += value;
  }
  return out;
}

// Trims the value and folds every inner run of whitespace (including the line
// breaks of a multi-line value) into one space.
void AppendCanonicalValue(std::string& out, std::string_view value) {
  value = Trim(value);
  // Appends whole runs between whitespace: values rarely hold any.
  while (!value.empty()) {
    size_t run = 0;
    while (run < value.size() && !IsWhitespace(value[run])) ++run;
    out.append(value.data(), run);
    value.remove_prefix(run);
    size_t space = 0;
    while (space < value.size() && IsWhitespace(value[space])) ++space;
    value.remove_prefix(space);
    if (space > 0 && !value.empty()) out += ' ';
  }
}

struct CanonicalHeaders {
  std::string canonical;  // "name:value\n" per header
  std::string signed_headers;
};

CanonicalHeaders BuildCanonicalHeaders(const HttpHeaders& request_headers, std::string_view url,
                                       bool sign_session_token) {
  std::vector<std::pair<std::string, const std::string*>> headers;
  headers.reserve(request_headers.size() + 1);
  bool has_host = false;
  for (const auto& [name, value] : request_headers) {
    std::string lower = ToLower(name);
    if (std::find(kUnsignedHeaders.begin(), kUnsignedHeaders.end(), lower) != kUnsignedHeaders.end()) continue;
    if (!sign_session_token && lower == "x-amz-security-token") continue;
    has_host = has_host || lower == "host";
    headers.emplace_back(std::move(lower), &value);
  }
  std::string host;
  if (!has_host) {
    host = HostFromUrl(url);
    headers.emplace_back("host", &host);
  }
  // Stable: values of a repeated header keep their order.
  std::stable_sort(headers.begin(), headers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  CanonicalHeaders out;
  size_t size = 0;
  for (const auto& [name, value] : headers) size += name.size() + value->size() + 2;
  out.canonical.reserve(size);
  for (size_t i = 0; i < headers.size(); ++i) {
    const std::string& name = headers[i].first;
    bool repeat = i > 0 && headers[i - 1].first == name;
    if (repeat) {
      out.canonical.back() = ',';  // replaces the previous line's '\n'
    } else {
      if (!out.signed_headers.empty()) out.signed_headers += ';';
      out.signed_headers += name;
      out.canonical += name;
      out.canonical += ':';
    }
    AppendCanonicalValue(out.canonical, *headers[i].second);
    out.canonical += '\n';
  }
  return out;
}

std::string PayloadHash(const HttpRequest& request, const SigV4Config& config) {
  return config.unsigned_payload ? std::string(kUnsignedPayload) : Sha256Hex(request.Body());
}

std::string CredentialScope(std::string_view day, const SigningOptions& options) {
  std::string scope(day);
  scope += '/';
  scope += options.region;
  scope += '/';
  scope += options.service;
  scope += "/aws4_request";
  return scope;
}

// DeriveSigningKey for one (secret, day, region, service) changes once a day:
// each thread keeps the last few it derived, which saves 4 HMACs per request.
// Lock-free (thread_local); the result is exactly DeriveSigningKey's.
const std::string& CachedSigningKey(std::string_view secret, std::string_view day, std::string_view region,
                                    std::string_view service) {
  struct Entry {
    std::string secret, day, region, service, key;
  };
  thread_local std::array<Entry, 4> cache;
  thread_local size_t next = 0;
  for (const Entry& e : cache) {
    if (!e.key.empty() && e.day == day && e.region == region && e.service == service && e.secret == secret) {
      return e.key;
    }
  }
  Entry& e = cache[next++ % cache.size()];
  e.secret.assign(secret);
  e.day.assign(day);
  e.region.assign(region);
  e.service.assign(service);
  e.key = DeriveSigningKey(secret, day, region, service);
  return e.key;
}

// Stages 2 and 3, given the canonical request.
SigningStages Finish(std::string canonical_request, std::string signed_headers, const Credentials& creds,
                     const SigningOptions& options) {
  SigningStages stages;
  const std::string date = FormatAmzDate(options.time);
  const std::string_view day = std::string_view(date).substr(0, date.find('T'));
  stages.credential_scope = CredentialScope(day, options);
  stages.string_to_sign =
      std::string(kAlgorithm) + '\n' + date + '\n' + stages.credential_scope + '\n' + Sha256Hex(canonical_request);
  const std::string& key = CachedSigningKey(creds.secret_access_key, day, options.region, options.service);
  stages.signature = HexEncode(HmacSha256(key, stages.string_to_sign));
  stages.canonical_request = std::move(canonical_request);
  stages.signed_headers = std::move(signed_headers);
  return stages;
}

SigningStages HeaderStages(const HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                           const SigV4Config& config, std::string_view payload_hash) {
  UrlParts url = SplitUrl(request.url);
  CanonicalHeaders headers = BuildCanonicalHeaders(request.headers, request.url, !config.omit_session_token);
  std::string canonical = request.method;
  canonical += '\n';
  canonical += CanonicalUri(url.path, config);
  canonical += '\n';
  canonical += CanonicalQuery(url.query, [](const std::string&) { return false; });
  canonical += '\n';
  canonical += headers.canonical;
  canonical += '\n';
  canonical += headers.signed_headers;
  canonical += '\n';
  canonical += payload_hash;
  return Finish(std::move(canonical), std::move(headers.signed_headers), creds, options);
}

// Query signing of `request` as if its URL were `url`.
SigningStages QueryStages(const HttpRequest& request, std::string_view url, const Credentials& creds,
                          const SigningOptions& options, const SigV4Config& config) {
  UrlParts parts = SplitUrl(url);
  CanonicalHeaders headers = BuildCanonicalHeaders(request.headers, url, !config.omit_session_token);
  std::string canonical = request.method;
  canonical += '\n';
  canonical += CanonicalUri(parts.path, config);
  canonical += '\n';
  canonical += CanonicalQuery(parts.query, [&](const std::string& key) {
    return key == "X-Amz-Signature" || (config.omit_session_token && key == "X-Amz-Security-Token");
  });
  canonical += '\n';
  canonical += headers.canonical;
  canonical += '\n';
  canonical += headers.signed_headers;
  canonical += '\n';
  canonical += PayloadHash(request, config);
  return Finish(std::move(canonical), std::move(headers.signed_headers), creds, options);
}

bool IsPresignParam(std::string_view key) {
  return std::find(kPresignParams.begin(), kPresignParams.end(), key) != kPresignParams.end();
}

}  // namespace

std::string DeriveSigningKey(std::string_view secret, std::string_view day, std::string_view region,
                             std::string_view service) {
  auto as_view = [](const Sha256Digest& d) {
    return std::string_view(reinterpret_cast<const char*>(d.data()), d.size());
  };
  std::string secret_key = "AWS4";
  secret_key += secret;
  Sha256Digest k_date = HmacSha256(secret_key, day);
  Sha256Digest k_region = HmacSha256(as_view(k_date), region);
  Sha256Digest k_service = HmacSha256(as_view(k_region), service);
  Sha256Digest k_signing = HmacSha256(as_view(k_service), "aws4_request");
  return std::string(as_view(k_signing));
}

SigV4Config SigV4ConfigFor(const SigningOptions& options) {
  SigV4Config config;
  config.normalize_path = !options.s3;
  config.double_encode_path = !options.s3;
  config.content_sha256_header = options.s3;
  config.unsigned_payload = options.s3 && options.unsigned_payload;
  return config;
}

SigningStages ComputeHeaderSignature(const HttpRequest& request, const Credentials& creds,
                                     const SigningOptions& options, const SigV4Config& config) {
  return HeaderStages(request, creds, options, config, PayloadHash(request, config));
}

void SignRequest(HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                 const SigV4Config& config) {
  std::erase_if(request.headers, [&](const auto& header) {
    const std::string& name = header.first;
    return IEquals(name, "authorization") || IEquals(name, "x-amz-date") || IEquals(name, "x-amz-security-token") ||
           (config.content_sha256_header && IEquals(name, "x-amz-content-sha256"));
  });
  if (FindHeader(request.headers, "host") == nullptr) request.headers.emplace_back("Host", HostFromUrl(request.url));
  if (!creds.session_token.empty()) request.headers.emplace_back("X-Amz-Security-Token", creds.session_token);
  request.headers.emplace_back("X-Amz-Date", FormatAmzDate(options.time));
  std::string payload_hash = PayloadHash(request, config);
  if (config.content_sha256_header) request.headers.emplace_back("x-amz-content-sha256", payload_hash);

  SigningStages stages = HeaderStages(request, creds, options, config, payload_hash);
  std::string authorization(kAlgorithm);
  authorization += " Credential=";
  authorization += creds.access_key_id;
  authorization += '/';
  authorization += stages.credential_scope;
  authorization += ", SignedHeaders=";
  authorization += stages.signed_headers;
  authorization += ", Signature=";
  authorization += stages.signature;
  request.headers.emplace_back("Authorization", std::move(authorization));
}

SigningStages ComputeQuerySignature(const HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                                    const SigV4Config& config) {
  return QueryStages(request, request.url, creds, options, config);
}

std::string PresignUrl(const HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                       const SigV4Config& config) {
  UrlParts parts = SplitUrl(request.url);
  std::string url(parts.before_query);
  url += '?';
  for (std::string_view piece : Split(parts.query, '&')) {
    if (piece.empty() || IsPresignParam(UriDecode(piece.substr(0, piece.find('='))))) continue;
    url += piece;
    url += '&';
  }
  url += "X-Amz-Algorithm=";
  url += kAlgorithm;
  url += "&X-Amz-Credential=";
  url += UriEncode(creds.access_key_id + "/" + CredentialScope(FormatAmzDay(options.time), options));
  url += "&X-Amz-Date=";
  url += FormatAmzDate(options.time);
  url += "&X-Amz-SignedHeaders=";
  url += UriEncode(BuildCanonicalHeaders(request.headers, request.url, !config.omit_session_token).signed_headers);
  url += "&X-Amz-Expires=";
  url += std::to_string(options.expires.count());
  if (!creds.session_token.empty()) {
    url += "&X-Amz-Security-Token=";
    url += UriEncode(creds.session_token);
  }
  SigningStages stages = QueryStages(request, url, creds, options, config);
  url += "&X-Amz-Signature=";
  url += stages.signature;
  return url;
}

SigningStages ComputeHeaderSignature(const HttpRequest& request, const Credentials& creds,
                                     const SigningOptions& options) {
  return ComputeHeaderSignature(request, creds, options, SigV4ConfigFor(options));
}

void SignRequest(HttpRequest& request, const Credentials& creds, const SigningOptions& options) {
  SignRequest(request, creds, options, SigV4ConfigFor(options));
}

namespace {
// Presigned S3 URLs always sign UNSIGNED-PAYLOAD: the body is not known when
// the URL is made.
SigV4Config QueryConfigFor(const SigningOptions& options) {
  SigV4Config config = SigV4ConfigFor(options);
  config.content_sha256_header = false;
  if (options.s3) config.unsigned_payload = true;
  return config;
}
}  // namespace

SigningStages ComputeQuerySignature(const HttpRequest& request, const Credentials& creds,
                                    const SigningOptions& options) {
  return ComputeQuerySignature(request, creds, options, QueryConfigFor(options));
}

std::string PresignUrl(const HttpRequest& request, const Credentials& creds, const SigningOptions& options) {
  return PresignUrl(request, creds, options, QueryConfigFor(options));
}

}  // namespace dlq
