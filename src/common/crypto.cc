#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace dlq {

namespace {

// OpenSSL 3 looks an algorithm up in its provider store (under a global
// lock) on every EVP_sha256()/EVP_md5() digest and every HMAC() call, and
// HMAC() also builds an EVP_MAC context: several times the cost of hashing a
// short string. The algorithms are fetched once and each thread keeps one
// digest context, re-initialised per digest.
const EVP_MD* FetchedMd(const char* name) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  if (md == nullptr) throw std::runtime_error(std::string("OpenSSL: no ") + name + " digest");
  return md;  // kept for the life of the process
}
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = FetchedMd("SHA256");
  return md;
}
const EVP_MD* Md5Md() {
  static const EVP_MD* md = FetchedMd("MD5");
  return md;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

// This thread's context, initialised for `md`.
EVP_MD_CTX* ThreadCtx(const EVP_MD* md) {
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (ctx == nullptr || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1) throw std::bad_alloc();
  return ctx.get();
}

constexpr size_t kSha256BlockBytes = 64;

}  // namespace

Md5Digest Md5(std::string_view data) {
  Md5Digest out;
  EVP_MD_CTX* ctx = ThreadCtx(Md5Md());
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  return out;
}

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest out;
  EVP_MD_CTX* ctx = ThreadCtx(Sha256Md());
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  return out;
}

// RFC 2104: H((K ^ opad) || H((K ^ ipad) || data)), K zero-padded to the
// block size (hashed first when longer).
Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  std::array<uint8_t, kSha256BlockBytes> block{};
  if (key.size() > kSha256BlockBytes) {
    Sha256Digest hashed = Sha256(key);
    std::copy(hashed.begin(), hashed.end(), block.begin());
  } else {
    std::copy(key.begin(), key.end(), block.begin());
  }
  std::array<uint8_t, kSha256BlockBytes> pad;
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = block[i] ^ 0x36;
  Sha256Digest inner;
  EVP_MD_CTX* ctx = ThreadCtx(Sha256Md());
  EVP_DigestUpdate(ctx, pad.data(), pad.size());
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, inner.data(), nullptr);
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = block[i] ^ 0x5c;
  Sha256Digest out;
  ctx = ThreadCtx(Sha256Md());
  EVP_DigestUpdate(ctx, pad.data(), pad.size());
  EVP_DigestUpdate(ctx, inner.data(), inner.size());
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  // The padded keys are signing keys: do not leave them on the stack.
  OPENSSL_cleanse(block.data(), block.size());
  OPENSSL_cleanse(pad.data(), pad.size());
  return out;
}

Md5Hasher::Md5Hasher() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw std::bad_alloc();
  EVP_DigestInit_ex2(static_cast<EVP_MD_CTX*>(ctx_), Md5Md(), nullptr);
}
Md5Hasher::~Md5Hasher() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}
void Md5Hasher::Update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}
Md5Digest Md5Hasher::Finish() {
  Md5Digest out;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out.data(), nullptr);
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<uint8_t>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 0xf];
  }
  return out;
}

std::string Md5Hex(std::string_view data) {
  return HexEncode(Md5(data));
}
std::string Sha256Hex(std::string_view data) {
  return HexEncode(Sha256(data));
}

std::string Sha1Hex(std::string_view data) {
  static const EVP_MD* md = FetchedMd("SHA1");
  std::array<uint8_t, 20> out;
  EVP_MD_CTX* ctx = ThreadCtx(md);
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  return HexEncode(out);
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                 static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  // 0-63 for the alphabet, 64 for '=', 255 for anything else.
  static constexpr std::array<uint8_t, 256> kValue = [] {
    std::array<uint8_t, 256> t{};
    t.fill(255);
    for (int i = 0; i < 26; ++i) {
      t['A' + i] = static_cast<uint8_t>(i);
      t['a' + i] = static_cast<uint8_t>(26 + i);
    }
    for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<uint8_t>(52 + i);
    t['+'] = 62;
    t['/'] = 63;
    t['='] = 64;
    return t;
  }();
  if (text.size() % 4 != 0) return std::nullopt;
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out(text.size() / 4 * 3 - pad, '\0');
  char* o = out.data();
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    uint32_t v[4];
    for (int j = 0; j < 4; ++j) {
      v[j] = kValue[in[i + j]];
      if (v[j] == 255) return std::nullopt;
      // '=' only as the last one or two characters of the text.
      if (v[j] == 64 && (!last || static_cast<size_t>(j) < 4 - pad)) return std::nullopt;
    }
    if (last && pad > 0) {
      for (size_t j = 4 - pad; j < 4; ++j) v[j] = 0;
    }
    const uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    *o++ = static_cast<char>((n >> 16) & 0xff);
    if (!last || pad < 2) *o++ = static_cast<char>((n >> 8) & 0xff);
    if (!last || pad < 1) *o++ = static_cast<char>(n & 0xff);
  }
  return out;
}

std::string RandomHex(size_t n_bytes) {
  std::string buf(n_bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(buf.data()), static_cast<int>(n_bytes)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return HexEncode(buf);
}

}  // namespace dlq
