#include "common/byte_size.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

TEST(ByteSizeTest, PlainIntegersAreBytes) {
  EXPECT_EQ(ParseByteSize("0"), 0u);
  EXPECT_EQ(ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(ParseByteSize("  42  "), 42u);
}

TEST(ByteSizeTest, BinaryAndDecimalUnits) {
  EXPECT_EQ(ParseByteSize("8MiB"), 8u << 20);
  EXPECT_EQ(ParseByteSize("8 MiB"), 8u << 20);
  EXPECT_EQ(ParseByteSize("512KiB"), 512u << 10);
  EXPECT_EQ(ParseByteSize("1GiB"), 1u << 30);
  EXPECT_EQ(ParseByteSize("100B"), 100u);
  EXPECT_EQ(ParseByteSize("5KB"), 5000u);
  EXPECT_EQ(ParseByteSize("8MB"), 8'000'000u);
  EXPECT_EQ(ParseByteSize("2GB"), 2'000'000'000u);
}

TEST(ByteSizeTest, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "MiB", "-1", "+5", "8mib", "8 M", "8MiBs", "1.5MiB", "0x10", "8 MiB extra", "abc"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

TEST(ByteSizeTest, RejectsOverflowInsteadOfWrapping) {
  EXPECT_EQ(ParseByteSize("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseByteSize("18446744073709551616").has_value());
  EXPECT_FALSE(ParseByteSize("17179869184GiB").has_value());  // 2^34 GiB = 2^64 bytes
}

}  // namespace
}  // namespace dlq
