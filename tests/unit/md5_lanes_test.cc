#include "common/md5_lanes.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/crypto.h"

namespace dlq {
namespace {

// RFC 1321, appendix A.5.
const std::vector<std::pair<std::string, std::string>>& Rfc1321() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
  };
  return v;
}

std::vector<std::string> RandomInputs(size_t count, size_t max_len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s(rng() % (max_len + 1), '\0');
    for (char& c : s) c = static_cast<char>(rng());
    out.push_back(std::move(s));
  }
  return out;
}

// Random bytes of every length 0..200: 55/56/63/64 (one or two padding
// blocks) and several blocks.
std::vector<std::string> EveryLengthUpTo200(uint64_t seed) {
  std::vector<std::string> inputs;
  std::mt19937_64 rng(seed);
  for (size_t len = 0; len <= 200; ++len) {
    std::string s(len, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    inputs.push_back(std::move(s));
  }
  return inputs;
}

std::vector<Md5Digest> Digests(void (*fn)(std::span<const std::string_view>, std::span<Md5Digest>),
                               const std::vector<std::string>& inputs) {
  std::vector<std::string_view> views(inputs.begin(), inputs.end());
  std::vector<Md5Digest> out(inputs.size());
  fn(views, out);
  return out;
}

TEST(Md5Many, MatchesTheRfc1321TestSuite) {
  std::vector<std::string> inputs;
  for (const auto& [in, want] : Rfc1321()) inputs.push_back(in);
  auto got = Digests(Md5Many, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(HexEncode(got[i]), Rfc1321()[i].second) << inputs[i];
}

TEST(Md5Many, MatchesOpenSslForEveryLengthAroundTheBlockAndPaddingEdges) {
  // Lengths 0..200 cover 55/56/63/64 (one or two padding blocks) and several
  // blocks; more inputs than lanes, so lanes are refilled as they finish.
  std::vector<std::string> inputs = EveryLengthUpTo200(7);
  auto got = Digests(Md5Many, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(got[i], Md5(inputs[i])) << "length " << inputs[i].size();
}

TEST(Md5Many, HandlesZeroOneAndMixedSizedBatches) {
  EXPECT_TRUE(Digests(Md5Many, {}).empty());
  auto one = Digests(Md5Many, {"abc"});
  EXPECT_EQ(HexEncode(one[0]), "900150983cd24fb0d6963f7d28e17f72");
  // Bodies of ~1 KiB mixed with short attribute encodings, as a receive has.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto inputs = RandomInputs(1 + seed % 23, seed % 2 ? 1100 : 90, seed);
    auto got = Digests(Md5Many, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(got[i], Md5(inputs[i])) << "seed " << seed << " input " << i;
  }
}

TEST(Md5Many, LaneImplementationMatchesOpenSsl) {
  if (!Md5ManyUsesLanes()) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2: Md5Many uses OpenSSL only";
  auto inputs = RandomInputs(100, 3000, 99);
  inputs.push_back(std::string(1 << 20, 'x'));  // one long lane while the others turn over
  auto got = Digests(Md5ManyLanes, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(got[i], Md5(inputs[i])) << "input " << i;
  // A single input through the lanes too (Md5Many itself uses OpenSSL then).
  auto single = Digests(Md5ManyLanes, {"message digest"});
  EXPECT_EQ(HexEncode(single[0]), "f96b697d7cb7938d525a2f31aaf161d0");
}

// The AVX2 lanes, which CPUs without AVX-512 use, checked whatever this CPU
// has: every length around the block and padding edges, more inputs than
// lanes (refills), one long input while the others turn over, and fewer
// inputs than lanes (idle lanes).
TEST(Md5Many, EightLaneImplementationMatchesOpenSsl) {
  if (!Md5ManyHasEightLanes()) GTEST_SKIP() << "this CPU has no AVX2";
  std::vector<std::string> inputs = EveryLengthUpTo200(8);
  for (auto& s : RandomInputs(60, 3000, 98)) inputs.push_back(std::move(s));
  inputs.push_back(std::string(1 << 20, 'y'));
  auto got = Digests(Md5ManyEightLanes, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(got[i], Md5(inputs[i])) << "input " << i;
  std::vector<std::string> rfc;
  for (const auto& [in, want] : Rfc1321()) rfc.push_back(in);
  auto rfc_got = Digests(Md5ManyEightLanes, rfc);
  for (size_t i = 0; i < rfc.size(); ++i) EXPECT_EQ(HexEncode(rfc_got[i]), Rfc1321()[i].second) << rfc[i];
  for (size_t count = 1; count <= 9; ++count) {
    auto few = RandomInputs(count, 1100, count);
    auto few_got = Digests(Md5ManyEightLanes, few);
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(few_got[i], Md5(few[i])) << count << " inputs, input " << i;
  }
}

}  // namespace
}  // namespace dlq
