#include "app/cli.h"
#include "common/allocator.h"

int main(int argc, char** argv) {
  dlq::TuneAllocatorForBatches();
  return dlq::RunCli(argc, argv);
}
