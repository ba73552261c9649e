#include "archive/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace dlq {
namespace {

std::string SampleText(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i)
    s += "{\"message_id\":\"" + std::to_string(i * 7919) + "\",\"body\":\"héllo\"}\n";
  s.resize(n);
  return s;
}

TEST(Gzip, RoundTripsAtEveryLevel) {
  const std::string text = SampleText(100000);
  for (int level : {0, 1, 6, 9, 12}) {
    Result<std::string> gz = GzipCompress(text, level);
    ASSERT_TRUE(gz.ok()) << gz.status().ToString();
    ASSERT_GE(gz->size(), 18u);
    EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
    if (level > 0) {
      EXPECT_LT(gz->size(), text.size() / 3) << level;
    }
    Result<std::string> back = GzipDecompress(*gz, text.size());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, text);
  }
}

TEST(Gzip, CompressIntoReusesTheBufferAndLeavesExactlyTheNewObject) {
  const std::string big = SampleText(300000);
  std::string out(1 << 20, 'Z');  // a larger buffer full of stale bytes
  const char* storage = out.data();
  ASSERT_TRUE(GzipCompressInto("hello", 1, out).ok());
  EXPECT_EQ(out.data(), storage) << "the buffer was reallocated";
  EXPECT_LT(out.size(), 64u);
  EXPECT_EQ(GzipDecompress(out, 100).value(), "hello");
  ASSERT_TRUE(GzipCompressInto(big, 1, out).ok());
  EXPECT_EQ(GzipDecompress(out, big.size()).value(), big);
  ASSERT_TRUE(GzipCompressInto("", 6, out).ok());
  EXPECT_EQ(GzipDecompress(out, 100).value(), "");
  EXPECT_EQ(GzipCompressInto("x", 13, out).code(), ErrorCode::kInvalidArgument);
}

TEST(Gzip, RoundTripsEmptyInput) {
  Result<std::string> gz = GzipCompress("", 6);
  ASSERT_TRUE(gz.ok());
  Result<std::string> back = GzipDecompress(*gz, 10);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "");
}

std::string ZlibGunzip(std::string gz, size_t size) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 31), Z_OK);
  std::string out(size + 10, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

// Level 1 is igzip's: standard gzip that zlib and libdeflate read, for text
// and for bytes that do not compress (stored blocks, several of them).
TEST(Gzip, LevelOneIsStandardGzipForTextAndIncompressibleBytes) {
  std::string noise(3 << 20, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : noise) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  for (const std::string& data : {SampleText(1 << 20), noise, std::string("a")}) {
    std::string gz = GzipCompress(data, 1).value();
    EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
    EXPECT_LE(gz.size(), data.size() + data.size() / 64 + 64);
    EXPECT_EQ(ZlibGunzip(gz, data.size()), data);
    EXPECT_EQ(GzipDecompress(gz, data.size()).value(), data);
  }
  EXPECT_LT(GzipCompress(SampleText(1 << 20), 1)->size(), (1u << 20) / 3);
}

TEST(Gzip, OutputIsReadableByZlib) {
  const std::string text = SampleText(5000);
  EXPECT_EQ(ZlibGunzip(GzipCompress(text, 6).value(), text.size()), text);
}

TEST(Gzip, DecompressesConcatenatedMembers) {
  std::string a = SampleText(3000), b = "second member\n", c = SampleText(70000);
  std::string gz = GzipCompress(a, 1).value() + GzipCompress(b, 6).value() + GzipCompress("", 6).value() +
                   GzipCompress(c, 9).value();
  Result<std::string> back = GzipDecompress(gz, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, a + b + c);
}

TEST(Gzip, RejectsOutputOverTheLimit) {
  // A "bomb": 64 MiB of zeros compresses to ~64 KiB.
  std::string zeros(64 << 20, '\0');
  std::string gz = GzipCompress(zeros, 6).value();
  zeros.clear();
  zeros.shrink_to_fit();
  Result<std::string> r = GzipDecompress(gz, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(r.status().message().find("exceeds the limit of 1048576 bytes"), std::string::npos);
  // Exactly at the limit is fine.
  std::string text = SampleText(1000);
  EXPECT_TRUE(GzipDecompress(GzipCompress(text, 6).value(), 1000).ok());
  EXPECT_FALSE(GzipDecompress(GzipCompress(text, 6).value(), 999).ok());
}

TEST(Gzip, CorruptInputIsDataLoss) {
  std::string gz = GzipCompress(SampleText(20000), 6).value();

  EXPECT_EQ(GzipDecompress("", 100).status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(GzipDecompress("plain text, not gzip", 100).status().code(), ErrorCode::kDataLoss);

  std::string truncated = gz.substr(0, gz.size() / 2);
  Result<std::string> t = GzipDecompress(truncated, 1 << 20);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos) << t.status().message();

  std::string flipped = gz;
  flipped[gz.size() - 6] ^= 0x55;  // CRC32 trailer
  EXPECT_EQ(GzipDecompress(flipped, 1 << 20).status().code(), ErrorCode::kDataLoss);

  std::string garbage = gz + "junk";
  Result<std::string> g = GzipDecompress(garbage, 1 << 20);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("member 2"), std::string::npos) << g.status().message();
}

// Reads a whole stream `piece` bytes at a time.
std::string ReadAll(GunzipStream& s, size_t piece) {
  std::string out, buf(piece, '\0');
  while (size_t n = s.Read(buf.data(), buf.size())) out.append(buf.data(), n);
  return out;
}

TEST(GunzipStream, ReadsConcatenatedMembersInPiecesOfAnySize) {
  std::string a = SampleText(3000), b = "second member\n", c = SampleText(300000);
  std::string gz = GzipCompress(a, 1).value() + GzipCompress(b, 6).value() + GzipCompress("", 6).value() +
                   GzipCompress(c, 9).value();
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    GunzipStream s(gz);
    EXPECT_EQ(ReadAll(s, piece), a + b + c) << piece;
    EXPECT_TRUE(s.done());
    EXPECT_TRUE(s.status().ok()) << s.status().ToString();
  }
}

TEST(GunzipStream, ABombIsReadInPiecesNeverWhole) {
  std::string zeros(64 << 20, '\0');
  const std::string gz = GzipCompress(zeros, 6).value();
  zeros = std::string();
  GunzipStream s(gz);
  std::string piece(256 << 10, 'x');
  uint64_t total = 0;
  while (size_t n = s.Read(piece.data(), piece.size())) {
    EXPECT_LE(n, piece.size());
    total += n;
  }
  EXPECT_TRUE(s.status().ok());
  EXPECT_EQ(total, uint64_t{64} << 20);
}

TEST(GunzipStream, DamageIsDataLossAfterTheGoodBytes) {
  const std::string text = SampleText(200000);
  const std::string gz = GzipCompress(text, 6).value();

  GunzipStream empty("");
  EXPECT_EQ(ReadAll(empty, 100), "");
  EXPECT_EQ(empty.status().code(), ErrorCode::kDataLoss);

  GunzipStream plain("plain text, not gzip");
  EXPECT_EQ(ReadAll(plain, 100), "");
  EXPECT_NE(plain.status().message().find("not a gzip header"), std::string::npos) << plain.status().message();

  GunzipStream truncated(std::string_view(gz).substr(0, gz.size() / 2));
  std::string salvaged = ReadAll(truncated, 4096);
  EXPECT_EQ(truncated.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos) << truncated.status().message();
  EXPECT_GT(salvaged.size(), 0u);
  EXPECT_EQ(salvaged, text.substr(0, salvaged.size()));

  std::string flipped = gz;
  flipped[gz.size() - 6] ^= 0x55;  // CRC32 trailer
  GunzipStream crc(flipped);
  ReadAll(crc, 4096);
  EXPECT_EQ(crc.status().code(), ErrorCode::kDataLoss);

  const std::string garbage = gz + "junk";
  GunzipStream trailing(garbage);
  EXPECT_EQ(ReadAll(trailing, 4096), text);
  EXPECT_NE(trailing.status().message().find("member 2"), std::string::npos) << trailing.status().message();
}

TEST(Gzip, RejectsBadLevel) {
  EXPECT_EQ(GzipCompress("x", 13).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(GzipCompress("x", -1).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlq
