// Digests and encodings used across the wire layer and the archive.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlq {

using Md5Digest = std::array<uint8_t, 16>;
using Sha256Digest = std::array<uint8_t, 32>;

Md5Digest Md5(std::string_view data);
Sha256Digest Sha256(std::string_view data);
Sha256Digest HmacSha256(std::string_view key, std::string_view data);

// Incremental MD5 (for streaming attribute encodings and large bodies).
class Md5Hasher {
 public:
  Md5Hasher();
  ~Md5Hasher();
  Md5Hasher(const Md5Hasher&) = delete;
  Md5Hasher& operator=(const Md5Hasher&) = delete;
  void Update(std::string_view data);
  Md5Digest Finish();

 private:
  void* ctx_;
};

// Lower-case hex.
std::string HexEncode(std::string_view bytes);
template <size_t N>
std::string HexEncode(const std::array<uint8_t, N>& d) {
  return HexEncode(std::string_view(reinterpret_cast<const char*>(d.data()), N));
}
std::string Md5Hex(std::string_view data);
std::string Sha256Hex(std::string_view data);
// SHA-1 in lower-case hex: only for names that other tools derive this way
// (the AWS CLI's SSO token cache file), never for integrity or signing.
std::string Sha1Hex(std::string_view data);

std::string Base64Encode(std::string_view bytes);
template <size_t N>
std::string Base64Encode(const std::array<uint8_t, N>& d) {
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(d.data()), N));
}
// Standard alphabet with padding; returns nullopt on malformed input.
std::optional<std::string> Base64Decode(std::string_view text);

// Cryptographically random bytes rendered as lower-case hex (2*n chars).
std::string RandomHex(size_t n_bytes);

}  // namespace dlq
