#include <cstdio>

int main() {
  std::puts("dlq-archive");
  return 0;
}
