#include "common/allocator.h"

#include <malloc.h>

namespace dlq {

void TuneAllocatorForBatches() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
}

}  // namespace dlq
