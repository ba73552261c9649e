#include "common/allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace dlq {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string ThpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  return line;
}

// The "THPeligible" line of the mapping in /proc/self/smaps that holds `p`.
int ThpEligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

struct Mapping {
  explicit Mapping(size_t n) : size(n) {
    data = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  ~Mapping() {
    if (data != MAP_FAILED) munmap(data, size);
  }
  void* data;
  size_t size;
};

TEST(AdviseHugePages, MakesTheAlignedPartOfALargeBufferEligible) {
  const std::string mode = ThpMode();
  if (mode.find("[madvise]") == std::string::npos) GTEST_SKIP() << "THP is not in madvise mode here: " << mode;
  Mapping m(9 * kMiB);
  ASSERT_NE(m.data, MAP_FAILED);
  char* base = static_cast<char*>(m.data);
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + 2 * kMiB - 1) & ~(2 * kMiB - 1));
  ASSERT_EQ(ThpEligible(aligned), 0);
  AdviseHugePages(base + 100, 9 * kMiB - 100);  // an unaligned start, as malloc's mmap chunks have
  EXPECT_EQ(ThpEligible(aligned), 1);
  // The unaligned head is left alone: the kernel splits the mapping there.
  if (aligned - base >= 4096) {
    EXPECT_EQ(ThpEligible(base), 0);
  }
}

TEST(AdviseHugePages, LeavesSmallBuffersAlone) {
  const std::string mode = ThpMode();
  if (mode.find("[madvise]") == std::string::npos) GTEST_SKIP() << "THP is not in madvise mode here: " << mode;
  Mapping m(3 * kMiB);
  ASSERT_NE(m.data, MAP_FAILED);
  AdviseHugePages(m.data, 3 * kMiB);  // under 4 MiB: not worth a huge page's worth of extra RSS
  EXPECT_EQ(ThpEligible(m.data), 0);
  AdviseHugePages(nullptr, 0);  // nothing to do, nothing fails
}

}  // namespace
}  // namespace dlq
