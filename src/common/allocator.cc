#include "common/allocator.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>

namespace dlq {

void TuneAllocatorForBatches() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
}

void AdviseHugePages(void* data, size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (data == nullptr || size < 2 * kHuge) return;
  // Offsets from `data`, not integers cast back to pointers.
  const size_t head = (kHuge - reinterpret_cast<uintptr_t>(data) % kHuge) % kHuge;
  if (head >= size) return;
  const size_t length = (size - head) / kHuge * kHuge;
  if (length == 0) return;
#ifdef MADV_HUGEPAGE
  // The result is ignored on purpose: EINVAL where THP is compiled out.
  (void)madvise(static_cast<char*>(data) + head, length, MADV_HUGEPAGE);
#endif
}

}  // namespace dlq
