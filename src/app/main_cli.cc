#include <malloc.h>

#include "app/cli.h"

int main(int argc, char** argv) {
  // Batch buffers are MiB-sized and short-lived: serve them from mmap so
  // freeing returns the memory to the OS, and cap glibc's per-thread arenas,
  // which otherwise keep freed batches as resident memory.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
  return dlq::RunCli(argc, argv);
}
