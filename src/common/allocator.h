// Process-wide malloc settings for programs that drain queues: batch buffers
// are MiB-sized, so they are served from mmap (returned to the OS when
// freed) and glibc's per-thread arenas are capped (they otherwise keep freed
// memory resident). Call once at the start of main, before threads start.
#pragma once

namespace dlq {

void TuneAllocatorForBatches();

}  // namespace dlq
