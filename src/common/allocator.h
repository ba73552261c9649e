// Process-wide malloc settings for programs that drain queues: batch buffers
// are MiB-sized, so they are served from mmap (returned to the OS when
// freed) and glibc's per-thread arenas are capped (they otherwise keep freed
// memory resident). Call once at the start of main, before threads start.
#pragma once

#include <cstddef>

namespace dlq {

void TuneAllocatorForBatches();

// Asks the kernel to back the 2 MiB-aligned part of [data, data + size) with
// transparent huge pages when it is first touched: a batch buffer of 8 MiB
// then costs 4 page faults instead of 2,048 (each one a VM exit on a guest).
// Only regions of 4 MiB and more are advised. A hint: where THP is off or
// unsupported nothing changes and nothing fails. At most 2 MiB more of a
// partly written buffer becomes resident.
void AdviseHugePages(void* data, size_t size);

}  // namespace dlq
