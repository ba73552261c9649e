#include "common/allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

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

TEST(HugeBufferCapacity, SmallBuffersGetWhatTheyAskFor) {
  EXPECT_EQ(HugeBufferCapacity(0), 0u);
  EXPECT_EQ(HugeBufferCapacity(3 * kMiB), 3 * kMiB);
}

TEST(HugeBufferCapacity, LargeBuffersFillWholeHugePagesWithMallocsOverhead) {
  for (size_t room : {4 * kMiB, 8 * kMiB + 256 * 1024, 16 * kMiB + 1, 16 * kMiB + 256 * 1024}) {
    const size_t capacity = HugeBufferCapacity(room);
    EXPECT_GE(capacity, room);
    EXPECT_LT(capacity, room + 2 * kMiB);
    // std::string's NUL + glibc's 16 bytes of chunk header + the 16-byte rounding.
    EXPECT_EQ((capacity + 33) % (2 * kMiB), 0u) << room;
  }
}

// GCC names the sanitizers with macros, clang with __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DLQ_TEST_SANITIZER_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DLQ_TEST_SANITIZER_MALLOC 1
#endif
#ifdef DLQ_TEST_SANITIZER_MALLOC
constexpr bool kSanitizerMalloc = true;
#else
constexpr bool kSanitizerMalloc = false;
#endif

TEST(ReserveHugeBuffer, AnAlignedMappingIsEligibleFromItsFirstPage) {
  if (kSanitizerMalloc) GTEST_SKIP() << "a sanitizer's malloc lays memory out its own way";
  const std::string mode = ThpMode();
  if (mode.find("[madvise]") == std::string::npos) GTEST_SKIP() << "THP is not in madvise mode here: " << mode;
  TuneAllocatorForBatches();
  std::string buffer;
  ReserveHugeBuffer(buffer, 8 * kMiB);
  ASSERT_GE(buffer.capacity(), 8 * kMiB);
  const uintptr_t page = reinterpret_cast<uintptr_t>(buffer.data()) / 4096 * 4096;
  if (page % (2 * kMiB) != 0) GTEST_SKIP() << "this kernel did not put the mapping on a 2 MiB boundary";
  // Before: the first 2 MiB (from malloc's header to the next boundary) was left to 4 KiB pages.
  EXPECT_EQ(ThpEligible(buffer.data()), 1);
  EXPECT_EQ(ThpEligible(buffer.data() + buffer.capacity() - 1), 1);

  // And it is huge pages from the start: writing all of it faults a handful of times, not 2,048.
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  buffer.append(8 * kMiB, 'x');
  rusage after{};
  getrusage(RUSAGE_THREAD, &after);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 64);

  const size_t kept = buffer.capacity();
  ReserveHugeBuffer(buffer, 4 * kMiB);  // already has the room: nothing changes
  EXPECT_EQ(buffer.capacity(), kept);
}

}  // namespace
}  // namespace dlq
