// Process-wide malloc settings for programs that drain queues: batch buffers
// are MiB-sized, so they are served from mmap (returned to the OS when
// freed) and glibc's per-thread arenas are capped (they otherwise keep freed
// memory resident). Call once at the start of main, before threads start.
// They are glibc's: where tcmalloc is linked in (dlq-archive by default,
// DLQ_TCMALLOC) mallopt does nothing, and the huge-page sizing below only
// advises the 2 MiB pages that lie inside a buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dlq {

void TuneAllocatorForBatches();

// Asks the kernel to back the 2 MiB-aligned part of [data, data + size) with
// transparent huge pages when it is first touched: a batch buffer of 8 MiB
// then costs 4 page faults instead of 2,048 (each one a VM exit on a guest).
// Only regions of 4 MiB and more are advised. A hint: where THP is off or
// unsupported nothing changes and nothing fails. At most 2 MiB more of a
// partly written buffer becomes resident.
void AdviseHugePages(void* data, size_t size);

// The capacity to reserve for a buffer of at least `room` bytes so that,
// with glibc and the mmap threshold of TuneAllocatorForBatches, its mapping
// is a whole number of 2 MiB pages (which the kernel aligns): `room` itself
// under 4 MiB.
size_t HugeBufferCapacity(size_t room);

// Reserves at least `room` bytes in `buffer` (nothing when it already has
// them) at HugeBufferCapacity and advises huge pages for its first
// `huge_bytes` (whole 2 MiB pages only: a huge page is resident as soon as
// one byte of it is written, so pass what a full buffer certainly uses). An
// 8 MiB batch buffer is then written with 4 page faults instead of 2,048
// (about 30 ms of CPU on a paravirtualised guest, measured). Where malloc,
// the kernel or THP do otherwise, it is an ordinary reserve.
void ReserveHugeBuffer(std::string& buffer, size_t room, size_t huge_bytes = SIZE_MAX);

}  // namespace dlq
